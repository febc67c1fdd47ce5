"""The projects' smoke workflows, run as a user runs them (`spacy project run smoke`, with spacy_elmo
from the built wheel alone: the projects need no checkout), their scripts, and the two task
projects kept in step."""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import spacy
import srsly
from spacy.tokens import DocBin

from spacy_elmo import load_original

REPO = Path(__file__).resolve().parents[1]
ROWS = [
    "no pretraining",
    "ELMo",
    "ELMo, biLM adapted to the task text",
    "spacy pretrain",
    "static vectors",
    "ELMo + static vectors",
    "ELMo adapted + static vectors",
]


def _copy_project(project: str, tmp_path: Path) -> Path:
    """A copy of the project folder alone, outside any checkout (its steps come with the installed package), so that
    the run leaves the checkout as it was and shows that a project copied alone runs."""
    copy = tmp_path / "elsewhere" / project
    leave_out = shutil.ignore_patterns("assets", "corpus", "training", "metrics", "project.lock")
    shutil.copytree(REPO / "projects" / project, copy, ignore=leave_out)
    return copy


def _wheel_env(installed: Path, cwd: Path) -> dict:
    """The environment of a run in `cwd` that imports spacy_elmo from the installed wheel."""
    env = {**os.environ, "PYTHONPATH": str(installed)}
    where = subprocess.run(
        [sys.executable, "-c", "import spacy_elmo; print(spacy_elmo.__file__)"], capture_output=True, text=True, env=env, cwd=cwd
    )
    assert where.stdout.startswith(str(installed)), where.stdout + where.stderr
    return env


@pytest.mark.slow
@pytest.mark.parametrize(
    "project,task,score",
    [("ner_conll03", "ner", "ents_f"), ("textcat_sst5", "textcat", "cats_micro_f")],
)
def test_smoke_workflow(project, task, score, shared_data, installed, tmp_path):
    project_dir = _copy_project(project, tmp_path)
    _run_workflow(project_dir, "smoke", installed, tmp_path, data_dir=shared_data, raw_text=shared_data / "raw" / "reuters21578.txt.gz")

    metrics = project_dir / "metrics" / "smoke"
    training = project_dir / "training" / "smoke"
    result = srsly.read_json(metrics / "results.json")
    assert [r["name"] for r in result["rows"]] == ROWS
    for row in result["rows"]:
        evaluated = srsly.read_json(metrics / f"{row['folder']}.json")
        assert row["score"] == pytest.approx(100 * evaluated[score])
        assert row["delta"] == pytest.approx(row["score"] - result["rows"][0]["score"])
        assert row["steps"] == 20 and row["curve"][-1][0] == 20
        assert row["train_minutes"] is not None and row["train_cpu_minutes"] is not None
    assert result["pretraining"]["elmo"]["steps"] == 8
    assert result["pretraining"]["spacy_pretrain"]["words"] > 0
    assert (metrics / "results.md").read_text().count("\n| ") == len(ROWS) + 1
    adapted = result["pretraining"]["adapted"]  # the biLM fine-tuned on the slice's training text
    assert adapted["steps"] > 2 and adapted["dev_perplexity_as_given"] > 0 and adapted["dev_perplexity"] > 0
    assert "Adapted biLM" in (metrics / "results.md").read_text()
    assert (metrics / "results.png").stat().st_size > 0

    # The ELMo row ran on the biLM pretrained in the workflow, unchanged (frozen).
    bilm_dir = training / "bilm" / "model-best"
    nlp = spacy.load(training / f"{task}_elmo" / "model-best")
    assert nlp.pipe_names == ["elmo", task]
    assert nlp.config["components"]["elmo"]["model"]["cell_dim"] == 32
    doc = nlp("Shares of Acme rose 5 % in Frankfurt .")
    expected = load_original(bilm_dir / "options.json", bilm_dir / "weights.hdf5").embed([[t.text for t in doc]])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-5)
    # The vectors rows ran with the floret vectors the workflow trained, beside the token features.
    with_vectors = spacy.load(training / f"{task}_elmo_adapted_vectors" / "model-best")
    assert with_vectors.vocab.vectors.mode == "floret" and with_vectors.vocab.vectors.shape[1] == 16
    assert with_vectors.config["components"][task]["model"]["tok2vec"]["embed"]["include_static_vectors"] is True
    # The spacy pretrain row started from the pretrained tok2vec.
    spacy_row = spacy.load(training / f"{task}_spacy_pretrain" / "model-best")
    assert spacy_row.config["paths"]["init_tok2vec"].endswith("spacy_pretrain/model-budget.bin")
    # The few-labels smoke run: 30% and 100% of the slice, two seeds, each row on its fraction's subset.
    n_slice = len(DocBin().from_disk(project_dir / "corpus" / "smoke" / "train.spacy"))
    for name in ("train_f30.spacy", "train_f30_s1.spacy"):
        assert len(DocBin().from_disk(project_dir / "corpus" / "smoke" / "few" / name)) == round(0.3 * n_slice)
    few = srsly.read_json(metrics / "few_labels.json")
    assert [r["name"] for r in few["rows"]] == ["baseline + vectors", "ELMo + vectors"]
    for row in few["rows"]:
        assert [p["fraction"] for p in row["points"]] == [30, 100] and all(len(p["scores"]) == 2 for p in row["points"])
    elmo_run = spacy.load(training / "few" / "f30" / f"{task}_elmo_vectors_s1" / "model-best")
    assert elmo_run.config["paths"]["train"].endswith("train_f30_s1.spacy") and "elmo" in elmo_run.pipe_names


PROBE_ROWS = ["tagger", "hashed", "layer0", "layer1", "layer2", "mix"]


def _run_probe_project(project: str, workflow: str, shared_data: Path, shared_bilm: Path, installed: Path, tmp_path: Path) -> Path:
    """Run a probe project's workflow on the shared data and biLM, from the installed wheel."""
    project_dir = _copy_project(project, tmp_path)
    _run_workflow(project_dir, workflow, installed, tmp_path, data_dir=shared_data, bilm=shared_bilm)
    return project_dir


def _run_workflow(project_dir: Path, workflow: str, installed: Path, tmp_path: Path, **variables: Path) -> None:
    """`spacy project run WORKFLOW` in `project_dir` from the installed wheel; it must succeed. The paths are set in one
    place, as the projects' README says for a project outside this repository: WEASEL_CONFIG_OVERRIDES, which every
    `spacy project run` reads (--vars.NAME VALUE on each command line would do the same, each time)."""
    cmd = [sys.executable, "-m", "spacy", "project", "run", workflow, str(project_dir)]
    env = {**_wheel_env(installed, tmp_path), "WEASEL_CONFIG_OVERRIDES": " ".join(f"--vars.{k} {v}" for k, v in variables.items())}
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


@pytest.mark.slow
def test_pos_probe_smoke_workflow(shared_data, shared_bilm, installed, tmp_path):
    project_dir = _run_probe_project("pos_probe_ewt", "smoke", shared_data, shared_bilm, installed, tmp_path)

    metrics = project_dir / "metrics" / "smoke"
    result = srsly.read_json(metrics / "results.json")
    assert [r["folder"] for r in result["rows"]] == PROBE_ROWS
    for row in result["rows"]:
        assert row["score"] == pytest.approx(100 * srsly.read_json(metrics / f"{row['folder']}.json")["tag_acc"])
        assert row["steps"] == 20
    # The labels are UPOS (17 tags), and each probe row saw exactly its layer of the shared biLM.
    training = project_dir / "training" / "smoke"
    tagger = spacy.load(training / "layer1" / "model-best").get_pipe("tagger")
    assert set(tagger.labels) <= {
        "ADJ",
        "ADP",
        "ADV",
        "AUX",
        "CCONJ",
        "DET",
        "INTJ",
        "NOUN",
        "NUM",
        "PART",
        "PRON",
        "PROPN",
        "PUNCT",
        "SCONJ",
        "SYM",
        "VERB",
        "X",
    }
    for layer in (0, 1, 2):
        nlp = spacy.load(training / f"layer{layer}" / "model-best")
        select = next(n for n in nlp.get_pipe("tagger").model.walk() if n.name == "layer_select")
        assert select.attrs["layer"] == layer
    mix = spacy.load(training / "mix" / "model-best")
    assert any(n.name == "scalar_mix" for n in mix.get_pipe("tagger").model.walk())
    assert spacy.load(training / "hashed" / "model-best").pipe_names == ["tagger"]


@pytest.mark.slow
def test_wsd_probe_workflow(shared_data, shared_bilm, installed, tmp_path):
    project_dir = _run_probe_project("wsd_probe", "all", shared_data, shared_bilm, installed, tmp_path)
    result = srsly.read_json(project_dir / "metrics" / "probe.json")
    # the counts the data README gives for these sets
    assert result["instances"] == 7253 and result["probed"] == 5632
    assert result["upper_bound"] == pytest.approx(0.900, abs=1e-3)
    assert 0.754 <= result["most_frequent_sense"] <= 0.757 and "file order" in result["mfs_tie_rule"]
    labels = [r["representation"] for r in result["rows"]]
    assert labels[:3] == ["layer 0 (token layer)", "layer 1 (biLSTM 1)", "layer 2 (biLSTM 2)"]
    for row in result["rows"]:
        assert 0.5 < row["nearest_usage"] <= result["upper_bound"] and 0.5 < row["nearest_centroid"] < 1
    table = (project_dir / "metrics" / "probe.md").read_text(encoding="utf8")
    assert table.count("\n| ") == len(labels) + 3 and "sign test" in table


@pytest.mark.slow
def test_a_ready_biLM_replaces_the_pretraining(tmp_path):
    """var bilm set: its files are linked as training/bilm/model-best and the pretraining command
    never runs; empty: the command runs."""
    from spacy_elmo import save_original

    from .helpers import tiny_bilm

    save_original(tiny_bilm(), tmp_path / "ready" / "options.json", tmp_path / "ready" / "weights.hdf5")
    marker = tmp_path / "pretrained"
    pretrain = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('x')"]
    (tmp_path / "bilm" / "model-best").mkdir(parents=True)  # empty: nothing of anybody's is in it
    run = subprocess.run([*_step("ready_bilm"), str(tmp_path / "bilm"), str(tmp_path / "ready"), *pretrain], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert not marker.exists()
    best = tmp_path / "bilm" / "model-best"
    assert (best / "weights.hdf5").resolve() == (tmp_path / "ready" / "weights.hdf5").resolve()
    assert load_original(best / "options.json", best / "weights.hdf5").options == tiny_bilm().options
    assert srsly.read_json(tmp_path / "bilm" / "ready.json")["bilm"] == str((tmp_path / "ready").resolve())
    # again with a ready biLM: its own links are replaced
    run = subprocess.run([*_step("ready_bilm"), str(tmp_path / "bilm"), str(tmp_path / "ready"), *pretrain], capture_output=True, text=True)
    assert run.returncode == 0 and (best / "weights.hdf5").resolve() == (tmp_path / "ready" / "weights.hdf5").resolve(), run.stderr
    run = subprocess.run([*_step("ready_bilm"), str(tmp_path / "bilm"), "", *pretrain], capture_output=True, text=True)
    assert run.returncode == 0 and marker.exists() and not (tmp_path / "bilm" / "ready.json").exists()
    run = subprocess.run([*_step("ready_bilm"), str(tmp_path / "bilm"), str(tmp_path), *pretrain], capture_output=True, text=True)
    assert run.returncode != 0 and "options.json + weights.hdf5" in run.stderr
    run = subprocess.run([*_step("ready_bilm"), str(tmp_path / "bilm"), "smal", *pretrain], capture_output=True, text=True)
    assert run.returncode != 0 and "did you mean 'small'" in run.stderr and "var bilm = smal" in run.stderr


def _step(name: str) -> list:
    """The command line of a project step (spacy_elmo/projects/NAME.py), as the projects run it."""
    return [sys.executable, "-m", f"spacy_elmo.projects.{name}"]


def test_a_ready_biLM_never_replaces_a_pretrained_one_or_its_log(tmp_path):
    """A pretraining's model-best (up to an hour of work) and its log.jsonl stay as they were: the script refuses in
    one line, before it writes anything; so does a model-best it did not link (a user's files, a link)."""
    from spacy_elmo import save_original

    from .helpers import tiny_bilm

    save_original(tiny_bilm(), tmp_path / "ready" / "options.json", tmp_path / "ready" / "weights.hdf5")
    run_dir = tmp_path / "bilm"
    best = run_dir / "model-best"
    save_original(tiny_bilm(seed=1), best / "options.json", best / "weights.hdf5")
    (run_dir / "log.jsonl").write_text('{"step": 100}\n')
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}

    def ready():
        args = [*_step("ready_bilm"), str(run_dir), str(tmp_path / "ready"), "false"]
        return subprocess.run(args, capture_output=True, text=True)

    run = ready()
    assert run.returncode != 0 and "pretraining's log" in run.stderr and "Traceback" not in run.stderr
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before
    (run_dir / "log.jsonl").unlink()  # a model-best without its log, or the user's own files: still refused
    run = ready()
    assert run.returncode != 0 and "did not link" in run.stderr
    assert (best / "weights.hdf5").read_bytes() == before[best / "weights.hdf5"] and not (run_dir / "ready.json").exists()
    for path in best.iterdir():
        path.unlink()
    best.rmdir()
    best.symlink_to(tmp_path / "ready")  # a link to somebody's folder is not followed
    run = ready()
    assert run.returncode != 0 and "link or a file" in run.stderr and (tmp_path / "ready" / "weights.hdf5").is_file()


def test_fetch_never_writes_through_a_link_nor_over_a_file_it_did_not_write(tmp_path):
    """With assets/train.conll a link to a user's own file, or a file of other bytes, fetch refuses in one line and the
    user's file keeps its bytes; a free name gets the file, written atomically."""
    import hashlib

    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "train.conll").write_text("EU B-ORG\n")
    digest = hashlib.sha256(b"EU B-ORG\n").hexdigest()
    users = tmp_path / "mine.conll"
    users.write_text("my own annotations\n")
    dest = tmp_path / "assets" / "train.conll"
    dest.parent.mkdir()
    dest.symlink_to(users)

    def fetch():
        args = [*_step("fetch_data"), str(data), "sub/train.conll", str(dest), "--url", "http://127.0.0.1:9/x"]
        return subprocess.run(args + ["--sha256", digest], capture_output=True, text=True)

    run = fetch()
    assert run.returncode != 0 and "is a link" in run.stderr and "Traceback" not in run.stderr
    assert users.read_text() == "my own annotations\n"
    dest.unlink()
    dest.write_text("a file the user put there\n")
    run = fetch()
    assert run.returncode != 0 and "other bytes" in run.stderr and dest.read_text() == "a file the user put there\n"
    dest.unlink()
    run = fetch()
    assert run.returncode == 0 and dest.read_bytes() == b"EU B-ORG\n" and not dest.is_symlink()
    assert fetch().returncode == 0 and "present" in fetch().stdout
    assert [p.name for p in dest.parent.iterdir()] == ["train.conll"]  # no temporary left


def test_fetch_wug_copies_whole_refuses_what_is_not_its_own_and_says_offline_in_one_line(tmp_path):
    """projects/semantic_change's fetch (issue 103): offline, one line naming the var (not a 190-line traceback); a
    link or a file at DEST stays as it is; the dataset arrives whole or not at all; the default var is the shared
    folder's real name."""
    wug = tmp_path / "local"
    (wug / "data" / "bank").mkdir(parents=True)
    (wug / "data" / "bank" / "uses.csv").write_text("lemma\tcontext\n")
    (wug / "stats").mkdir()
    (wug / "stats" / "stats.csv").write_text("lemma\tchange_graded\n")
    dest = tmp_path / "assets" / "wug"

    def fetch(local):
        args = [*_step("fetch_wug"), str(local), str(dest), "--url", "http://127.0.0.1:9/x.zip"]
        return subprocess.run(args, capture_output=True, text=True)

    offline = fetch(tmp_path / "nowhere")
    assert offline.returncode != 0 and "--vars.wug_dir" in offline.stderr and "Traceback" not in offline.stderr
    assert not dest.parent.exists() or not list(dest.parent.iterdir())
    dest.parent.mkdir(exist_ok=True)
    users = tmp_path / "mine"
    users.mkdir()
    dest.symlink_to(users, target_is_directory=True)
    linked = fetch(wug)
    assert linked.returncode != 0 and "left as it is" in linked.stderr and list(users.iterdir()) == []
    dest.unlink()
    copied = fetch(wug)
    assert copied.returncode == 0, copied.stderr
    assert (dest / "data" / "bank" / "uses.csv").read_text() == "lemma\tcontext\n" and (dest / "stats" / "stats.csv").is_file()
    assert [p.name for p in dest.parent.iterdir()] == ["wug"] and "present" in fetch(wug).stdout
    project = srsly.read_yaml(REPO / "projects" / "semantic_change" / "project.yml")
    shared = (REPO / "projects" / "semantic_change" / project["vars"]["wug_dir"]).resolve()
    assert shared.name == "dwug-en" and shared.parent == (REPO.parent / "shared" / "data").resolve()
    assert project["workflows"]["all"][0] == "check-inputs"


def test_the_steps_write_atomically_never_through_a_link_and_fresh_removes_only_its_own(tmp_path):
    """Issue 103's rule for the projects' steps: a link at an output's name is replaced, what it points to keeps its
    bytes; a failed stream leaves the former file; `fresh` refuses a link and a path outside the project folder."""
    from spacy_elmo.projects.written import write_json, write_text, written

    users = tmp_path / "mine.md"
    users.write_text("my notes\n")
    out = tmp_path / "project" / "metrics" / "results.md"
    out.parent.mkdir(parents=True)
    out.symlink_to(users)
    write_text(out, "| a table |\n")
    assert users.read_text() == "my notes\n" and not out.is_symlink() and out.read_text() == "| a table |\n"
    write_json(out.with_suffix(".json"), {"score": 1.0})
    assert json.loads(out.with_suffix(".json").read_text()) == {"score": 1.0}
    with pytest.raises(RuntimeError):
        with written(out) as stream:
            stream.write("half a ta")
            raise RuntimeError("killed")
    assert out.read_text() == "| a table |\n" and sorted(p.name for p in out.parent.iterdir()) == ["results.json", "results.md"]

    project = tmp_path / "project"
    (project / "training" / "smoke").mkdir(parents=True)
    (project / "training" / "smoke" / "model").write_text("a run's")
    elsewhere = tmp_path / "yours"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("yours")
    (project / "training" / "linked").symlink_to(elsewhere, target_is_directory=True)

    def fresh(*paths):
        return subprocess.run([*_step("fresh"), *paths], cwd=project, capture_output=True, text=True)

    refused = fresh("training/linked")
    assert refused.returncode != 0 and "is a link" in refused.stderr and (elsewhere / "keep").read_text() == "yours"
    outside = fresh(str(elsewhere))
    assert outside.returncode != 0 and "not inside the project folder" in outside.stderr and (elsewhere / "keep").exists()
    assert fresh("training/smoke", "metrics/nothing-yet").returncode == 0 and not (project / "training" / "smoke").exists()


def test_seeds_runs_a_command_per_seed_and_names_the_runs(tmp_path):
    out = tmp_path / "out.txt"
    write = f"import sys; open({str(out)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')"
    run = subprocess.run(
        [
            *_step("seeds"),
            "0,1,7",
            sys.executable,
            "-c",
            write,
            "--output",
            "training/ner{run}",
            "--system.seed",
            "{seed}",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert out.read_text().splitlines() == [
        "--output training/ner --system.seed 0",
        "--output training/ner_s1 --system.seed 1",
        "--output training/ner_s7 --system.seed 7",
    ]
    failing = subprocess.run([*_step("seeds"), "0,1", sys.executable, "-c", "raise SystemExit(3)"])
    assert failing.returncode == 3
    for bad in ("0,x", "1,1", ""):
        run = subprocess.run([*_step("seeds"), bad, "true"], capture_output=True, text=True)
        assert run.returncode != 0 and "seeds" in run.stderr


@pytest.mark.slow
def test_convert_sst_writes_sst5_and_sst2_categories(tmp_path):
    trees = tmp_path / "sst.txt"
    trees.write_text("(3 (2 -LRB-) (4 good) (2 -RRB-))\n\n(2 (2 so) (2 so))\n(0 (1 awful))\n", encoding="utf8")
    for binary, expected in (
        (False, [(["(", "good", ")"], "positive"), (["so", "so"], "neutral"), (["awful"], "very_negative")]),
        (True, [(["(", "good", ")"], "positive"), (["awful"], "negative")]),
    ):
        out = tmp_path / f"sst_{binary}.spacy"
        run = subprocess.run(
            [*_step("convert_sst"), str(trees), str(out), *(["--binary"] if binary else [])],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        vocab = spacy.blank("en").vocab
        docs = list(DocBin().from_disk(out).get_docs(vocab))
        assert [([t.text for t in doc], max(doc.cats, key=doc.cats.get)) for doc in docs] == expected
        assert all(sorted(doc.cats.values()) == [0.0] * (len(doc.cats) - 1) + [1.0] for doc in docs)
    trees.write_text("not a tree\n", encoding="utf8")
    run = subprocess.run([*_step("convert_sst"), str(trees), str(tmp_path / "x.spacy")], capture_output=True, text=True)
    assert run.returncode != 0 and "not an SST tree" in run.stderr


@pytest.mark.slow
def test_compare_gives_means_and_sd_over_seeds(tmp_path):
    metrics, training = tmp_path / "metrics", tmp_path / "training"
    metrics.mkdir()
    f1 = {"base": [0.80, 0.81, 0.78], "elmo": [0.83, 0.85, 0.84]}
    best_steps = {"base": [400, 200, 400], "elmo": [200, 200, 400]}
    for folder, values in f1.items():
        for seed, value, best in zip((0, 1, 2), values, best_steps[folder]):
            run = folder + ("" if seed == 0 else f"_s{seed}")
            srsly.write_json(metrics / f"{run}.json", {"ents_f": value, "speed": 1000.0 + seed})
            log = [{"step": step, "score": value - (0.0 if step == best else 0.01)} for step in (0, 200, 400)]
            (training / run).mkdir(parents=True)
            srsly.write_jsonl(training / run / "log.jsonl", log)
    cmd = [
        *_step("compare"),
        str(metrics),
        "--training",
        str(training),
        "--score",
        "ents_f",
        "--score-name",
        "F1",
        "--title",
        "t",
        "--row",
        "no ELMo=base",
        "--row",
        "ELMo=elmo",
        "--seeds",
        "0,1,2",
    ]
    run = subprocess.run(cmd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    base, elmo = srsly.read_json(metrics / "results.json")["rows"]
    # by hand: base 80, 81, 78 -> mean 79.667, sd sqrt(((1/3)^2 + (4/3)^2 + (5/3)^2) / 2) = 1.5275
    assert base["score"] == pytest.approx(79.6667, abs=1e-3) and base["sd"] == pytest.approx(1.5275, abs=1e-3)
    assert elmo["score"] == pytest.approx(84.0) and elmo["sd"] == pytest.approx(1.0)
    assert elmo["delta"] == pytest.approx(4.3333, abs=1e-3)
    assert [r["seed"] for r in base["runs"]] == [0, 1, 2] and [r["folder"] for r in base["runs"]] == ["base", "base_s1", "base_s2"]
    assert base["best_step"] == 333 and elmo["best_step"] == 267 and base["steps"] == 400
    table = (metrics / "results.md").read_text()
    assert "79.67 ± 1.53" in table and "+4.33" in table and "seed 2: 78.00" in table and "smoke" not in table
    smoke = subprocess.run(cmd + ["--smoke"], capture_output=True, text=True)
    assert smoke.returncode == 0, smoke.stderr
    table = (metrics / "results.md").read_text()
    assert "| vs baseline (smoke: meaningless) |" in table and "measure nothing about ELMo" in table
    # a seed that was not run is named
    run = subprocess.run(cmd[:-1] + ["0,1,2,3"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "300"})
    assert run.returncode != 0 and "base_s3.json is missing" in run.stderr


@pytest.mark.parametrize(
    "project,rows",
    [
        ("ner_conll03", ("ner_baseline", "ner_elmo", "ner_spacy_pretrain")),
        ("textcat_sst5", ("textcat_baseline", "textcat_elmo", "textcat_spacy_pretrain")),
    ],
)
def test_the_projects_train_evaluate_and_compare_every_seed(project, rows):
    """Every row's training, evaluation and table go through the same seeds (var seeds)."""
    text = (REPO / "projects" / project / "project.yml").read_text()
    for row in rows:
        assert f"--output training/{row}{{run}} --system.seed {{seed}}" in text
        assert f"seeds ${{vars.seeds}} python -m spacy_elmo.projects.evaluate training/{row}{{run}}/model-best" in text
        assert f"train-{row}{{run}} python -m spacy train" in text
    assert text.count("compare metrics --seeds ${vars.seeds}") == 1


# What only the data decides: where it comes from, how it is converted and sliced, and how the
# results are titled and scored.
# few-data draws subsets its own way per task (CoNLL: whole articles; SST: sentences); the results name their scores
DATA_COMMANDS = {"fetch", "convert", "smoke-data", "results", "smoke-results", "few-data", "few-results", "smoke-few-results"}


def _task_neutral(project: str, task: str) -> dict:
    config = srsly.read_yaml(REPO / "projects" / project / "project.yml")
    name = re.compile(rf"(?<![A-Za-z]){task}(?![A-Za-z])")
    commands = {c["name"]: {k: name.sub("TASK", str(v)) for k, v in c.items() if k != "help"} for c in config["commands"]}
    return {
        "workflows": config["workflows"],
        "directories": config["directories"],
        "commands": commands,
        "vars": {k: v for k, v in config["vars"].items() if not k.endswith("_url") and k not in ("data_dir",)},
    }


def test_the_two_task_projects_stay_in_step():
    """ner_conll03 and textcat_sst5 run the same rows the same way: with the task's name neutral,
    every workflow, variable and command is the same, except the data's own commands."""
    ner, textcat = _task_neutral("ner_conll03", "ner"), _task_neutral("textcat_sst5", "textcat")
    assert ner["workflows"] == textcat["workflows"] and ner["directories"] == textcat["directories"]
    assert ner["vars"] == textcat["vars"]
    assert sorted(ner["commands"]) == sorted(textcat["commands"])
    for name in set(ner["commands"]) - DATA_COMMANDS:
        assert ner["commands"][name] == textcat["commands"][name], name


@pytest.mark.parametrize("project", ["ner_conll03", "textcat_sst5", "pos_probe_ewt", "wsd_probe", "semantic_change"])
def test_projects_use_no_file_of_the_package_source(project):
    """The configs come from `spacy-elmo init-config` / `fill-config`, so a pip install suffices."""
    text = (REPO / "projects" / project / "project.yml").read_text(encoding="utf8")
    assert "spacy_elmo/" not in text


def _few_train_lines(project: str) -> dict:
    """{fraction: [(row output folder, --paths.train, {--training.* : value}), ...]} of the few-N commands."""
    config = srsly.read_yaml(REPO / "projects" / project / "project.yml")
    out = {}
    for command in config["commands"]:
        match = re.fullmatch(r"few-(\d+)", command["name"])
        if not match:
            continue
        rows = []
        for line in command["script"]:
            if " spacy train " not in line:
                continue
            args = line.split(" spacy train ", 1)[1].split()
            pairs = dict(zip(args[1::2], args[2::2]))
            rows.append(
                (
                    pairs["--output"],
                    pairs["--paths.train"],
                    {k: v for k, v in pairs.items() if k.startswith("--training.") and k != "--training.logger.output_file"},
                )
            )
        out[int(match.group(1))] = rows
    return out


@pytest.mark.parametrize("project,task", [("ner_conll03", "ner"), ("textcat_sst5", "textcat")])
def test_every_row_of_a_fraction_trains_on_the_same_subset_with_the_same_settings(project, task):
    fractions = _few_train_lines(project)
    assert sorted(fractions) == [1, 3, 10, 30, 100]
    for fraction, rows in fractions.items():
        assert len({paths for _, paths, _ in rows}) == 1 and rows[0][1] == f"corpus/few/train_f{fraction}{{run}}.spacy"
        assert len({tuple(sorted(settings.items())) for _, _, settings in rows}) == 1, fraction
        assert set(rows[0][2]) == {"--training.eval_frequency", "--training.patience", "--training.max_steps"}
        names = sorted(folder.rsplit("/", 1)[1] for folder, _, _ in rows)
        expected = ["baseline_vectors", "elmo_adapted_vectors", "elmo_vectors"] + ([] if fraction == 30 else ["elmo_cont_vectors"])
        assert names == sorted(f"{task}_{name}{{run}}" for name in expected)
    # the stopping rule grows with the fraction
    patience = [int(fractions[f][0][2]["--training.patience"]) for f in sorted(fractions)]
    assert patience == sorted(patience) and patience[0] < patience[-1]


def _script_module(name: str):
    """A project step's module (spacy_elmo/projects/NAME.py)."""
    import importlib

    return importlib.import_module(f"spacy_elmo.projects.{name}")


@pytest.mark.slow
def test_few_labels_subsets_are_whole_articles_drawn_per_seed(tmp_path):
    few = _script_module("few_labels")
    articles = []
    for a in range(10):
        sentences = [f"Word{a}_{s} NN O O\nin IN O O\nParis NNP O I-LOC\n" for s in range(a % 3 + 1)]
        articles.append("-DOCSTART- -X- O O\n\n" + "\n".join(sentences))
    conll = tmp_path / "train.conll"
    conll.write_text("\n".join(articles), encoding="utf8")
    assert len(few.conll_articles(conll.read_text())) == 10
    out = tmp_path / "few"
    run = subprocess.run(
        [*_step("few_labels"), "conll-subsets", str(conll), str(out), "--fractions", "30,100", "--seeds", "0,1"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    vocab = spacy.blank("en").vocab

    def words(name):
        return [t.text for doc in DocBin().from_disk(out / name).get_docs(vocab) for t in doc]

    chosen = {
        seed: sorted({w.split("_")[0] for w in words(f"train_f30{'' if seed == 0 else '_s1'}.spacy") if w.startswith("Word")})
        for seed in (0, 1)
    }
    # 3 of 10 articles each, whole (every sentence of a chosen article is there), different per seed
    for seed, names in chosen.items():
        assert len(names) == 3
        expected = sorted(f"Word{i}" for i in few.choose(10, 30, seed))
        assert names == expected
        for name in names:
            a = int(name[4:])
            assert sum(w.startswith(f"Word{a}_") for w in words(f"train_f30{'' if seed == 0 else '_s1'}.spacy")) == a % 3 + 1
    assert chosen[0] != chosen[1]
    assert len(words("train_f100.spacy")) == len(words("train_f100_s1.spacy")) == sum(3 * (a % 3 + 1) for a in range(10))
    assert few.choose(10, 30, 0) == few.choose(10, 30, 0) and len(few.choose(1000, 1, 2)) == 10 and few.choose(5, 1, 0) != []


@pytest.mark.slow
def test_few_labels_report_interpolates_in_log_fraction(tmp_path):
    few = _script_module("few_labels")
    # from 70 at 1% to 80 at 10%: 75 is reached halfway in log-fraction, at sqrt(10) = 3.16%
    assert few.reaches([1, 10, 100], [70, 80, 90], 75) == pytest.approx(10**0.5)
    assert few.reaches([1, 10], [70, 80], 85) is None and few.reaches([1, 10], [90, 95], 80) == 1
    metrics = tmp_path / "metrics" / "few"
    scores = {("base", 1): [0.70, 0.72], ("base", 10): [0.80, 0.80], ("elmo", 1): [0.78, 0.80], ("elmo", 10): [0.84, 0.86]}
    for (row, fraction), values in scores.items():
        (metrics / f"f{fraction}").mkdir(parents=True, exist_ok=True)
        for seed, value in zip((0, 1), values):
            srsly.write_json(metrics / f"f{fraction}" / f"{row}{'' if seed == 0 else '_s1'}.json", {"ents_f": value})
    run = subprocess.run(
        [
            *_step("few_labels"),
            "report",
            str(metrics),
            "--score",
            "ents_f",
            "--fractions",
            "1,10",
            "--seeds",
            "0,1",
            "--row",
            "baseline=base",
            "--row",
            "ELMo=elmo",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    result = srsly.read_json(metrics.parent / "few_labels.json")
    elmo = result["rows"][1]
    assert [p["mean"] for p in elmo["points"]] == pytest.approx([79.0, 85.0])
    assert elmo["points"][0]["sd"] == pytest.approx(2**0.5)
    # the baseline's 10% score (80) is reached between 1% (79) and 10% (85): 10 ** (1/6)
    assert elmo["reaches"][0] == "'baseline''s 10% score (80.00) reached at 1.5% of the data"
    table = (metrics.parent / "few_labels.md").read_text()
    assert "| 1% | 71.00 ± 1.41 (n=2) | 79.00 ± 1.41 (n=2) **+8.00** |" in table
    assert (metrics.parent / "few_labels.png").stat().st_size > 0
    # a smoke run's table says in the table that its figures measure nothing, and draws no "reaches" from them
    run = subprocess.run(run.args + ["--smoke"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    table = (metrics.parent / "few_labels.md").read_text()
    assert "**+8.00** (smoke) |" in table and "measure nothing about ELMo" in table and "not computed for a smoke run" in table
    assert srsly.read_json(metrics.parent / "few_labels.json")["rows"][1]["reaches"] == []


@pytest.mark.slow
def test_sentence_probe_classifier_separates_and_its_penalty_shrinks_the_weights():
    probe = _script_module("sentence_probe")
    rng = numpy.random.default_rng(0)
    # three classes, each a Gaussian blob around its own corner: separable, so held-out accuracy ~1
    centres = numpy.eye(3, 8) * 6
    y = rng.integers(0, 3, 300)
    x = centres[y] + rng.normal(size=(300, 8))
    train, held = probe.standardize(x[:200], x[200:])
    params = probe.fit(train, y[:200], 3, 1e-3)
    assert probe.accuracy(held, y[200:], params) > 0.97
    norms = [numpy.abs(probe.fit(train, y[:200], 3, penalty)[0]).sum() for penalty in (1e-3, 1.0, 100.0)]
    assert norms[0] > norms[1] > norms[2] > 0
    assert probe.choose_penalty(x[:60], y[:60], 3, seed=0) in probe.PENALTIES
    # the categories' order is the labels'; the gold index is the category with the highest value
    nlp = spacy.blank("en")
    doc = nlp("a b")
    doc.cats = {"neg": 0.0, "pos": 1.0}
    assert probe.gold([doc], ["neg", "pos"]).tolist() == [1]


@pytest.mark.slow
def test_sentence_probe_reads_the_subsets_and_scores_every_feature_set(shared_bilm, tmp_path):
    """Sentences whose label is one word ('good' / 'bad'): the mean static vector separates them,
    and so does the biLM's (its token layer sees the word)."""
    nlp = spacy.blank("en")
    rng = numpy.random.default_rng(1)
    words = "the film was plot acting story it and quite really good bad".split()
    for word in words:
        nlp.vocab.set_vector(word, rng.normal(size=16).astype("float32"))
    nlp.to_disk(tmp_path / "vectors")

    def docs(n: int, seed: int) -> DocBin:
        r = numpy.random.default_rng(seed)
        out = DocBin(store_user_data=True)
        for i in range(n):
            label = ["bad", "good"][i % 2]
            filler = [str(w) for w in r.choice(words[:10], size=int(r.integers(3, 8)))]
            doc = spacy.tokens.Doc(nlp.vocab, words=filler[:2] + [label] + filler[2:])
            doc.cats = {"negative": float(label == "bad"), "positive": float(label == "good")}
            out.add(doc)
        return out

    subsets = tmp_path / "few"
    subsets.mkdir()
    docs(20, 2).to_disk(subsets / "train_f1.spacy")
    docs(20, 3).to_disk(subsets / "train_f1_s1.spacy")
    docs(60, 4).to_disk(subsets / "train_f100.spacy")
    docs(40, 5).to_disk(tmp_path / "dev.spacy")
    run = subprocess.run(
        [
            *_step("sentence_probe"),
            str(subsets),
            str(tmp_path / "dev.spacy"),
            str(tmp_path / "out" / "probe"),
            "--vectors",
            str(tmp_path / "vectors"),
            "--bilm",
            f"small={shared_bilm}",
            "--fractions",
            "1,100",
            "--seeds",
            "0,1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = srsly.read_json(tmp_path / "out" / "probe.json")
    assert result["labels"] == ["negative", "positive"]
    runs = {(r["features"], r["fraction"], r["seed"]): r for r in result["runs"]}
    assert set(runs) == {(f, fr, s) for f in ("vectors", "small", "vectors + small") for fr, s in ((1, 0), (1, 1), (100, 0))}
    assert all(r["n_train"] == (60 if r["fraction"] == 100 else 20) for r in runs.values())
    assert runs["vectors", 100, 0]["accuracy"] == 1.0 and runs["small", 100, 0]["accuracy"] >= 0.9
    table = (tmp_path / "out" / "probe.md").read_text()
    assert "| 1% |" in table and "(n=2)" in table and "| 100% |" in table


@pytest.mark.slow
def test_semantic_change_scores_a_wug_set_against_its_judgments(tmp_path):
    """projects/semantic_change's script on a WUG-format set written here: 6 words, two periods, judgments;
    the figures it reports are Spearman's rho and accuracies in range, the token layer among the rows."""
    import json

    from spacy_elmo import save_original

    from .helpers import tiny_bilm

    rng = numpy.random.default_rng(0)
    vocab = "the a river bank money flows loan water rate high low city walk".split()
    words = ["bank_nn", "plane_nn", "cell_nn", "mouse_nn", "rock_nn", "net_nn"]
    stats = ["lemma\tgrouping\tchange_binary\tchange_graded"]
    for k, word in enumerate(words):
        folder = tmp_path / "wug" / "data" / word
        folder.mkdir(parents=True)
        target = word.split("_")[0]
        uses, ids = ["lemma\tgrouping\tidentifier\tcontext_tokenized\tindexes_target_token_tokenized"], []
        for group in ("1", "2"):
            for i in range(6):
                tokens = list(rng.choice(vocab, 7))
                at = int(rng.integers(0, 7))
                tokens.insert(at, target + "s" * int(rng.integers(0, 2)))  # word forms: the token layer varies too
                ids.append(f"{word}-{group}-{i}")
                uses.append(f"{word}\t{group}\t{ids[-1]}\t{' '.join(tokens)}\t{at}")
        (folder / "uses.csv").write_text("\n".join(uses) + "\n", encoding="utf8")
        pairs = ["identifier1\tidentifier2\tannotator\tjudgment"]
        pairs += [f"{ids[i]}\t{ids[i + 6]}\tann\t{1 + (i + k) % 4}" for i in range(6)]
        (folder / "judgments.csv").write_text("\n".join(pairs) + "\n", encoding="utf8")
        stats.append(f"{word}\t1_2\t{k % 2}\t{k / 10}")
    (tmp_path / "wug" / "stats" / "opt").mkdir(parents=True)
    (tmp_path / "wug" / "stats" / "opt" / "stats_groupings.csv").write_text("\n".join(stats) + "\n", encoding="utf8")
    (tmp_path / "bilm").mkdir()
    save_original(tiny_bilm(seed=1), tmp_path / "bilm" / "options.json", tmp_path / "bilm" / "weights.hdf5")
    out = tmp_path / "metrics"
    command = [*_step("semantic_change"), str(tmp_path / "wug"), str(out), "--bilm", f"tiny={tmp_path / 'bilm'}"]
    run = subprocess.run(command, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads((out / "change.json").read_text())
    assert result["words"] == 6 and result["half_a"] == sorted(words)[0::2]
    rows = result["results"]
    assert {r["representation"] for r in rows} >= {"token layer", "layer 1", "average of all"}
    assert {"APD", "PRT", "APD+PRT ranks", "JSD of 8 clusters"} <= {r["measure"] for r in rows}
    assert {r["vectors"] for r in rows} == {"plain", "standardized"}
    for r in rows:
        assert -1 <= r["spearman_all"] <= 1 and 0 <= r["accuracy_b"] <= 1, r
        assert r["usage_pairs"] == (0 if r["representation"] == "mean rank" else 36), r
    # the senses' inputs (projects/semantic_change's `senses`): every layer of the target's own and of the
    # context-only vectors, each sense rule, against the dataset's spelling
    for g in ("1", "2"):
        build = ["spacy-elmo", "index-usages", str(tmp_path / "bilm"), str(tmp_path / "wug"), str(tmp_path / f"idx{g}")]
        assert subprocess.run([*build, "--grouping", g, "--all-layers", "-q"], capture_output=True).returncode == 0
    senses = [*_step("change_senses"), str(tmp_path / "wug"), str(out / "senses.json")]
    senses += ["--bilm", f"tiny={tmp_path / 'idx1'},{tmp_path / 'idx2'}", "--rule", "silhouette", "--rule", "min=1"]
    run = subprocess.run(senses, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads((out / "senses.json").read_text())
    assert [r["representation"] for r in found] == ["0", "1", "2", "average", "context:0", "context:1", "context:2", "context:average"]
    for r in found:
        assert r["words"] == 6 and -1 <= r["apd_rho_all"] <= 1
        # below silhouette 1 a word is one sense (only a perfect split, identical vectors per form, stays split)
        assert 1.0 <= r["min=1:senses_mean"] <= r["silhouette:senses_mean"] and r["silhouette:senses_mean"] >= 2
        assert -1 <= r["silhouette:ari_forms_all"] <= 1 and -1 <= r["min=1:ari_forms_all"] <= 1
    assert found[4]["min=1:senses_mean"] == 1.0 and found[4]["min=1:ari_forms_all"] == 0.0  # context-only: one sense
    assert [r["measure"] for r in rows if r["representation"] == "mean rank"][0].startswith("APD of layers 1..L")
    assert (out / "vectors-tiny.npz").exists() and "| tiny | token layer |" in (out / "change.md").read_text()
    again = subprocess.run(command, capture_output=True, text=True)  # from the kept vectors
    assert again.returncode == 0 and json.loads((out / "change.json").read_text())["results"] == rows
    more = subprocess.run([*_step("change_measures"), str(tmp_path / "wug"), str(out), "tiny"], capture_output=True, text=True)
    assert more.returncode == 0, more.stderr[-3000:]
    table = (out / "more-measures.md").read_text().splitlines()[2:]
    assert len(table) == 8 * 4 * 5  # token layer, average, 2 biLSTM layers whole and in halves; plain and 3 cuts; 5 measures
    assert all(-1 <= float(x) <= 1 for row in table for x in row.strip("|").split("|")[3:])
    assert all(float(r.split("|")[5]) <= float(r.split("|")[4]) <= float(r.split("|")[6]) for r in table if "n/a" not in r)
    # substitutes need the biLM's softmax: a folder as pretrain writes it
    from spacy_elmo.bilm.language_model import SharedSoftmax
    from spacy_elmo.training.checkpoint import save_model_dir
    from spacy_elmo.training.vocab import Vocabulary

    import torch

    lm_words = ["<S>", "</S>", "<UNK>", *vocab, *(w.split("_")[0] for w in words)]
    torch.manual_seed(0)
    save_model_dir(
        tmp_path / "lm", tiny_bilm(seed=1), Vocabulary(lm_words, list(range(1, len(lm_words) + 1))), SharedSoftmax(8, len(lm_words))
    )
    subs = subprocess.run(
        [*_step("change_substitutes"), str(tmp_path / "wug"), str(out), f"tiny={tmp_path / 'lm'}"],
        capture_output=True,
        text=True,
    )
    assert subs.returncode == 0, subs.stderr[-3000:]
    found = json.loads((out / "substitutes-tiny.json").read_text())["results"]
    assert len(found) == 4 * 3 * 4  # product, mixture, forward, backward; beta 0, 0.5, 1; 4 measures
    assert all(-1 <= r["spearman_all"] <= 1 for r in found if r["spearman_all"] == r["spearman_all"])
    assert [r["spearman_A"] for r in found] == sorted((r["spearman_A"] for r in found), reverse=True)
    no_softmax = subprocess.run(
        [*_step("change_substitutes"), str(tmp_path / "wug"), str(out), f"tiny={tmp_path / 'bilm'}"],
        capture_output=True,
        text=True,
    )
    assert no_softmax.returncode != 0 and "substitutes need the biLM's softmax" in no_softmax.stderr


def test_the_further_change_measures_by_hand():
    from spacy_elmo.projects.change_measures import across, nearest_across, within

    a, b = numpy.array([[1.0, 0.0], [0.0, 2.0]]), numpy.array([[3.0, 0.0], [1.0, 0.0]])
    assert across(a, b) == pytest.approx(0.5)  # cosines 1, 1, 0, 0
    assert within(a) == pytest.approx(1.0) and within(b) == pytest.approx(0.0)
    assert across(a, b) - (within(a) + within(b)) / 2 == pytest.approx(0.0)  # the energy distance
    # each usage's nearest of the other period: a1 -> b (distance 0), a2 -> b (1); b1, b2 -> a1 (0, 0)
    assert nearest_across(a, b, 1) == pytest.approx((0.5 + 0.0) / 2)
    assert nearest_across(a, b, 10) == pytest.approx(across(a, b))  # k past the other period: every pair


def test_the_bootstrap_interval_holds_the_rho():
    from spacy_elmo.projects.semantic_change import bootstrap_interval, spearman

    assert bootstrap_interval([1, 2, 3, 4, 5], [2, 4, 6, 8, 10]) == (1.0, 1.0)  # every resampling is in order
    rng = numpy.random.default_rng(1)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    low, high = bootstrap_interval(x, y)
    assert low < spearman(x, y) < high and 0.1 < high - low < 0.8


def test_substitute_distributions_and_measures_by_hand():
    import torch

    from spacy_elmo.change.measures import jensen_shannon

    from spacy_elmo.projects.change_substitutes import measures, substitutes

    log = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    prior = torch.log(torch.tensor([0.5, 0.25, 0.25]))
    keep = torch.zeros(1, 3, dtype=torch.bool)
    # the product of the two directions, renormalised: 0.25, 0.0625, 0.0625 -> 2/3, 1/6, 1/6
    assert substitutes(log, log, "product", 0.0, prior, keep)[0].tolist() == pytest.approx([2 / 3, 1 / 6, 1 / 6])
    # dividing by the prior (beta 1) leaves the forward LM's p / prior: uniform here
    assert substitutes(log, log, "forward", 1.0, prior, keep)[0].tolist() == pytest.approx([1 / 3] * 3)
    # a left-out word gets nothing, the rest is renormalised; the mixture of equal directions is that direction
    assert substitutes(log, log, "mixture", 0.0, prior, torch.tensor([[False, True, False]]))[0].tolist() == pytest.approx(
        [2 / 3, 0, 1 / 3]
    )
    assert jensen_shannon(numpy.array([1.0, 0.0]), numpy.array([0.0, 1.0])) == pytest.approx(math.log(2))
    p = torch.tensor([[1.0, 0.0] + [0.0] * 10, [0.0, 1.0] + [0.0] * 10])
    found = measures(p, torch.tensor([True, False]))
    assert found["JSD of means"] == pytest.approx(math.log(2)) and found["APD cosine"] == pytest.approx(1.0)
    assert found["APD Hellinger"] == pytest.approx(1.0)
    same = measures(torch.cat([p[:1], p[:1]]), torch.tensor([True, False]))
    assert same["JSD of means"] == pytest.approx(0.0, abs=1e-6) and same["APD cosine"] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.slow
def test_a_project_outside_the_repositorys_layout_says_which_vars_to_give(tmp_path):
    """A clone elsewhere, offline: the defaults (../../../shared/...) find nothing. Each missing input is one line
    naming the --vars to give, and no traceback: first the raw text, then the data folder whose download failed."""
    project_dir = _copy_project("ner_conll03", tmp_path)
    base = [sys.executable, "-m", "spacy", "project", "run", "smoke", str(project_dir)]

    def run(*variables: str) -> str:
        done = subprocess.run([*base, *variables], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode != 0
        out = done.stdout + done.stderr
        assert "Traceback" not in out, out[-3000:]
        return " ".join(out.split())

    assert "give yours with --vars.raw_text PATH" in run()
    raw = tmp_path / "my_text.txt"
    raw.write_text("One paragraph of mine .\n", encoding="utf8")
    out = run("--vars.raw_text", str(raw), "--vars.conll_url", "http://127.0.0.1:9/nowhere")  # a download that fails
    assert "--vars.data_dir FOLDER" in out and "conll2003/eng.train" in out
