"""A hostile audit's lost, security, wrong and ugly cases, each rerun: nothing of a user's removed, replaced or written
through (a shard's sidecar, a report's files, a folder or a link named like a scratch folder, another container's
temporary), an ONNX label that cannot disagree with its graph, and one line for each bad input."""

import json
import os
import socket
import warnings

import h5py
import pytest
from typer.testing import CliRunner

from spacy_elmo.bilm import save_original
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError, OutputFolderError
from spacy_elmo.output_folders import LOCK, MARKER, PREPARED_CORPUS, USAGE_INDEX, _writer_tag, mark, scratch_folder, temporary_path

from .change.test_evidence import report  # noqa: F401 (a change run's JSON, its report's input)
from .helpers import tiny_bilm


@pytest.fixture(scope="module")
def bilm_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bilm")
    save_original(tiny_bilm(seed=5), folder / "options.json", folder / "weights.hdf5")
    return folder


@pytest.fixture
def lines(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("The bank of the river .\nA dark suit .\nIt was cold .\n", encoding="utf8")
    return path


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_a_shards_sidecar_is_never_replaced_without_overwrite(bilm_folder, lines, tmp_path):
    sidecar = tmp_path / "part.spacy.shard.json"
    sidecar.write_text("my notes")
    result = _run("embed", bilm_folder, lines, tmp_path / "part.spacy", "--shard", "0/2", "-q")
    assert result.exit_code != 0 and "part.spacy.shard.json exists" in result.output and "--overwrite" in result.output
    assert sidecar.read_text() == "my notes" and not (tmp_path / "part.spacy").exists()
    result = _run("embed", bilm_folder, lines, tmp_path / "part.spacy", "--shard", "0/2", "-q", "--overwrite")
    assert result.exit_code == 0, result.output
    assert json.loads(sidecar.read_text())["docbin"]  # replaced when asked to, as the output is


@pytest.mark.slow
def test_a_users_file_where_a_report_writes_a_map_stays_and_the_map_goes_beside_it(report, tmp_path):  # noqa: F811
    pytest.importorskip("matplotlib")
    from spacy_elmo.change.report import write_report
    from spacy_elmo.output_folders import name_from_data

    data = json.loads((report[0] / "change.json").read_text())
    word = next(w["word"] for w in data["words"] if w.get("evidence"))
    folder = tmp_path / "report"
    folder.mkdir()
    mark(folder, "change-report")
    (folder / "maps").mkdir()
    mine = folder / "maps" / name_from_data(word, ".png")
    mine.write_bytes(b"my picture")
    (folder / "index.html").write_text("my page")
    said = []
    write_report(folder, data, log=said.append)
    assert mine.read_bytes() == b"my picture" and (folder / "index.html").read_text() == "my page"
    assert any(mine.name in line and "left as it is" in line for line in said), said
    assert (folder / "index.spacy-elmo-2.html").is_file() and (folder / "maps" / f"{mine.stem}.spacy-elmo-2.png").is_file()
    write_report(folder, data, log=said.append)  # again: this run's own files are replaced, the user's stay
    assert mine.read_bytes() == b"my picture" and (folder / "index.html").read_text() == "my page"
    assert not (folder / "index.spacy-elmo-3.html").exists()


def test_a_users_copy_named_like_a_scratch_folder_is_not_removed(tmp_path):
    index = tmp_path / "idx"
    backup = tmp_path / ".idx.mybackup.spacy-elmo-scratch"  # the audit's name: 8 characters, as tempfile's
    backup.mkdir()
    mark(backup, USAGE_INDEX)
    (backup / "vectors.bin").write_bytes(b"my vectors")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        folder, lock = scratch_folder(index, USAGE_INDEX, "test")
    lock.release()
    assert (backup / "vectors.bin").read_bytes() == b"my vectors"
    assert any("left as it is" in str(w.message) for w in said)
    # a killed build's own scratch folder is still removed: its lock names a process that is gone
    (folder / LOCK).write_text("process 999999999 (killed)\n")
    again, lock = scratch_folder(index, USAGE_INDEX, "test")
    lock.release()
    assert not folder.exists() and again.is_dir() and backup.is_dir()


def test_a_link_named_like_a_scratch_folder_is_never_written_through(tmp_path):
    real = tmp_path / "my_index"
    real.mkdir()
    mark(real, USAGE_INDEX)
    before = sorted(p.name for p in real.iterdir())
    link = tmp_path / ".idx.link1234.spacy-elmo-scratch"
    link.symlink_to(real, target_is_directory=True)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        folder, lock = scratch_folder(tmp_path / "idx", USAGE_INDEX, "test")
    lock.release()
    assert sorted(p.name for p in real.iterdir()) == before and not (real / LOCK).exists()
    assert link.is_symlink() and json.loads((real / MARKER).read_text())["kind"] == USAGE_INDEX


def _a_writers_temporary(folder, tag, text):
    """A temporary of OUT named and marked as the writer `tag` wrote it (skips where no extended attribute is kept)."""
    path = folder / f".out.json.{tag}.abcd.tmp"
    path.write_text(text)
    try:
        os.setxattr(path, "user.spacy-elmo.temporary", tag.encode())
    except OSError:
        pytest.skip("this file system keeps no extended attributes: no temporary is ever removed here")
    return path


def test_a_temporary_of_another_pid_namespace_on_this_host_stays_and_is_said(tmp_path):
    host, namespace, _ = _writer_tag(0).split("-")
    target = tmp_path / "out.json"
    other = f"{host}-{int(namespace) + 1}-999999999"
    theirs = _a_writers_temporary(tmp_path, other, "another container's run, still writing")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        temporary_path(target).unlink()
    assert theirs.read_text() == "another container's run, still writing"
    assert any("another PID namespace" in str(w.message) for w in said)
    assert socket.gethostname()  # the same host name: only the namespace tells them apart


def test_a_temporary_of_a_host_whose_name_reduces_alike_stays(tmp_path, monkeypatch):
    """The audit's case by reading: hosts named node-1 and node.1 (one shared folder, each in its first PID namespace,
    which has the same number on every host) read as one machine: node.1's live temporary, its process number not
    running on node-1, was removed there as a killed run's."""
    import spacy_elmo.output_folders as output_folders

    monkeypatch.setattr(output_folders.socket, "gethostname", lambda: "node.1")
    theirs_tag = _writer_tag(999999999)
    target = tmp_path / "out.json"
    theirs = _a_writers_temporary(tmp_path, theirs_tag, "node.1's run, still writing")
    monkeypatch.setattr(output_folders.socket, "gethostname", lambda: "node-1")
    assert _writer_tag(999999999) != theirs_tag and _writer_tag(0).split("-")[1] == theirs_tag.split("-")[1]
    temporary_path(target).unlink()
    assert theirs.read_text() == "node.1's run, still writing"
    # the same host's killed run's temporary is still removed (the rule the digest must not break)
    monkeypatch.setattr(output_folders.socket, "gethostname", lambda: "node.1")
    temporary_path(target).unlink()
    assert not theirs.exists()


@pytest.mark.parametrize("kind", [USAGE_INDEX, PREPARED_CORPUS])
def test_a_second_build_of_one_output_is_refused_while_the_first_runs(tmp_path, kind):
    """The audit's case: two index-usages on one output both said "Indexed" and the later finisher replaced the other's
    index. The second is refused at its start, leaving nothing; once the first ends, a new build starts."""
    first, lock = scratch_folder(tmp_path / "out", kind, "spacy-elmo first")
    with pytest.raises(OutputFolderError, match=r"out is being built by process \d+ \(spacy-elmo first\)"):
        scratch_folder(tmp_path / "out", kind, "spacy-elmo second")
    assert [p.name for p in tmp_path.iterdir()] == [first.name]
    lock.release()
    second, lock = scratch_folder(tmp_path / "out", kind, "spacy-elmo second")
    lock.release()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, second.name])  # the first's process lives


def test_of_two_builds_started_together_never_both_run(tmp_path):
    import threading

    for attempt in range(12):
        barrier, started = threading.Barrier(2), []

        def build(name):
            barrier.wait()
            try:
                started.append(scratch_folder(tmp_path / f"out{attempt}", USAGE_INDEX, name))
            except OutputFolderError:
                pass

        threads = [threading.Thread(target=build, args=(f"build {i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(started) <= 1, f"attempt {attempt}: both builds ran"
        for _, lock in started:
            lock.release()


def _onnx_with(tmp_path, int8, **metadata):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from spacy_elmo.bilm_onnx.export import export_onnx

    path = tmp_path / f"m{int(int8)}.onnx"
    export_onnx(tiny_bilm(seed=2), path, int8=int8)
    model = onnx.load(str(path))
    for entry in model.metadata_props:
        if entry.key in metadata:
            entry.value = metadata[entry.key]
    edited = tmp_path / f"edited{int(int8)}.onnx"
    onnx.save(model, str(edited))
    return edited


@pytest.mark.parametrize("int8, label", [(True, "fp32"), (False, "int8")])
def test_an_onnx_precision_label_that_its_graph_contradicts_is_refused(tmp_path, int8, label):
    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM

    if int8:
        from spacy_elmo.bilm.packed_matmul import int8_available

        if not int8_available():
            pytest.skip("int8 products are not exact on this CPU: no int8 export")
    edited = _onnx_with(tmp_path, int8, **{"spacy_elmo.precision": label})
    with pytest.raises(InputError, match=f"its metadata says '{label}'") as err:
        OnnxBiLM(edited)
    assert "\n" not in str(err.value)


def test_onnx_options_whose_layer_count_the_graph_contradicts_are_refused(tmp_path):
    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM

    options = tiny_bilm(seed=2).options.to_config(all_fields=True)
    edited = _onnx_with(tmp_path, False, **{"spacy_elmo.options": json.dumps({**options, "n_layers": 5})})
    with pytest.raises(InputError, match="options say 5 biLSTM layers"):
        OnnxBiLM(edited)


def test_embed_into_a_path_under_a_file_says_so_in_one_line(bilm_folder, lines, tmp_path):
    afile = tmp_path / "FILE"
    afile.write_text("mine")
    result = _run("embed", bilm_folder, lines, afile / "x.hdf5", "-q")
    assert result.exit_code != 0 and "is a file" in result.output and "Traceback" not in result.output
    assert afile.read_text() == "mine"


@pytest.mark.parametrize("count", ["0", "-3"])
def test_embed_with_no_documents_per_batch_says_so(bilm_folder, lines, tmp_path, count):
    result = _run("embed", bilm_folder, lines, tmp_path / "x.hdf5", "--docs-per-batch", count, "-q")
    assert result.exit_code == 2 and "1 or more documents per batch" in result.output and not (tmp_path / "x.hdf5").exists()


@pytest.mark.parametrize("count", ["0", "-5"])
def test_index_usages_with_no_documents_per_batch_says_so(bilm_folder, lines, tmp_path, count):
    """The audit's case (issue 103): index-usages took 0 and -5 and exited 0; embed refused both."""
    result = _run("index-usages", bilm_folder, lines, tmp_path / "idx", "--docs-per-batch", count, "-q")
    assert result.exit_code == 2 and "1 or more documents per batch" in result.output and not (tmp_path / "idx").exists()


@pytest.mark.parametrize("word", ["a_b-4e012385d7", "x-0123456789"])
def test_a_word_that_looks_like_a_digest_name_gets_a_name_of_its_own(word):
    """The audit's case (issue 103): `a&b` is written as a_b-<digest>, and the word `a_b-4e012385d7` kept its name:
    both shared one clusters file and one page anchor."""
    from spacy_elmo.output_folders import name_from_data

    made = name_from_data("a&b")
    assert name_from_data(made) != made and name_from_data(word) != word
    assert name_from_data("plane_nn") == "plane_nn" and name_from_data("x-012345678") == "x-012345678"  # 9 digits: no digest


@pytest.mark.slow
@pytest.mark.parametrize("record", ["cublas", 7])
def test_a_checkpoint_with_an_unknown_products_record_is_refused_in_one_line(tmp_path, record):
    from tests.training.test_pretrain import TEXT, _config

    from spacy_elmo.training.checkpoint import load_checkpoint, save_checkpoint
    from spacy_elmo.training.pretrain import pretrain

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 3, encoding="utf8")
    settings = {"training.checkpoint_every": 2}
    pretrain(_config(corpus, **settings, **{"training.max_steps": 2}), tmp_path / "run", log=lambda s: None)
    state = load_checkpoint(tmp_path / "run")
    state["products"] = record
    save_checkpoint(tmp_path / "run", state)
    lines = []
    with pytest.raises(InputError, match=f"products as {record!r}") as err:
        pretrain(_config(corpus, **settings, **{"training.max_steps": 4}), tmp_path / "run", resume=True, log=lines.append)
    assert "\n" not in str(err.value) and not any("as the run started" in line for line in lines)


@pytest.mark.slow
@pytest.mark.parametrize("field, value", [("step", -5), ("position", "at the start"), ("position", {"epoch": -1, "pool": 0})])
def test_a_checkpoint_whose_step_or_position_is_no_count_is_refused_in_one_line(tmp_path, field, value):
    """The audit's case (issue 103): a step of -5 resumed "at step -5" and trained 11 steps; a position of a string
    ended in a TypeError traceback."""
    from tests.training.test_pretrain import TEXT, _config

    from spacy_elmo.training.checkpoint import load_checkpoint, save_checkpoint
    from spacy_elmo.training.pretrain import pretrain

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 3, encoding="utf8")
    settings = {"training.checkpoint_every": 2}
    pretrain(_config(corpus, **settings, **{"training.max_steps": 2}), tmp_path / "run", log=lambda s: None)
    state = load_checkpoint(tmp_path / "run")
    state[field] = value
    save_checkpoint(tmp_path / "run", state)
    with pytest.raises(InputError, match="not counts of 0 or more") as err:
        pretrain(_config(corpus, **settings, **{"training.max_steps": 4}), tmp_path / "run", resume=True, log=lambda s: None)
    assert "\n" not in str(err.value)


def test_a_logger_that_is_no_block_is_refused_in_one_line(tmp_path):
    from tests.training.test_pretrain import _config

    from spacy_elmo.training.settings import PretrainSettings

    config = _config(tmp_path / "corpus.txt")
    config["training"]["logger"] = None
    with pytest.raises(InputError, match="logger must be a block naming a logger"):
        PretrainSettings.from_config(config)


@pytest.mark.parametrize("field, value", [("options", "cell 1024"), ("when", 1e300)])
def test_machine_skips_a_kept_entry_it_cannot_read_in_one_line(tmp_path, monkeypatch, field, value):
    from spacy_elmo.bilm import measured as measured_module

    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path))
    key = measured_module.machine_key("inference", options={"cell_dim": 8})
    entry = {"key": key, "seconds": {"fp32": 1.0}, "choice": "fp32", "cost_s": 0.1, "when": 1.0, "quiet": True}
    if field == "options":
        entry["key"] = {**key, "options": value}
    else:
        entry["when"] = value
    digest = measured_module._digest(entry["key"])
    (tmp_path / measured_module.FILE_NAME).write_text(json.dumps({"format": 1, "entries": {digest: entry}}))
    result = _run("machine")
    assert result.exit_code == 0 and "Traceback" not in result.output and "is not used" in result.output, result.output
    assert "measurements in" in result.output and ": 0" in result.output


def test_verify_says_what_it_could_not_check_and_does_not_pass(bilm_folder, lines, tmp_path):
    from spacy_elmo.pipeline.export import INDEX_DIGEST_ATTRIBUTE

    out = tmp_path / "layers.hdf5"
    assert _run("embed", bilm_folder, lines, out, "-q").exit_code == 0
    assert _run("verify", out).exit_code == 0
    with h5py.File(out, "r+") as f:
        mapping = json.loads(f["sentence_to_index"][0])
        first, second = list(mapping)[:2]
        mapping[first], mapping[second] = mapping[second], mapping[first]
        del f["sentence_to_index"]
        f.create_dataset("sentence_to_index", data=[json.dumps(mapping)], dtype=h5py.string_dtype())
        del f.attrs[INDEX_DIGEST_ATTRIBUTE]
    result = _run("verify", out)
    assert result.exit_code == 1 and "could not be checked" in result.output and "sentence_to_index" in result.output


def test_verify_says_a_usage_indexs_meta_json_could_not_be_checked(bilm_folder, tmp_path):
    from spacy_elmo.usages.storage import META_DIGEST

    docs = tmp_path / "docs.txt"
    docs.write_text("The bank of the river .\n\nA bank loan .\n", encoding="utf8")
    assert _run("index-usages", bilm_folder, docs, tmp_path / "idx", "-q", "--words", "bank").exit_code == 0
    meta_path = tmp_path / "idx" / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta[META_DIGEST]
    meta["n_usages"] = 7
    meta_path.write_text(json.dumps(meta))
    result = _run("verify", tmp_path / "idx")
    assert result.exit_code == 1 and "meta.json could not be" in result.output


def test_a_right_to_left_override_in_a_context_is_shown_as_its_code():
    from spacy_elmo.change.report import marked

    html = marked({"text": "abc \u202edef bank ghi", "start": 9, "end": 13})
    assert "\u202e" not in html and "\\u202e" in html and "<mark>bank</mark>" in html


def test_a_build_in_another_pid_namespace_never_removes_a_build_that_is_publishing(tmp_path, monkeypatch):
    """The audit's case (issue 103): `IndexWriter.finish` released the scratch folder's lock before publishing, so a
    build in another PID namespace (where the first one's process id is not alive) took the folder for a killed
    build's and removed it, and the first published an empty index with exit 0. The lock is now held until the files
    are in OUTPUT: the other build leaves the folder alone, refused as a second build of the same output."""
    from spacy_elmo import output_folders
    from spacy_elmo.usages import storage

    real_publish = storage.publish_files

    def another_build_starts_meanwhile(*args, **kwargs):
        monkeypatch.setattr(output_folders, "_holder_alive", lambda lock_file: False)  # as seen from the other namespace
        with pytest.raises(OutputFolderError, match="is being built by process"):
            scratch_folder(tmp_path / "idx", USAGE_INDEX, "spacy-elmo index-usages (the other build)")
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(storage, "publish_files", another_build_starts_meanwhile)
    writer = storage.IndexWriter(tmp_path / "idx", {"model": "m"})
    import numpy

    index = writer.finish([("bank", 2)], numpy.zeros((1, 4), dtype="float32"))
    meta = json.loads((index / "meta.json").read_text(encoding="utf8"))
    assert meta["n_types"] == 1 and (index / "types.json").is_file()
    assert not list(tmp_path.glob(".idx.*"))  # the build's own scratch folder went after publishing


def test_change_with_min_usages_one_is_refused_in_one_line(tmp_path):
    """The audit's case (issue 103): --min-usages 1 with a word of one usage in B ended in a traceback ("the energy
    distance needs at least two usages on each side"); 2 is the least that can be scored."""
    (tmp_path / "a").mkdir()
    result = _run("change", tmp_path / "a", tmp_path / "a", tmp_path / "out.json", "--min-usages", "1")
    assert result.exit_code == 2 and "--min-usages" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out.json").exists()


def test_binary_change_by_senses_without_them_is_refused_before_the_work(tmp_path):
    """The audit's case (issue 103): --binary-change senses without --evidence was refused only after indexing and
    scoring."""
    (tmp_path / "a").mkdir()
    result = _run("change", tmp_path / "a", tmp_path / "a", tmp_path / "out.json", "--binary-change", "senses")
    assert result.exit_code == 2 and "--evidence" in result.output and not (tmp_path / "out.json").exists()


def test_the_packages_own_warnings_are_said_in_one_line_by_the_command(bilm_folder, lines, tmp_path):
    """The audit's case (issue 103): storage.py and export.py warnings came out with Python's file, line number and
    source line where the docs promise one line. Run as the command (a process of its own, as a user runs it)."""
    import subprocess
    import sys

    backup = tmp_path / ".idx.mybackup.spacy-elmo-scratch"  # a user's copy named like a scratch folder: warned of
    backup.mkdir()
    mark(backup, USAGE_INDEX)
    code = "import sys; from spacy_elmo.cli import app; sys.argv[0] = 'spacy-elmo'; app()"
    args = [sys.executable, "-c", code, "index-usages", str(bilm_folder), str(lines), str(tmp_path / "idx"), "-q"]
    run = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    said = [line for line in run.stderr.splitlines() if "left as it is" in line]
    assert len(said) == 1 and said[0].startswith("UserWarning: ") and ".py:" not in run.stderr
    assert "warnings.warn(" not in run.stderr


def test_a_line_of_a_million_characters_is_read_in_pieces_or_refused_in_one_line(bilm_folder, tmp_path):
    """The audit's case (issue 103): a corpus line over a million characters ended `index-usages`, `embed` and
    `change` in spaCy's E088 with a 170-line traceback. Corpora (index-usages, change, prepare-corpus) read it in
    pieces of one document, cut at whitespace; embed, which writes one entry per line, refuses it in one line."""
    from spacy_elmo.text_corpus import LONGEST_TEXT, read_texts

    long_line = " ".join(f"w{i % 97}" for i in range(300_000))  # 1.3M characters
    path = tmp_path / "corpus.txt"
    path.write_text(f"A short line .\n{long_line}\n\nNext document .\n", encoding="utf8")
    texts = list(read_texts(path, None))
    pieces = [t for t, _ in texts[1:-1]]
    assert texts[0] == ("A short line .", True) and texts[-1] == ("Next document .", True)
    assert len(pieces) > 10 and all(len(p) <= LONGEST_TEXT for p in pieces)
    assert " ".join(pieces) == long_line and [new for _, new in texts[1:-1]] == [False] * len(pieces)
    result = _run("embed", bilm_folder, path, tmp_path / "out.hdf5", "-q")
    assert result.exit_code == 1 and "text 2 is 1," in result.output and "split it into lines" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out.hdf5").exists()


def test_change_of_an_empty_corpus_names_no_folder_the_user_never_gave(bilm_folder, lines, tmp_path):
    """The audit's case (issue 103): `change A.txt empty.txt` said "... index-1 was left as it was", a temporary
    folder of its own."""
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf8")
    result = _run("change", lines, empty, tmp_path / "out.json", "--model", bilm_folder, "--words", "bank", "-q")
    assert result.exit_code == 1 and "nothing was indexed" in result.output and str(empty) in result.output
    assert "index-" not in result.output and "spacy-elmo-change-" not in result.output


def test_a_whole_run_over_a_former_part_takes_its_record_and_a_refused_part_writes_none(bilm_folder, lines, tmp_path):
    """The audit's cases (issue 103): `embed --overwrite` of a whole run over a former part left the part's
    `.shard.json` beside it (verify then called the good file damaged); a `--shard` run that found its output taken
    wrote the record anyway (it was published before the DocBin)."""
    out = tmp_path / "layers.spacy"
    sidecar = tmp_path / "layers.spacy.shard.json"
    assert _run("embed", bilm_folder, lines, out, "--shard", "1/2", "-q").exit_code == 0 and sidecar.is_file()
    assert _run("embed", bilm_folder, lines, out, "--overwrite", "-q").exit_code == 0
    assert not sidecar.exists()
    verified = _run("verify", out)  # a whole DocBin: no digest, so not a pass, and never "damaged"
    assert verified.exit_code == 1 and "could not be checked" in verified.output and "damaged" not in verified.output
    # a part whose output appears while it runs: nothing of its own is left beside the other file
    from spacy_elmo.pipeline import export

    real = export._write_docbin

    def someone_writes_the_output_meanwhile(docs, tmp):
        result = real(docs, tmp)
        (tmp_path / "taken.spacy").write_bytes(b"theirs")
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(export, "_write_docbin", someone_writes_the_output_meanwhile)
        result = _run("embed", bilm_folder, lines, tmp_path / "taken.spacy", "--shard", "1/2", "-q")
    assert result.exit_code == 1 and (tmp_path / "taken.spacy").read_bytes() == b"theirs"
    assert not (tmp_path / "taken.spacy.shard.json").exists()


def test_verify_never_passes_an_edited_docbin_that_carries_no_digest(bilm_folder, lines, tmp_path):
    """The audit's case (issue 103): a Doc's layers times 1.5 in a DocBin without a digest (a whole run, or a part whose
    .shard.json was removed) passed `verify` with exit 0. It is PartlyChecked (exit 1), as for HDF5 and indexes."""
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    from spacy_elmo.pipeline.elmo_data import register_extensions

    out = tmp_path / "layers.spacy"
    assert _run("embed", bilm_folder, lines, out, "--shard", "0/2", "-q").exit_code == 0  # the part that holds them all
    (tmp_path / "layers.spacy.shard.json").unlink()
    register_extensions()
    docs = list(DocBin().from_disk(out).get_docs(Vocab()))
    assert docs
    docs[0]._.elmo.layers = docs[0]._.elmo.layers * 1.5
    DocBin(docs=docs, store_user_data=True).to_disk(out)
    result = _run("verify", out)
    assert result.exit_code == 1 and "could not be checked" in result.output and "Traceback" not in result.output
