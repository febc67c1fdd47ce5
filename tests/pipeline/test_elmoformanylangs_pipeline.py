"""An ELMoForManyLangs model in a non-English spaCy pipeline: the component, saving and loading in
a fresh process, vectors, precisions, the usage index, and `spacy train` with its listener."""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin
from typer.testing import CliRunner

from spacy_elmo import add_elmo
from spacy_elmo.bilm.elmoformanylangs import load_elmoformanylangs

MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "elmoformanylangs" / "model"
WORDS = ["Tom", "és", "the", "cat", "sat", "on", "the", "mat", "."]


def _pipeline(**config):
    nlp = spacy.blank("de")
    add_elmo(nlp, str(MODEL), config=config)
    return nlp


def test_the_component_stores_the_biLM_layers():
    nlp = _pipeline()
    doc = nlp(Doc(nlp.vocab, words=WORDS))
    expected = load_elmoformanylangs(MODEL).embed([WORDS])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-6)
    assert nlp.get_pipe("elmo").model.layers[0].shims[0]._model.options.char_vocab == "learned"
    assert nlp.config["components"]["elmo"]["model"]["@architectures"] == "spacy-elmo.BiLM.v3"


@pytest.mark.slow
def test_saved_pipeline_loads_in_a_fresh_process_with_the_weights_inside(tmp_path):
    nlp = _pipeline()
    expected = nlp(Doc(nlp.vocab, words=WORDS))._.elmo.layers
    nlp.to_disk(tmp_path / "pipeline")
    script = (
        "import sys, numpy, spacy; from spacy.tokens import Doc; nlp = spacy.load(sys.argv[1]); "
        "doc = nlp(Doc(nlp.vocab, words=sys.argv[3].split('|'))); numpy.save(sys.argv[2], doc._.elmo.layers)"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "pipeline"), str(tmp_path / "out.npy"), "|".join(WORDS)], check=True)
    numpy.testing.assert_allclose(numpy.load(tmp_path / "out.npy"), expected, atol=0)


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_every_precision_runs_close_to_float32(precision):
    reference = _pipeline()(Doc(spacy.blank("de").vocab, words=WORDS))._.elmo.layers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU without bf16 units falls back to float32, with a warning
        nlp = _pipeline(precision=precision)
    layers = nlp(Doc(nlp.vocab, words=WORDS))._.elmo.layers
    assert numpy.isfinite(layers).all()
    scale = numpy.abs(reference).max()
    assert numpy.abs(layers - reference).max() < 0.1 * scale


def test_vectors_come_from_the_biLM():
    nlp = _pipeline(vectors="top")
    doc = nlp(Doc(nlp.vocab, words=WORDS))
    numpy.testing.assert_allclose(doc[3].vector, doc._.elmo.layers[-1, 3], atol=1e-6)


def test_usage_index_and_neighbours_with_a_folder(tmp_path):
    from spacy_elmo.cli import app

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\na dog barked , the cat sat .\nTom és a cat .\n", encoding="utf-8")
    runner = CliRunner()
    built = runner.invoke(app, ["index-usages", str(MODEL), str(corpus), str(tmp_path / "index"), "--words", "cat", "--lang", "de"])
    assert built.exit_code == 0, built.output
    found = runner.invoke(app, ["neighbours", str(tmp_path / "index"), "a dog barked , the cat sat .", "--word", "cat", "--n", "1"])
    assert found.exit_code == 0, found.output
    assert "1.000" in found.output  # the same sentence is its own nearest usage


@pytest.mark.slow
def test_spacy_train_ner_with_an_elmoformanylangs_folder(tmp_path):
    from spacy.cli.train import train

    from spacy_elmo.cli import app

    result = CliRunner().invoke(app, ["init-config", str(tmp_path / "ner.cfg"), "--pipeline", "ner", "--bilm", str(MODEL)])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "ner.cfg").read_text(encoding="utf-8")
    assert '"spacy-elmo.BiLM.v3"' in text and f'bilm = "{MODEL.resolve()}"' in text
    nlp = spacy.blank("de")
    docs = []
    for i in range(12):
        doc = Doc(nlp.vocab, words=["Tom", "sat", "on", "the", "mat", "."] if i % 2 else ["the", "cat", "és", "Tom", "."])
        doc.ents = [doc.char_span(doc.text.index("Tom"), doc.text.index("Tom") + 3, label="PER")]
        docs.append(doc)
    DocBin(docs=docs).to_disk(tmp_path / "train.spacy")
    overrides = {
        "paths.train": str(tmp_path / "train.spacy"),
        "paths.dev": str(tmp_path / "train.spacy"),
        "nlp.lang": "de",
        "training.max_steps": 30,
        "training.eval_frequency": 10,
    }
    train(tmp_path / "ner.cfg", tmp_path / "out", overrides=overrides)
    trained = spacy.load(tmp_path / "out" / "model-last")
    assert trained.lang == "de" and trained.pipe_names == ["elmo", "ner"]
    assert trained.get_pipe("elmo").listening_components == ["ner"]
    doc = trained(Doc(trained.vocab, words=["the", "cat", "és", "Tom", "."]))
    assert doc._.elmo.layers.shape == (3, 5, 16)
    assert [e.text for e in doc.ents] == ["Tom"]
