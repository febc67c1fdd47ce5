from pathlib import Path

import numpy
import pytest
import spacy
from thinc.api import Config

from spacy_elmo import load_original, save_original
from spacy_elmo.bilm import ElmoFormatError
from spacy_elmo.configs import CONFIG_DIR as CONFIGS, TASKS, task_config
from spacy_elmo.pipeline.training_config import fill_config_text, fill_elmo_config

from ..helpers import tiny_bilm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_fill_config_sets_the_bilm_widths_and_paths_of_a_v1_config(tmp_path):
    """A config of the former format (BiLM.v1 + ElmoListener.v1 with [variables])."""
    bilm = tiny_bilm(seed=3, n_layers=1, projection_dim=6)
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    original = Config().from_disk(FIXTURES / "ner_elmo_v1.cfg", interpolate=False)
    config = fill_elmo_config(original, tmp_path)
    model = config["components"]["elmo"]["model"]
    assert (model["cell_dim"], model["projection_dim"], model["n_layers"]) == (24, 6, 1)
    assert model["filters"] == [[1, 4], [2, 8], [3, 8]]
    # runtime settings are the config's, not the biLM's
    assert model["batch_size"] == original["components"]["elmo"]["model"]["batch_size"]
    assert config["variables"] == {"elmo_width": 12, "elmo_layers": 2}
    assert config["paths"]["elmo_weights"] == str(tmp_path / "weights.hdf5")
    assert original["components"]["elmo"]["model"]["cell_dim"] == 1024, "the input config is left as it was"
    _check_it_gives_the_bilms_layers(config.to_str(interpolate=False), tmp_path)


@pytest.mark.parametrize("name", ["ner_elmo.cfg", "textcat_elmo.cfg"])
def test_fill_config_sets_the_bilm_and_paths_and_keeps_the_text(tmp_path, name):
    bilm = tiny_bilm(seed=3, n_layers=1, projection_dim=6)
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    text = (CONFIGS / name).read_text()
    filled = fill_config_text(text, tmp_path)
    before, after = Config().from_str(text, interpolate=False), Config().from_str(filled, interpolate=False)
    model = after["components"]["elmo"]["model"]
    assert (model["cell_dim"], model["projection_dim"], model["n_layers"], model["n_highway"]) == (24, 6, 1, 1)
    assert model["filters"] == [[1, 4], [2, 8], [3, 8]]
    assert model["sequences"] == before["components"]["elmo"]["model"]["sequences"]
    assert after["paths"]["elmo_weights"] == str(tmp_path / "weights.hdf5")
    # Only the biLM's settings and the two paths changed, in place; comments and order stay.
    changed = [(a, b) for a, b in zip(text.splitlines(), filled.splitlines()) if a != b]
    assert len(text.splitlines()) == len(filled.splitlines())
    keys = {a.split("=")[0].strip() for a, _ in changed}
    assert keys == {"cell_dim", "projection_dim", "n_layers", "char_embed_dim", "filters", "elmo_options", "elmo_weights"}
    # The listener's widths follow by interpolation.
    pipe = "ner" if name.startswith("ner") else "textcat"
    listener = Config().from_str(filled)["components"][pipe]["model"]["tok2vec"]["elmo"]
    assert (listener["projection_dim"], listener["n_layers"]) == (6, 1)
    _check_it_gives_the_bilms_layers(filled, tmp_path)


def test_fill_config_sets_a_pretraining_configs_bilm(tmp_path):
    save_original(tiny_bilm(seed=3, projection_dim=6), tmp_path / "options.json", tmp_path / "weights.hdf5")
    text = (CONFIGS / "pretrain_cpu.cfg").read_text()
    after = Config().from_str(fill_config_text(text, tmp_path), interpolate=False)
    assert (after["bilm"]["cell_dim"], after["bilm"]["projection_dim"], after["bilm"]["filters"]) == (24, 6, [[1, 4], [2, 8], [3, 8]])
    assert after["paths"]["init_bilm"] == str(tmp_path)
    assert after["training"] == Config().from_str(text, interpolate=False)["training"]


def _check_it_gives_the_bilms_layers(text: str, model_dir: Path) -> None:
    """The filled config builds, initializes and gives the biLM's own layers."""
    nlp = spacy.util.load_model_from_config(Config().from_str(text), auto_fill=True)
    annotations = {"entities": [(0, 1, "X")], "cats": {"POS": 1.0, "NEG": 0.0}}
    nlp.initialize(lambda: [spacy.training.Example.from_dict(nlp.make_doc("A b"), annotations)])
    doc = nlp("Birds sing .")
    expected = load_original(model_dir / "options.json", model_dir / "weights.hdf5").embed([["Birds", "sing", "."]])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-5)


def test_fill_config_errors_name_the_fix(tmp_path):
    config = Config().from_disk(CONFIGS / "ner_elmo.cfg", interpolate=False)
    with pytest.raises(ElmoFormatError, match="options.json and weights.hdf5"):
        fill_elmo_config(config, tmp_path)
    save_original(tiny_bilm(), tmp_path / "options.json", tmp_path / "weights.hdf5")
    baseline = Config().from_disk(CONFIGS / "ner_baseline.cfg", interpolate=False)
    with pytest.raises(ValueError, match='factory = "elmo"'):
        fill_elmo_config(baseline, tmp_path)


@pytest.mark.parametrize("task", TASKS)
def test_each_elmo_config_is_its_baseline_plus_the_elmo_part(task):
    """Fairness of every shipped pair: remove the elmo component, its paths and initialize block,
    and put spaCy's Tok2Vec back around the same embed and encode, and the baseline remains."""
    elmo = Config().from_disk(task_config(task), interpolate=False)
    baseline = Config().from_disk(task_config(task, elmo=False), interpolate=False)
    del elmo["components"]["elmo"], elmo["initialize"]["components"]["elmo"]
    del elmo["paths"]["elmo_options"], elmo["paths"]["elmo_weights"]
    elmo["nlp"]["pipeline"].remove("elmo")
    tok2vec = elmo["components"][task]["model"]["tok2vec"]
    assert tok2vec.pop("@architectures") in ("spacy-elmo.ElmoTok2Vec.v1", "spacy-elmo.ElmoTok2Vec.v2")
    listeners = [tok2vec.pop(key) for key in ("elmo", "input_elmo", "output_elmo") if key in tok2vec]
    assert listeners and all(block["@architectures"] == "spacy-elmo.ElmoListener.v2" for block in listeners)
    tok2vec["@architectures"] = "spacy.Tok2Vec.v2"
    assert elmo == baseline
