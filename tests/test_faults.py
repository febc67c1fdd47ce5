"""Fault injection: output folders that are not the tool's own, reruns, concurrent runs, kill -9,
a full disk, and damaged versions of every file the project reads. Each case either works or
ends with one line naming the file; no user file is lost and no wrong number leaves with exit 0."""

import errno
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.cli import app
from spacy_elmo.training.checkpoint import load_checkpoint

from .helpers import tiny_bilm
from .training.test_pretrain import CONFIGS, TEXT, TINY


def _cli(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def _pretrain_args(corpus: Path, output: Path, **overrides) -> list:
    settings = {**TINY, "paths.train": str(corpus), "paths.dev": str(corpus), "training.max_steps": 3, **overrides}
    args = ["pretrain", str(CONFIGS / "pretrain_cpu.cfg"), "--output", str(output)]
    for key, value in settings.items():
        args += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    return args


def _scratch(folder: Path) -> list:
    """The scratch folders of builds beside their outputs in `folder`."""
    return sorted(folder.glob(".*.spacy-elmo-scratch"))


def _error_line(result) -> str:
    """The one line a failed command printed about its error (and no traceback)."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert not result.exception or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, result.output
    return lines[0]


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "text" / "news.txt"
    path.parent.mkdir()
    path.write_text(TEXT * 3, encoding="utf8")
    return path


# --- folders that are not the tool's own ------------------------------------------------------


def test_prepare_corpus_leaves_a_users_folder_alone(corpus, tmp_path):
    user = tmp_path / "userdir"
    (user / "photos").mkdir(parents=True)
    (user / "thesis.txt").write_text("years of work")
    (user / "photos" / "a.jpg").write_bytes(b"\xff\xd8")
    before = _snapshot(user)
    line = _error_line(_cli("prepare-corpus", corpus, "--output", user))
    assert str(user) in line and "not made by spacy-elmo" in line
    assert _snapshot(user) == before
    assert not _scratch(tmp_path)


def test_prepare_corpus_refuses_to_write_over_its_input(corpus):
    folder = corpus.parent
    before = _snapshot(folder)
    line = _error_line(_cli("prepare-corpus", folder, "--output", folder))
    assert str(folder) in line
    assert _snapshot(folder) == before


def test_pretrain_into_the_folder_holding_the_corpus_leaves_it_alone(corpus, tmp_path, monkeypatch):
    """`pretrain --output . --paths.train corpus`: OUTPUT/corpus would be the user's corpus."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    shutil.copy(corpus, tmp_path / "corpus" / "news.txt")
    before = _snapshot(tmp_path / "corpus")
    line = _error_line(_cli(*_pretrain_args(Path("corpus"), Path("."))))
    assert "not empty" in line
    assert _snapshot(tmp_path / "corpus") == before


def test_prepared_folders_are_marked_and_replaced_only_when_marked(corpus, tmp_path):
    out = tmp_path / "prepared"
    assert _cli("prepare-corpus", corpus, "--output", out).exit_code == 0
    assert (out / ".spacy-elmo.json").is_file()
    with corpus.open("a", encoding="utf8") as f:
        f.write("A new line of text.\n")
    result = _cli("prepare-corpus", corpus, "--output", out)  # ours: prepared again
    assert result.exit_code == 0 and "preparing it again" in result.output
    (out / ".spacy-elmo.json").unlink()
    (out / "notes.txt").write_text("mine")
    assert "not made by spacy-elmo" in _error_line(_cli("prepare-corpus", corpus, "--output", out))
    assert (out / "notes.txt").read_text() == "mine"


def test_preparing_again_keeps_the_files_a_user_put_in_the_folder(corpus, tmp_path):
    """`prepare-corpus small.txt --output prep`, a user's prep/notes.txt, then `prepare-corpus
    other.txt --output prep`: the corpus is replaced, the user's file stays."""
    out = tmp_path / "prep"
    assert _cli("prepare-corpus", corpus, "--output", out, "--n-process", "1").exit_code == 0
    (out / "notes.txt").write_text("my notes")
    (out / "sub").mkdir()
    (out / "sub" / "draft.md").write_text("draft")
    other = tmp_path / "other.txt"
    other.write_text("Another text entirely. It has two sentences.\n", encoding="utf8")
    result = _cli("prepare-corpus", other, "--output", out, "--n-process", "1")
    assert result.exit_code == 0 and "preparing it again" in result.output, result.output
    assert (out / "notes.txt").read_text() == "my notes" and (out / "sub" / "draft.md").read_text() == "draft"
    from spacy_elmo.training.prepared import PreparedCorpus

    prepared = PreparedCorpus(out)
    assert [f["path"] for f in prepared.key["files"]] == [str(other.resolve())] and prepared.meta["sentences"] == 2
    assert not _scratch(tmp_path)


# --- finished runs, concurrent runs --------------------------------------------------------------


@pytest.mark.slow
def test_a_finished_run_is_not_started_over_without_resume_or_overwrite(corpus, tmp_path):
    out = tmp_path / "run"
    assert _cli(*_pretrain_args(corpus, out)).exit_code == 0
    before = _snapshot(out)
    line = _error_line(_cli(*_pretrain_args(corpus, out)))
    assert "--resume" in line and "--overwrite" in line and "step 3" in line
    assert _snapshot(out) == before
    result = _cli(*_pretrain_args(corpus, out, **{"training.max_steps": 2}), "--overwrite")
    assert result.exit_code == 0, result.output
    assert load_checkpoint(out)["step"] == 2
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert max(entry["step"] for entry in log) == 2  # the former run's lines are gone
    assert "give one" in _error_line(_cli(*_pretrain_args(corpus, out), "--overwrite", "--resume"))


_HOLD_LOCK = """
import sys, time
from spacy_elmo.output_folders import FolderLock
lock = FolderLock(sys.argv[1], "spacy-elmo pretrain").acquire()
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_a_second_run_on_a_folder_in_use_is_refused_naming_the_first(corpus, tmp_path):
    out = tmp_path / "run"
    assert _cli(*_pretrain_args(corpus, out)).exit_code == 0
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = _snapshot(out)
        line = _error_line(_cli(*_pretrain_args(corpus, out, **{"training.max_steps": 5}), "--resume"))
        assert f"process {holder.pid}" in line and "in use" in line
        assert _snapshot(out) == before
    finally:
        holder.kill()
        holder.wait()
    # the lock goes with the process that held it, kill -9 included
    assert _cli(*_pretrain_args(corpus, out, **{"training.max_steps": 5}), "--resume").exit_code == 0


@pytest.mark.slow
def test_the_log_has_each_step_once_after_a_resume(corpus, tmp_path):
    """Killed after logging steps past its last checkpoint: the resumed run logs them again, once."""
    out = tmp_path / "run"
    every = {"training.log_every": 1, "training.checkpoint_every": 3, "training.eval_every": 1000}
    assert _cli(*_pretrain_args(corpus, out, **every)).exit_code == 0
    step3 = (out / "checkpoint.pt").read_bytes()
    assert _cli(*_pretrain_args(corpus, out, **every, **{"training.max_steps": 5}), "--resume").exit_code == 0
    (out / "checkpoint.pt").write_bytes(step3)  # as if killed after logging step 5, before its checkpoint
    assert _cli(*_pretrain_args(corpus, out, **every, **{"training.max_steps": 6}), "--resume").exit_code == 0
    steps = [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines() if "loss" in line]
    assert steps == [1, 2, 3, 4, 5, 6]


# --- kill -9 -----------------------------------------------------------------------------------


def _kill_when(process: subprocess.Popen, ready, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and process.poll() is None and not ready():
        time.sleep(0.01)
    assert process.poll() is None, "the command ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.mark.slow
def test_kill_9_during_prepare_then_prepare_again(tmp_path):
    text = tmp_path / "big.txt"
    text.write_text(TEXT * 8000, encoding="utf8")
    out = tmp_path / "prepared"
    cmd = [sys.executable, "-m", "spacy_elmo", "prepare-corpus", str(text), "--output", str(out), "--n-process", "1"]
    victim = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def started() -> bool:
        tokens = [folder / "tokens.bin" for folder in _scratch(tmp_path)]
        return any(t.is_file() and t.stat().st_size > 0 for t in tokens)

    _kill_when(victim, started)
    assert not out.exists()  # a half-prepared folder is never taken for a finished one
    assert _cli("prepare-corpus", text, "--output", out, "--n-process", "1").exit_code == 0
    assert not _scratch(tmp_path)  # the killed build's scratch folder (its own, marked) is gone too
    clean = tmp_path / "clean"
    assert _cli("prepare-corpus", text, "--output", clean, "--n-process", "1").exit_code == 0
    for name in ("tokens.bin", "lengths.npy", "words.bin"):
        assert (out / name).read_bytes() == (clean / name).read_bytes()


@pytest.mark.slow
def test_kill_9_during_embed_leaves_the_former_output_whole(tmp_path):
    model = tmp_path / "model"
    save_original(tiny_bilm(), model / "options.json", model / "weights.hdf5")
    (tmp_path / "in.txt").write_text("The cat sat on the mat .\n" * 20000, encoding="utf8")
    out = tmp_path / "out.hdf5"
    out.write_bytes(b"an earlier result")
    cmd = [sys.executable, "-m", "spacy_elmo", "embed", str(model), str(tmp_path / "in.txt"), str(out), "--overwrite"]
    victim = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _kill_when(victim, lambda: any(p.name.endswith(".tmp") and p.stat().st_size > 0 for p in tmp_path.iterdir()))
    assert out.read_bytes() == b"an earlier result"


# --- a full disk ---------------------------------------------------------------------------------


def _fill(folder: Path) -> Path:
    """Fill the file system of `folder`; RETURNS the filler file."""
    filler = folder / "filler"
    with filler.open("wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as err:
            assert err.errno == errno.ENOSPC
    return filler


@pytest.mark.slow
def test_a_full_disk_keeps_the_last_checkpoint_and_says_so(corpus, tmp_path):
    """On a small tmpfs where the test may mount one (root on Linux), else by a write that fails."""
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True).returncode == 0
    try:
        out = mount / "run"
        assert _cli(*_pretrain_args(corpus, out)).exit_code == 0
        before = (out / "checkpoint.pt").read_bytes()
        more = _pretrain_args(corpus, out, **{"training.max_steps": 6})
        if mounted:
            filler = _fill(mount)
            line = _error_line(_cli(*more, "--resume"))
        else:
            from spacy_elmo.training import checkpoint

            real_save = torch.save

            def full_disk_save(obj, f, *args, **kwargs):
                f.write(b"partial")
                raise OSError(errno.ENOSPC, "No space left on device")

            checkpoint.torch.save = full_disk_save
            try:
                line = _error_line(_cli(*more, "--resume"))
            finally:
                checkpoint.torch.save = real_save
        assert "No space left" in line and "--resume" in line
        assert (out / "checkpoint.pt").read_bytes() == before
        assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
        if mounted:
            filler.unlink()
        assert _cli(*more, "--resume").exit_code == 0
        assert load_checkpoint(out)["step"] == 6
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mount)], check=True)


# --- damaged files ---------------------------------------------------------------------------------


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # 64 bytes of \xff in the middle
        middle = len(data) // 2
        path.write_bytes(data[:middle] + b"\xff" * 64 + data[middle + 64 :])


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished tiny run (checkpoint, model folders, prepared corpus) and a saved pipeline."""
    import spacy

    from spacy_elmo import add_elmo

    root = tmp_path_factory.mktemp("finished")
    corpus = root / "corpus.txt"
    corpus.write_text(TEXT * 3, encoding="utf8")
    result = _cli(*_pretrain_args(corpus, root / "run"))
    assert result.exit_code == 0, result.output
    nlp = spacy.blank("en")
    model = root / "run" / "model-last"
    add_elmo(nlp, model / "options.json", model / "weights.hdf5")
    nlp.to_disk(root / "pipeline")
    return root


def _consumer(folder: Path, name: str, tmp_path: Path) -> list:
    """The command that reads the damaged file, and the path it must name."""
    corpus = folder / "corpus.txt"
    if name in ("options.json", "weights.hdf5", "vocab.txt", "softmax.pt", "softmax.json"):
        return ["perplexity", folder / "run" / "model-last", corpus]
    if name == "checkpoint.pt":
        return _pretrain_args(corpus, folder / "run", **{"training.max_steps": 5}) + ["--resume"]
    if name in ("meta.json", "tokens.bin"):
        return _pretrain_args(folder / "run" / "corpus", tmp_path / "other", **{"paths.dev": str(corpus)})
    (tmp_path / "in.txt").write_text("The cat sat .\n", encoding="utf8")
    return ["embed", folder / "pipeline", tmp_path / "in.txt", tmp_path / "out.hdf5"]


FILES = {
    "options.json": "run/model-last/options.json",
    "weights.hdf5": "run/model-last/weights.hdf5",
    "vocab.txt": "run/model-last/vocab.txt",
    "softmax.pt": "run/model-last/softmax.pt",
    "softmax.json": "run/model-last/softmax.json",
    "checkpoint.pt": "run/checkpoint.pt",
    "meta.json": "run/corpus/meta.json",
    "tokens.bin": "run/corpus/tokens.bin",
    "elmo/cfg": "pipeline/elmo/cfg",
    "elmo/model": "pipeline/elmo/model",
}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["empty", "truncated", "garbled"])
@pytest.mark.parametrize("name", list(FILES))
def test_a_damaged_file_is_named_in_one_line(finished, name, how, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(finished, folder)
    damaged = folder / FILES[name]
    _damage(damaged, how)
    result = _cli(*_consumer(folder, name, tmp_path))
    if result.exit_code == 0:  # read correctly after all: then its figures must be the true ones
        assert name in ("options.json", "weights.hdf5", "vocab.txt", "softmax.pt", "softmax.json", "elmo/cfg", "elmo/model"), result.output
        damaged_result = _result_of(result, tmp_path)
        shutil.rmtree(folder)
        shutil.copytree(finished, folder)
        assert _result_of(_cli(*_consumer(folder, name, tmp_path)), tmp_path) == damaged_result
        return
    line = _error_line(result)
    assert str(damaged) in line, line


def _result_of(result, tmp_path: Path):
    """The figures a command gave: perplexity's lines, or the layers embed wrote."""
    import h5py

    assert result.exit_code == 0, result.output
    out = tmp_path / "out.hdf5"
    if not out.exists():
        return result.output
    with h5py.File(out, "r") as f:
        layers = f["0"][()]
    out.unlink()
    return layers.tobytes()


def test_vocab_edits_are_caught_not_scored(finished, tmp_path):
    """A deleted line, two swapped lines: 259.8 / 264.1 instead of 263.2 before, with exit 0."""
    for edit in ("delete", "swap"):
        folder = tmp_path / edit
        shutil.copytree(finished / "run" / "model-last", folder)
        lines = (folder / "vocab.txt").read_text(encoding="utf8").splitlines()
        if edit == "delete":
            del lines[10]
        else:
            lines[10], lines[11] = lines[11], lines[10]
        (folder / "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
        line = _error_line(_cli("perplexity", folder, finished / "corpus.txt"))
        assert str(folder / "vocab.txt") in line


# --- input that is not there, or not text ---------------------------------------------------------


def test_a_missing_corpus_is_one_line_and_leaves_no_folder(tmp_path):
    line = _error_line(_cli(*_pretrain_args(tmp_path / "nowhere.txt", tmp_path / "run")))
    assert "nowhere.txt" in line
    assert not (tmp_path / "run").exists()
    (tmp_path / "empty").mkdir()
    line = _error_line(_cli(*_pretrain_args(tmp_path / "empty", tmp_path / "run")))
    assert "No .txt" in line and not (tmp_path / "run").exists()


def test_a_model_folder_without_options_is_one_line(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "t.txt").write_text("Some text .\n")
    line = _error_line(_cli("perplexity", tmp_path / "model", tmp_path / "t.txt"))
    assert "options.json" in line


def test_a_lone_surrogate_in_jsonl_names_the_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "fine"}\n{"text": "bad \\ud800 here"}\n', encoding="utf8")
    line = _error_line(_cli("prepare-corpus", path, "--output", tmp_path / "out"))
    assert f"{path}:2" in line and "surrogate" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_resume_without_a_checkpoint_never_replaces_a_finished_run(corpus, tmp_path):
    out = tmp_path / "run"
    assert _cli(*_pretrain_args(corpus, out, **{"training.max_steps": 4})).exit_code == 0
    (out / "checkpoint.pt").unlink()
    before = _snapshot(out)
    line = _error_line(_cli(*_pretrain_args(corpus, out, **{"training.max_steps": 6}), "--resume"))
    assert "no checkpoint.pt" in line and "--overwrite" in line
    assert _snapshot(out) == before
    fresh = tmp_path / "fresh"  # a new folder: --resume starts it (what the projects' workflows rely on)
    assert _cli(*_pretrain_args(corpus, fresh), "--resume").exit_code == 0


@pytest.mark.slow
def test_a_users_old_and_tmp_folders_in_a_run_folder_survive_resume_and_overwrite(corpus, tmp_path):
    out = tmp_path / "run"
    assert _cli(*_pretrain_args(corpus, out, **{"training.max_steps": 3, "training.eval_every": 1})).exit_code == 0
    for name in ("model-best.old", "model-last.tmp"):
        (out / name).mkdir()
        (out / name / "README.md").write_text("the user's own notes")
    more = _pretrain_args(corpus, out, **{"training.max_steps": 6, "training.eval_every": 1})
    assert _cli(*more, "--resume").exit_code == 0
    assert _cli(*_pretrain_args(corpus, out, **{"training.max_steps": 2}), "--overwrite").exit_code == 0
    for name in ("model-best.old", "model-last.tmp"):
        assert (out / name / "README.md").read_text() == "the user's own notes"
    assert not [p for p in out.iterdir() if p.name.endswith(".spacy-elmo-scratch")]


@pytest.mark.slow
def test_a_model_folder_set_aside_by_a_killed_save_comes_back(corpus, tmp_path):
    from spacy_elmo.output_folders import mark
    from spacy_elmo.training.checkpoint import _OLD_MODEL

    out = tmp_path / "run"
    assert _cli(*_pretrain_args(corpus, out, **{"training.max_steps": 3})).exit_code == 0
    weights = (out / "model-best" / "weights.hdf5").read_bytes()
    aside = out / ".model-best.abc123.spacy-elmo-scratch"  # as a kill between the two renames leaves it
    (out / "model-best").rename(aside)
    mark(aside, _OLD_MODEL)
    assert _cli(*_pretrain_args(corpus, out, **{"training.max_steps": 3}), "--resume").exit_code == 0
    assert (out / "model-best" / "weights.hdf5").read_bytes() == weights and not aside.exists()
    assert not (out / "model-best" / ".spacy-elmo.json").exists()


@pytest.mark.parametrize("how", ["nan", "truncated", "html", "shape"])
@pytest.mark.parametrize("command", ["init-config", "fill-config"])
def test_config_commands_refuse_a_damaged_biLM_folder_naming_the_file(tmp_path, how, command):
    import h5py
    import numpy

    from spacy_elmo.bilm import save_original
    from spacy_elmo.configs import CONFIG_DIR

    from .helpers import tiny_bilm

    folder = tmp_path / "bilm"
    folder.mkdir()
    save_original(tiny_bilm(seed=1), folder / "options.json", folder / "weights.hdf5")
    weights = folder / "weights.hdf5"
    if how == "truncated":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif how == "html":
        weights.write_text("<html><body>Not Found</body></html>")
    else:
        with h5py.File(weights, "r+") as f:
            data = f["char_embed"][...]
            del f["char_embed"]
            if how == "nan":
                data[3, 0] = numpy.nan
                f["char_embed"] = data
            else:
                f["char_embed"] = numpy.zeros((data.shape[0] + 1, data.shape[1]), data.dtype)
    output = tmp_path / "out.cfg"
    if command == "init-config":
        result = _cli("init-config", output, "--pipeline", "ner", "--bilm", folder)
    else:
        shutil.copy(CONFIG_DIR / "ner_elmo.cfg", tmp_path / "in.cfg")
        result = _cli("fill-config", tmp_path / "in.cfg", folder, output)
    line = _error_line(result)
    assert str(weights) in line, line
    assert not output.exists()
