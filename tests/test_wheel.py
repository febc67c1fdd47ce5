"""What a pip user gets: the built wheel's contents, and the whole path from it alone (spacy_elmo
imported from the installed wheel, never from this checkout): pretrain from a named preset, write
a task config with init-config, train it with `spacy train`, then ELMo vectors and similarity."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a wheel and runs it in subprocesses

REPO = Path(__file__).resolve().parents[1]
CONFIGS = sorted(p.name for p in (REPO / "spacy_elmo" / "configs").glob("*.cfg"))
TINY_BILM = [
    "--bilm.cell_dim",
    "16",
    "--bilm.projection_dim",
    "8",
    "--bilm.filters",
    "[[1, 4], [2, 8]]",
    "--bilm.char_embed_dim",
    "4",
]
TEXT = "The cat sat on the mat. The dog sat on the log.\n\nShares of the bank rose. The market fell.\n"


def test_the_wheel_holds_the_package_its_configs_and_entry_points(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("spacy_elmo/configs/") and n.endswith(".cfg")) == CONFIGS
    assert "spacy_elmo/py.typed" in names and "spacy_elmo/training/logger.py" in names
    assert not [n for n in names if n.startswith(("tests/", "projects/", "benchmarks/"))]
    for line in (
        "spacy-elmo = spacy_elmo.cli:app",
        "elmo = spacy_elmo.pipeline.component:make_elmo",
        "elmo-config = spacy_elmo.spacy_init",
        "spacy-elmo.PretrainLogger.v1 = spacy_elmo.training.logger:pretrain_logger",
    ):
        assert line in entry_points


def test_a_pip_user_pretrains_configures_trains_and_gets_vectors(installed, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(installed)}

    def run(*args: str) -> str:
        result = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
        assert result.returncode == 0, " ".join(args) + "\n" + result.stdout[-3000:] + result.stderr[-3000:]
        return result.stdout

    where = run("-c", "import spacy_elmo; print(spacy_elmo.__file__)")
    assert where.startswith(str(installed)), where
    (tmp_path / "text.txt").write_text(TEXT * 5, encoding="utf8")
    run(
        "-m",
        "spacy_elmo",
        "pretrain",
        "cpu",
        "--output",
        "bilm",
        "--paths.train",
        "text.txt",
        *TINY_BILM,
        "--training.max_steps",
        "3",
        "--training.max_minutes",
        "0",
        "--vocab.min_count",
        "1",
    )
    assert (tmp_path / "bilm" / "model-best" / "weights.hdf5").is_file()

    run("-m", "spacy_elmo", "init-config", "ner.cfg", "--pipeline", "ner", "--bilm", "bilm/model-best")
    run(
        "-c",
        (
            "import spacy\nfrom spacy.tokens import DocBin\nnlp = spacy.blank('en')\n"
            "docs = [nlp('Acme rose in Paris .'), nlp('The cat sat .')]\n"
            "docs[0].ents = [docs[0].char_span(0, 4, 'ORG'), docs[0].char_span(13, 18, 'LOC')]\n"
            "DocBin(docs=docs * 4).to_disk('train.spacy')\n"
        ),
    )
    run(
        "-m",
        "spacy",
        "train",
        "ner.cfg",
        "--output",
        "ner",
        "--paths.train",
        "train.spacy",
        "--paths.dev",
        "train.spacy",
        "--training.max_steps",
        "4",
        "--training.eval_frequency",
        "2",
    )
    out = run(
        "-c",
        (
            "import json, spacy\n"
            "nlp = spacy.load('ner/model-last', config={'components': {'elmo': {'vectors': 'top'}}})\n"
            "a, b = nlp('The cat sat .'), nlp('The dog sat .')\n"
            "print(json.dumps({'pipes': nlp.pipe_names, 'width': len(a.vector), 'doc': a.similarity(b),\n"
            "  'token': a[1].similarity(b[1]), 'self': a[1].similarity(a[1]),\n"
            "  'file': str(spacy.util.get_module_path(type(nlp.get_pipe('elmo'))))}))\n"
        ),
    )
    result = json.loads(out.strip().splitlines()[-1])
    assert result["pipes"] == ["elmo", "ner"]
    assert result["width"] == 16  # 2P of the pretrained biLM
    assert -1.0 <= result["doc"] <= 1.0 and -1.0 <= result["token"] < 1.0
    assert result["self"] == pytest.approx(1.0)
    assert str(installed) in str(result["file"])
