from pathlib import Path

import numpy
import pytest
import spacy
from thinc.api import Config

from spacy_elmo import load_original, save_original
from spacy_elmo.bilm import ElmoFormatError
from spacy_elmo.pipeline.training_config import fill_elmo_config

from ..helpers import tiny_bilm

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize("name", ["ner_elmo.cfg", "textcat_elmo.cfg"])
def test_fill_config_sets_the_bilm_widths_and_paths(tmp_path, name):
    bilm = tiny_bilm(seed=3, n_layers=1, projection_dim=6)
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    original = Config().from_disk(CONFIGS / name, interpolate=False)
    config = fill_elmo_config(original, tmp_path)
    model = config["components"]["elmo"]["model"]
    assert (model["cell_dim"], model["projection_dim"], model["n_layers"]) == (24, 6, 1)
    assert model["filters"] == [[1, 4], [2, 8], [3, 8]]
    # runtime settings are the config's, not the biLM's
    assert model["batch_size"] == original["components"]["elmo"]["model"]["batch_size"]
    assert config["variables"] == {"elmo_width": 12, "elmo_layers": 2}
    assert config["paths"]["elmo_weights"] == str(tmp_path / "weights.hdf5")
    assert original["components"]["elmo"]["model"]["cell_dim"] == 1024, "the input config is left as it was"
    # The filled config builds, initializes and gives the biLM's own layers.
    path = tmp_path / "filled.cfg"
    config.to_disk(path, interpolate=False)
    nlp = spacy.util.load_model_from_config(Config().from_disk(path), auto_fill=True)
    annotations = {"entities": [(0, 1, "X")], "cats": {"POS": 1.0, "NEG": 0.0}}
    nlp.initialize(lambda: [spacy.training.Example.from_dict(nlp.make_doc("A b"), annotations)])
    doc = nlp("Birds sing .")
    expected = load_original(tmp_path / "options.json", tmp_path / "weights.hdf5").embed([["Birds", "sing", "."]])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-5)


def test_fill_config_errors_name_the_fix(tmp_path):
    config = Config().from_disk(CONFIGS / "ner_elmo.cfg", interpolate=False)
    with pytest.raises(ElmoFormatError, match="options.json and weights.hdf5"):
        fill_elmo_config(config, tmp_path)
    save_original(tiny_bilm(), tmp_path / "options.json", tmp_path / "weights.hdf5")
    baseline = Config().from_disk(CONFIGS / "ner_baseline.cfg", interpolate=False)
    with pytest.raises(ValueError, match='factory = "elmo"'):
        fill_elmo_config(baseline, tmp_path)
