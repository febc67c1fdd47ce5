"""The projects' smoke workflows, run as a user runs them: `spacy project run smoke`."""
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import spacy
import srsly

from spacy_elmo import load_original

REPO = Path(__file__).resolve().parents[1]
ROWS = ["no pretraining", "ELMo", "spacy pretrain"]


def _copy_project(project: str, tmp_path: Path) -> Path:
    """A copy of the repository's layout, so that the run leaves the checkout as it was."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "spacy_elmo" / "configs", root / "spacy_elmo" / "configs")
    shutil.copytree(REPO / "projects" / "scripts", root / "projects" / "scripts")
    shutil.copytree(REPO / "projects" / project, root / "projects" / project,
                    ignore=shutil.ignore_patterns("assets", "corpus", "training", "metrics", "project.lock"))
    return root / "projects" / project


@pytest.mark.parametrize(
    "project,task,score",
    [("ner_conll03", "ner", "ents_f"), ("textcat_sst5", "textcat", "cats_micro_f")],
)
def test_smoke_workflow(project, task, score, shared_data, tmp_path):
    project_dir = _copy_project(project, tmp_path)
    cmd = [sys.executable, "-m", "spacy", "project", "run", "smoke", str(project_dir),
           "--vars.data_dir", str(shared_data), "--vars.raw_text", str(shared_data / "raw" / "reuters21578.txt.gz")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

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
    assert (metrics / "results.md").read_text().count("\n| ") == 4
    assert (metrics / "results.png").stat().st_size > 0

    # The ELMo row ran on the biLM pretrained in the workflow, unchanged (frozen).
    bilm_dir = training / "bilm" / "model-best"
    nlp = spacy.load(training / f"{task}_elmo" / "model-best")
    assert nlp.pipe_names == ["elmo", task]
    assert nlp.config["components"]["elmo"]["model"]["cell_dim"] == 32
    doc = nlp("Shares of Acme rose 5 % in Frankfurt .")
    expected = load_original(bilm_dir / "options.json", bilm_dir / "weights.hdf5").embed([[t.text for t in doc]])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-5)
    # The spacy pretrain row started from the pretrained tok2vec.
    spacy_row = spacy.load(training / f"{task}_spacy_pretrain" / "model-best")
    assert spacy_row.config["paths"]["init_tok2vec"].endswith("spacy_pretrain/model-budget.bin")


PROBE_ROWS = ["tagger", "hashed", "layer0", "layer1", "layer2", "mix"]


def test_pos_probe_smoke_workflow(shared_data, shared_bilm, tmp_path):
    project_dir = _copy_project("pos_probe_ewt", tmp_path)
    cmd = [sys.executable, "-m", "spacy", "project", "run", "smoke", str(project_dir),
           "--vars.data_dir", str(shared_data), "--vars.bilm", str(shared_bilm)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    metrics = project_dir / "metrics" / "smoke"
    result = srsly.read_json(metrics / "results.json")
    assert [r["folder"] for r in result["rows"]] == PROBE_ROWS
    for row in result["rows"]:
        assert row["score"] == pytest.approx(100 * srsly.read_json(metrics / f"{row['folder']}.json")["tag_acc"])
        assert row["steps"] == 20
    # The labels are UPOS (17 tags), and each probe row saw exactly its layer of the shared biLM.
    training = project_dir / "training" / "smoke"
    tagger = spacy.load(training / "layer1" / "model-best").get_pipe("tagger")
    assert set(tagger.labels) <= {"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART",
                                  "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"}
    for layer in (0, 1, 2):
        nlp = spacy.load(training / f"layer{layer}" / "model-best")
        select = next(n for n in nlp.get_pipe("tagger").model.walk() if n.name == "layer_select")
        assert select.attrs["layer"] == layer
    mix = spacy.load(training / "mix" / "model-best")
    assert any(n.name == "scalar_mix" for n in mix.get_pipe("tagger").model.walk())
    assert spacy.load(training / "hashed" / "model-best").pipe_names == ["tagger"]


def test_a_ready_biLM_replaces_the_pretraining(tmp_path):
    """var bilm set: its files are linked as training/bilm/model-best and the pretraining command
    never runs; empty: the command runs."""
    from spacy_elmo import save_original

    from .helpers import tiny_bilm

    script = REPO / "projects" / "scripts" / "ready_bilm.py"
    save_original(tiny_bilm(), tmp_path / "ready" / "options.json", tmp_path / "ready" / "weights.hdf5")
    marker = tmp_path / "pretrained"
    pretrain = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('x')"]
    (tmp_path / "bilm" / "model-best").mkdir(parents=True)
    (tmp_path / "bilm" / "log.jsonl").write_text("{}\n")
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "bilm"), str(tmp_path / "ready"), *pretrain], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert not marker.exists() and not (tmp_path / "bilm" / "log.jsonl").exists()
    best = tmp_path / "bilm" / "model-best"
    assert (best / "weights.hdf5").resolve() == (tmp_path / "ready" / "weights.hdf5").resolve()
    assert load_original(best / "options.json", best / "weights.hdf5").options == tiny_bilm().options
    assert srsly.read_json(tmp_path / "bilm" / "ready.json")["bilm"] == str((tmp_path / "ready").resolve())
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "bilm"), "", *pretrain], capture_output=True, text=True)
    assert run.returncode == 0 and marker.exists() and not (tmp_path / "bilm" / "ready.json").exists()
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "bilm"), str(tmp_path), *pretrain], capture_output=True, text=True)
    assert run.returncode != 0 and "options.json + weights.hdf5" in run.stderr
