"""Reading and writing the original file format, against the NumPy transcription of the spec."""

import json
import re

import h5py
import numpy
import pytest
import srsly
import torch

from spacy_elmo.bilm import ElmoFormatError, ElmoOptions, load_original, save_original

from ..helpers import tiny_bilm
from .reference import reference_layers

SENTENCES = [["The", "cat", "sat", "."], ["Zürich", "🙂", "x" * 60], ["a"], []]

VARIANTS = {
    "released_layout": {},
    "tanh": {"activation": "tanh"},
    "no_skip_connections": {"use_skip_connections": False},
    "no_char_projection": {"filters": ((1, 4), (2, 4)), "n_highway": 2},  # F == P == 8
    "no_lstm_projection": {"cell_dim": 8},  # C == P: no W_P_0
    "training_file_261_chars": {"n_characters": 261},
    "one_layer": {"n_layers": 1},
    "no_clipping": {"cell_clip": None, "proj_clip": None},
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_save_then_load_matches_the_spec(tmp_path, variant):
    bilm = tiny_bilm(seed=1, **VARIANTS[variant])
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    with h5py.File(tmp_path / "weights.hdf5", "r") as f:
        assert ("CNN_proj" in f) == (variant != "no_char_projection")
        assert f["char_embed"].shape == (261, 4)
    options = srsly.read_json(tmp_path / "options.json")
    loaded = load_original(tmp_path / "options.json", tmp_path / "weights.hdf5")
    ours = loaded.embed(SENTENCES)
    direct = bilm.embed(SENTENCES)
    for sentence, got, before in zip(SENTENCES, ours, direct):
        numpy.testing.assert_array_equal(got, before)  # exact round trip
        expected = reference_layers(tmp_path / "weights.hdf5", options, sentence)
        assert got.shape == expected.shape
        numpy.testing.assert_allclose(got, expected, atol=1e-5)


def test_resave_is_identical(tmp_path):
    bilm = tiny_bilm(seed=2)
    save_original(bilm, tmp_path / "a.json", tmp_path / "a.hdf5")
    save_original(load_original(tmp_path / "a.json", tmp_path / "a.hdf5"), tmp_path / "b.json", tmp_path / "b.hdf5")
    with h5py.File(tmp_path / "a.hdf5", "r") as a, h5py.File(tmp_path / "b.hdf5", "r") as b:
        names = []
        a.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
        assert len(names) > 10
        for name in names:
            numpy.testing.assert_array_equal(a[name][()], b[name][()])
    assert srsly.read_json(tmp_path / "a.json") == srsly.read_json(tmp_path / "b.json")


def test_one_layer_alias_path_is_accepted(tmp_path):
    bilm = tiny_bilm(seed=3, n_layers=1)
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    with h5py.File(tmp_path / "weights.hdf5", "r+") as f:
        for d in range(2):
            f.move(f"RNN_{d}/RNN/MultiRNNCell/Cell0/LSTMCell", f"RNN_{d}/RNN/LSTMCell")
            del f[f"RNN_{d}/RNN/MultiRNNCell"]
    loaded = load_original(tmp_path / "options.json", tmp_path / "weights.hdf5")
    for got, expected in zip(loaded.embed(SENTENCES), bilm.embed(SENTENCES)):
        numpy.testing.assert_array_equal(got, expected)


def test_extra_training_keys_are_ignored(tmp_path):
    bilm = tiny_bilm()
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    data = srsly.read_json(tmp_path / "options.json")
    data.update({"bidirectional": True, "dropout": 0.1, "n_tokens_vocab": 793471, "unroll_steps": 20})
    srsly.write_json(tmp_path / "options.json", data)
    loaded = load_original(tmp_path / "options.json", tmp_path / "weights.hdf5")
    assert loaded.options.matches(bilm.options)
    assert loaded.options.extra["n_tokens_vocab"] == 793471


def test_missing_files_name_the_file(tmp_path):
    bilm = tiny_bilm()
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    with pytest.raises(ElmoFormatError, match="nowhere.hdf5"):
        load_original(tmp_path / "options.json", tmp_path / "nowhere.hdf5")
    with pytest.raises(ElmoFormatError, match="nowhere.json"):
        load_original(tmp_path / "nowhere.json", tmp_path / "weights.hdf5")


def test_truncated_or_foreign_weights_file(tmp_path):
    bilm = tiny_bilm()
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    data = (tmp_path / "weights.hdf5").read_bytes()
    (tmp_path / "truncated.hdf5").write_bytes(data[: len(data) // 2])
    with pytest.raises(ElmoFormatError, match="truncated.hdf5.*truncated or not an HDF5 file"):
        load_original(tmp_path / "options.json", tmp_path / "truncated.hdf5")
    (tmp_path / "text.hdf5").write_text("not weights")
    with pytest.raises(ElmoFormatError, match="text.hdf5"):
        load_original(tmp_path / "options.json", tmp_path / "text.hdf5")


def test_mismatched_options_name_the_dataset(tmp_path):
    save_original(tiny_bilm(), tmp_path / "options.json", tmp_path / "weights.hdf5")
    tiny_bilm(projection_dim=6).options.to_file(tmp_path / "other.json")
    with pytest.raises(ElmoFormatError, match="weights.hdf5.*CNN_proj/W_proj.*does not match"):
        load_original(tmp_path / "other.json", tmp_path / "weights.hdf5")
    tiny_bilm(n_layers=3).options.to_file(tmp_path / "deeper.json")
    with pytest.raises(ElmoFormatError, match="no dataset 'RNN_0/RNN/MultiRNNCell/Cell2"):
        load_original(tmp_path / "deeper.json", tmp_path / "weights.hdf5")


def test_nan_weights_are_refused(tmp_path):
    bilm = tiny_bilm()
    with torch.no_grad():
        bilm.layers[1].hidden_weight[0, 0, 0] = float("nan")
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    with pytest.raises(ElmoFormatError, match="NaN"):
        load_original(tmp_path / "options.json", tmp_path / "weights.hdf5")


@pytest.mark.parametrize(
    "broken",
    [
        {"lstm": {"dim": 8}},
        {"lstm": {"dim": 8, "projection_dim": 4, "n_layers": 1}, "char_cnn": {"filters": [[1, 4]]}},
        {"lstm": {"dim": 4, "projection_dim": 8, "n_layers": 1}, "char_cnn": {"embedding": {"dim": 4}, "filters": [[1, 4]]}},
    ],
)
def test_invalid_options_explain_themselves(broken):
    with pytest.raises(ElmoFormatError, match="Invalid ELMo options"):
        ElmoOptions.from_json(broken)


def test_corrupt_options_json(tmp_path):
    (tmp_path / "options.json").write_text("{not json")
    with pytest.raises(ElmoFormatError, match="options.json is not valid JSON"):
        ElmoOptions.from_file(tmp_path / "options.json")


@pytest.mark.parametrize(
    "change,named",
    [
        (("lstm", "use_skip_connections", "false"), "use_skip_connections must be true or false"),
        (("lstm", "dim", 1024.7), "cell_dim must be an integer"),
        (("lstm", "cell_clip", -3.0), "cell_clip must be a positive number"),
        (("lstm", "proj_clip", "3"), "proj_clip must be a positive number"),
        (("char_cnn", "filters", [[0, 32]]), "filters must be [width, number] pairs"),
        (("char_cnn", "filters", [[1, "32"]]), "filters must be [width, number] pairs"),
        (("char_cnn", "n_highway", True), "n_highway must be an integer"),
    ],
)
def test_options_json_is_read_strictly(change, named):
    """A value of the wrong type or range is an error naming it, not read as something else
    ("false" as true, 1024.7 as 1024) and not a ZeroDivisionError later."""
    data = tiny_bilm().options.to_json()
    section, key, value = change
    data[section][key] = value
    with pytest.raises(ElmoFormatError, match=re.escape(named)):
        ElmoOptions.from_json(data)
    data[section][key] = ElmoOptions().to_json()[section][key]
    ElmoOptions.from_json(data)  # the released value is fine


def test_integral_floats_are_integers():
    data = tiny_bilm().options.to_json()
    data["lstm"]["dim"] = 24.0
    assert ElmoOptions.from_json(data).cell_dim == 24 and isinstance(ElmoOptions.from_json(data).cell_dim, int)


def test_options_that_do_not_fit_the_weights_fail_before_allocating(tmp_path, monkeypatch):
    """n_layers 200 with a 2-layer file: the shapes are checked on torch's meta device, so no
    real model (2.2 GB at the released size) is built before the error."""
    import spacy_elmo.bilm.weights as weights

    save_original(tiny_bilm(), tmp_path / "options.json", tmp_path / "weights.hdf5")
    data = json.loads((tmp_path / "options.json").read_text())
    data["lstm"]["n_layers"] = 200
    (tmp_path / "options.json").write_text(json.dumps(data))
    built = []
    real = weights.BiLM

    class Recording(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(next(self.parameters()).device.type)

    monkeypatch.setattr(weights, "BiLM", Recording)
    with pytest.raises(ElmoFormatError, match="Cell2"):
        load_original(tmp_path / "options.json", tmp_path / "weights.hdf5")
    assert built == ["meta"]
