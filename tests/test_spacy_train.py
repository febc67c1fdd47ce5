"""`spacy train` with the example configs on slices of the shared CoNLL-2003 and SST data."""

import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.cli.train import train
from spacy.tokens import DocBin
from spacy.training.converters import conll_ner_to_docs

from spacy_elmo import load_original, save_original
from spacy_elmo.configs import CONFIG_DIR as CONFIGS
from spacy_elmo.layers import mix_weights

from .helpers import tiny_bilm, tiny_overrides, tiny_model_config

# `spacy train` end to end: slow (pytest --runslow)
pytestmark = pytest.mark.slow

TINY_ELMO = tiny_overrides("components.elmo.model")  # the listeners' widths follow
QUICK = {"training.max_steps": 12, "training.eval_frequency": 6, "training.batcher.size.start": 200, "training.batcher.size.stop": 200}


def _conll_slice(path: Path, n_sentences: int, out: Path) -> Path:
    lines, sentences = [], 0
    for line in path.read_text(encoding="utf8").splitlines():
        lines.append(line)
        if not line.strip():
            sentences += 1
            if sentences >= n_sentences:
                break
    docs = conll_ner_to_docs("\n".join(lines), n_sents=10, no_print=True)
    DocBin(docs=docs).to_disk(out)
    return out


@pytest.fixture(scope="module")
def elmo_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("elmo")
    save_original(tiny_bilm(seed=21), folder / "options.json", folder / "weights.hdf5")
    return folder / "options.json", folder / "weights.hdf5"


@pytest.fixture(scope="module")
def conll(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("conll")
    return (
        _conll_slice(shared_data / "conll2003" / "eng.train", 150, folder / "train.spacy"),
        _conll_slice(shared_data / "conll2003" / "eng.testa", 40, folder / "dev.spacy"),
    )


@pytest.fixture(scope="module")
def sst(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sst")
    out = []
    for split, n in (("train", 200), ("dev", 40)):
        convert = [
            sys.executable,
            "-m",
            "spacy_elmo.projects.convert_sst",
            str(shared_data / "sst" / f"{split}.txt"),
            str(folder / "all.spacy"),
        ]
        subprocess.run(convert, check=True, capture_output=True)
        docs = list(DocBin().from_disk(folder / "all.spacy").get_docs(spacy.blank("en").vocab))[:n]
        DocBin(docs=docs, store_user_data=True).to_disk(folder / f"{split}.spacy")
        out.append(folder / f"{split}.spacy")
    return out


def _train(config: str, data, elmo_files, out: Path, **extra) -> Path:
    overrides = {"paths.train": str(data[0]), "paths.dev": str(data[1]), **QUICK, **extra}
    if "elmo" in config:
        overrides.update({"paths.elmo_options": str(elmo_files[0]), "paths.elmo_weights": str(elmo_files[1]), **TINY_ELMO})
    train(CONFIGS / config, out, overrides=overrides)
    return out / "model-last"


@pytest.mark.parametrize("frozen", [True, False])
def test_ner_with_elmo_trains_end_to_end(conll, elmo_files, tmp_path, frozen, capsys):
    model_dir = _train("ner_elmo.cfg", conll, elmo_files, tmp_path, **{"components.elmo.frozen": frozen})
    header = next(line for line in capsys.readouterr().out.splitlines() if "LOSS NER" in line)
    assert ("LOSS ELMO" in header) == (not frozen)  # a frozen biLM has no loss to show
    nlp = spacy.load(model_dir)
    assert nlp.pipe_names == ["elmo", "ner"]
    elmo = nlp.get_pipe("elmo")
    assert elmo.listening_components == ["ner"]
    doc = nlp("EU rejects German call to boycott British lamb .")
    assert doc._.elmo.layers.shape == (3, len(doc), 16)
    # punct_sentences: the biLM runs over each sentence on its own; the Doc gets no boundaries.
    two = nlp("Peter Blackburn wrote it . BRUSSELS 1996-08-22 .")
    assert not two.has_annotation("SENT_START")
    if frozen:
        expected = numpy.concatenate(load_original(*elmo_files).embed([[t.text for t in two[:5]], [t.text for t in two[5:]]]), axis=1)
        numpy.testing.assert_allclose(two._.elmo.layers, expected, atol=1e-5)
    # The task learned its own layer weights.
    mixes = [node for node in nlp.get_pipe("ner").model.walk() if node.name == "scalar_mix"]
    assert len(mixes) == 1
    weights, gamma = mix_weights(mixes[0])
    assert numpy.abs(weights - 1 / 3).max() > 1e-5 or abs(gamma - 1.0) > 1e-5
    # Frozen: the biLM is exactly the loaded one; fine-tuned: it moved.
    original = load_original(*elmo_files).embed([[t.text for t in doc]])[0]
    gap = numpy.abs(elmo.bilm.embed([[t.text for t in doc]])[0] - original).max()
    assert (gap < 1e-6) if frozen else (gap > 1e-5)
    from spacy.cli.evaluate import evaluate

    scores = evaluate(model_dir, conll[1], silent=True)
    assert 0.0 <= scores["ents_f"] <= 1.0


def test_ner_baseline_trains(conll, elmo_files, tmp_path):
    nlp = spacy.load(_train("ner_baseline.cfg", conll, elmo_files, tmp_path))
    assert nlp.pipe_names == ["ner"]


@pytest.mark.parametrize("config", ["textcat_elmo.cfg", "textcat_baseline.cfg"])
def test_textcat_trains(sst, elmo_files, tmp_path, config):
    nlp = spacy.load(_train(config, sst, elmo_files, tmp_path))
    doc = nlp("A lovely film with lovely performances .")
    assert set(doc.cats) == {"very_negative", "negative", "neutral", "positive", "very_positive"}
    assert sum(doc.cats.values()) == pytest.approx(1.0, abs=1e-4)


ENTITY_TYPES = ("PER", "ORG", "LOC", "MISC")


@pytest.fixture(scope="module")
def which_entities(conll, tmp_path_factory):
    """A multi-label set from the CoNLL slices: each sentence labelled with the entity types it holds (any number of
    the four, none included)."""
    folder = tmp_path_factory.mktemp("multilabel")
    out = []
    for path, name in zip(conll, ("train", "dev")):
        docs = []
        for doc in DocBin().from_disk(path).get_docs(spacy.blank("en").vocab):
            for sentence in doc.sents:
                one = sentence.as_doc()
                one.cats = {label: float(any(e.label_ == label for e in sentence.ents)) for label in ENTITY_TYPES}
                docs.append(one)
        DocBin(docs=docs).to_disk(folder / f"{name}.spacy")
        out.append(folder / f"{name}.spacy")
    return out


@pytest.mark.parametrize("variant", ["elmo", "baseline"])
def test_multilabel_textcat_trains_with_and_without_elmo_reloads_and_scores(which_entities, elmo_files, tmp_path, variant):
    """`spacy-elmo init-config --pipeline textcat_multilabel` (issue 105): the listener feeds spaCy's multi-label
    textcat as it feeds textcat; trained by `spacy train`, reloaded, scored by spaCy's multi-label scorer."""
    from spacy.cli.evaluate import evaluate
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    config = tmp_path / "config.cfg"
    variant_flag = ["--baseline"] if variant == "baseline" else []
    written = CliRunner().invoke(app, ["init-config", str(config), "--pipeline", "textcat_multilabel", *variant_flag])
    assert written.exit_code == 0, written.output
    overrides = {"paths.train": str(which_entities[0]), "paths.dev": str(which_entities[1]), **QUICK}
    if variant == "elmo":
        overrides.update({"paths.elmo_options": str(elmo_files[0]), "paths.elmo_weights": str(elmo_files[1]), **TINY_ELMO})
    train(config, tmp_path / "out", overrides=overrides)
    nlp = spacy.load(tmp_path / "out" / "model-best")
    assert nlp.pipe_names == (["elmo", "textcat_multilabel"] if variant == "elmo" else ["textcat_multilabel"])
    assert nlp.get_pipe_meta("textcat_multilabel").factory == "textcat_multilabel"
    if variant == "elmo":
        assert nlp.get_pipe("elmo").listening_components == ["textcat_multilabel"]
    doc = nlp("Peter Blackburn of the European Commission said in Brussels .")
    assert set(doc.cats) == set(ENTITY_TYPES) and all(0.0 <= p <= 1.0 for p in doc.cats.values())
    scores = evaluate(tmp_path / "out" / "model-best", which_entities[1], silent=True)
    assert scores["cats_score_desc"] == "macro AUC" and 0.0 <= scores["cats_score"] <= 1.0
    assert set(scores["cats_auc_per_type"]) == set(ENTITY_TYPES)


def test_missing_elmo_data_is_an_error_not_zeros(conll, elmo_files, tmp_path):
    nlp = spacy.load(_train("ner_elmo.cfg", conll, elmo_files, tmp_path))
    with nlp.select_pipes(disable=["elmo"]):
        with pytest.raises(ValueError, match="no ELMo layers"):
            nlp("Some text .")


@pytest.fixture(scope="module")
def trained_ner(conll, elmo_files, tmp_path_factory):
    return _train("ner_elmo.cfg", conll, elmo_files, tmp_path_factory.mktemp("trained"), **{"training.max_steps": 20})


TEXT = "Japan began the defence of their Asian Cup title with a lucky 2-1 win against Syria ."


def _predictions(nlp):
    doc = nlp(TEXT)
    return [(e.start, e.end, e.label_) for e in doc.ents], doc


def test_replace_listeners_gives_the_component_its_own_biLM(trained_ner, tmp_path):
    nlp = spacy.load(trained_ner)
    expected_ents, _ = _predictions(nlp)
    with_layers = nlp.get_pipe("elmo")(nlp.make_doc(TEXT))  # a listener reads doc._.elmo
    tok2vec_before = nlp.get_pipe("ner").model.get_ref("tok2vec").predict([with_layers])
    nlp.replace_listeners("elmo", "ner", ["model.tok2vec.input_elmo"])
    assert nlp.get_pipe("elmo").listening_components == []
    assert nlp.get_pipe_config("ner")["model"]["tok2vec"]["input_elmo"]["@architectures"] == "spacy-elmo.ElmoMix.v2"
    nlp.remove_pipe("elmo")
    doc = nlp.make_doc(TEXT)
    numpy.testing.assert_allclose(nlp.get_pipe("ner").model.get_ref("tok2vec").predict([doc])[0], tok2vec_before[0], atol=1e-5)
    assert [(e.start, e.end, e.label_) for e in nlp(TEXT).ents] == expected_ents
    nlp.to_disk(tmp_path / "standalone")
    reloaded = spacy.load(tmp_path / "standalone")
    assert reloaded.pipe_names == ["ner"]
    assert [(e.start, e.end, e.label_) for e in reloaded(TEXT).ents] == expected_ents


def test_sourced_components_keep_working(trained_ner):
    source = spacy.load(trained_ner)
    expected_ents, expected_doc = _predictions(source)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("elmo", source=source)
    nlp.add_pipe("ner", source=source)
    assert nlp.get_pipe("elmo").listening_components == ["ner"]
    doc = nlp(TEXT)  # one sentence, so the sentencizer does not change the segmentation
    assert [(e.start, e.end, e.label_) for e in doc.ents] == expected_ents
    numpy.testing.assert_allclose(doc._.elmo.layers, expected_doc._.elmo.layers, atol=1e-6)


def test_inspect_prints_layer_weights_and_plots(trained_ner, tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    result = CliRunner().invoke(app, ["inspect", str(trained_ner), "--plot", str(tmp_path / "mix.png")])
    assert result.exit_code == 0, result.output
    from spacy_elmo.bilm.precision import cpu_class

    lines = result.output.splitlines()
    assert lines[:2] == ["elmo: the layers are computed by PyTorch at fp32 (precision = 'fp32') on cpu", f"CPU: {cpu_class().describe()}"]
    lines = lines[2:]
    assert lines[0].split() == ["component", "layer", "0", "layer", "1", "layer", "2", "gamma"]
    values = [float(v) for v in lines[1].split()[1:]]
    assert lines[1].split()[0] == "ner"
    assert sum(values[:3]) == pytest.approx(1.0, abs=1e-3)
    weights, gamma = mix_weights(next(n for n in spacy.load(trained_ner).get_pipe("ner").model.walk() if n.name == "scalar_mix"))
    assert values[:3] == pytest.approx([float(w) for w in weights], abs=1e-4)
    assert values[3] == pytest.approx(gamma, abs=1e-4)
    assert (tmp_path / "mix.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    drawn = (tmp_path / "mix.png").read_bytes()
    again = CliRunner().invoke(app, ["inspect", str(trained_ner), "--plot", str(tmp_path / "mix.png")])
    assert again.exit_code == 1 and "--overwrite" in again.output and (tmp_path / "mix.png").read_bytes() == drawn
    assert CliRunner().invoke(app, ["inspect", str(trained_ner), "--plot", str(tmp_path / "mix.png"), "--overwrite"]).exit_code == 0


def test_spacy_package_declares_spacy_elmo_and_carries_the_biLM(trained_ner, tmp_path):
    import json
    import tarfile

    from spacy.cli.package import package

    package(trained_ner, tmp_path, name="elmo_ner_test", version="0.0.1", create_sdist=True, silent=True)
    meta = json.loads((tmp_path / "en_elmo_ner_test-0.0.1" / "meta.json").read_text())
    assert any(r.startswith("spacy-elmo") for r in meta["requirements"])
    archive = tmp_path / "en_elmo_ner_test-0.0.1" / "dist" / "en_elmo_ner_test-0.0.1.tar.gz"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert any(name.endswith("/elmo/model") for name in names)
    assert any(name.endswith("/ner/model") for name in names)


TEXTCAT_ENSEMBLE = """
[nlp]
lang = "en"
pipeline = ["elmo", "textcat"]

[components]

[components.elmo]
factory = "elmo"

[components.textcat]
factory = "textcat"

[components.textcat.model]
@architectures = "spacy.TextCatEnsemble.v2"
nO = null

[components.textcat.model.linear_model]
@architectures = "spacy.TextCatBOW.v3"
exclusive_classes = true
ngram_size = 1
no_output_layer = false

[components.textcat.model.tok2vec]
@architectures = "spacy-elmo.ElmoTok2Vec.v1"

[components.textcat.model.tok2vec.elmo]
@architectures = "spacy-elmo.ElmoListener.v1"
width = 16

[components.textcat.model.tok2vec.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = 32
attrs = ["NORM", "SHAPE"]
rows = [500, 100]
include_static_vectors = false
"""


def test_width_is_known_from_the_config_alone():
    from spacy.ml.models.tok2vec import get_tok2vec_width
    from spacy.util import load_model_from_config
    from thinc.api import Config

    config = Config().from_str(TEXTCAT_ENSEMBLE)
    config["components"]["elmo"]["model"] = tiny_model_config()
    nlp = load_model_from_config(config, auto_fill=True)
    textcat = nlp.get_pipe("textcat")
    assert get_tok2vec_width(textcat.model) == 16 + 32  # before any initialization
    from spacy.training import Example

    examples = []
    for text, label in [("good film .", "pos"), ("bad film .", "neg")]:
        doc = nlp.make_doc(text)
        examples.append(Example.from_dict(doc, {"cats": {"pos": float(label == "pos"), "neg": float(label == "neg")}}))
    optimizer = nlp.initialize(lambda: examples)
    losses = {}
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert losses["textcat"] > 0
    assert set(nlp("good film .").cats) == {"pos", "neg"}
