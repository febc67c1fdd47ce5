"""TensorFlow checkpoints read without TensorFlow, against the same weights in the AllenNLP format.

The fixtures (tests/fixtures/tf, written by its make_fixture.py with TensorFlow 2.21's own saver): one
random-weight biLM as a TF Hub module's variables, as a bilm-tf training checkpoint (with optimizer
slots, the softmax and global_step) and as options.json + weights.hdf5.
"""

import shutil
from pathlib import Path

import h5py
import numpy
import pytest
import spacy
import srsly
from thinc.api import Config
from typer.testing import CliRunner

from spacy_elmo import add_elmo, load_original
from spacy_elmo.bilm import bilm_folder
from spacy_elmo.bilm.tf_bundle import TensorBundle, checkpoint_prefix
from spacy_elmo.bilm.tf_checkpoint import hdf5_name
from spacy_elmo.cli import app
from spacy_elmo.errors import ElmoFormatError, InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
SENTENCES = [["The", "cat", "sat", "on", "the", "mat", "."], ["Hello"], ["a", "verylongtokenindeed", "ünïcödé", "</S>"]]


@pytest.fixture
def folders(tmp_path):
    """The fixtures copied (tests damage them); the hub module gets the options a download writes beside it."""
    for name in ("allennlp", "tfhub", "checkpoint"):
        shutil.copytree(FIXTURES / name, tmp_path / name)
    shutil.copy(FIXTURES / "allennlp" / "options.json", tmp_path / "tfhub" / "options.json")
    return tmp_path


def _layers(folder):
    return bilm_folder(folder).load().embed(SENTENCES)


def _hdf5_arrays(path):
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: arrays.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None)
    return arrays


@pytest.mark.parametrize("layout", ["tfhub", "checkpoint"])
def test_a_checkpoint_gives_the_layers_of_the_same_weights_in_the_allennlp_format(folders, layout):
    expected = _layers(folders / "allennlp")
    found = bilm_folder(folders / layout)
    assert found.format == "tensorflow"
    for ours, theirs in zip(_layers(folders / layout), expected):
        numpy.testing.assert_allclose(ours, theirs, atol=1e-6, rtol=0)


def test_every_entry_point_takes_a_checkpoint_folder(folders, tmp_path):
    expected = _layers(folders / "allennlp")[0]
    nlp = spacy.blank("en")
    add_elmo(nlp, str(folders / "tfhub"))
    numpy.testing.assert_allclose(nlp(" ".join(SENTENCES[0]))._.elmo.layers, expected, atol=1e-6)

    result = CliRunner().invoke(app, ["init-config", str(tmp_path / "ner.cfg"), "--pipeline", "ner", "--bilm", str(folders / "checkpoint")])
    assert result.exit_code == 0, result.output
    config = Config().from_disk(tmp_path / "ner.cfg", interpolate=False)
    assert config["initialize"]["components"]["elmo"]["bilm"] == str((folders / "checkpoint").resolve())
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo", config={"model": dict(config["components"]["elmo"]["model"])})
    elmo.initialize(lambda: [], nlp=nlp, bilm=str(folders / "checkpoint"))
    numpy.testing.assert_allclose(nlp(" ".join(SENTENCES[0]))._.elmo.layers, expected, atol=1e-6)


def test_convert_writes_the_allennlp_format_exactly(folders, tmp_path):
    for layout in ("tfhub", "checkpoint"):
        out = tmp_path / f"converted-{layout}"
        result = CliRunner().invoke(app, ["convert", str(folders / layout), str(out)])
        assert result.exit_code == 0, result.output
        converted, original = _hdf5_arrays(out / "weights.hdf5"), _hdf5_arrays(folders / "allennlp" / "weights.hdf5")
        assert sorted(converted) == sorted(original)
        for name, array in original.items():
            numpy.testing.assert_array_equal(converted[name], array, err_msg=name)
        again = load_original(out / "options.json", out / "weights.hdf5").embed(SENTENCES)
        for ours, theirs in zip(again, _layers(folders / "allennlp")):
            numpy.testing.assert_array_equal(ours, theirs)
        result = CliRunner().invoke(app, ["convert", str(folders / layout), str(out)])
        assert result.exit_code == 1 and "--overwrite" in result.output


def test_a_flipped_byte_in_a_tensor_fails_its_crc_in_one_line(folders):
    prefix = checkpoint_prefix(folders / "checkpoint")
    entry = TensorBundle(prefix).entries["lm/CNN_proj/W_proj"]
    shard = Path(f"{prefix}.data-00000-of-00001")
    data = bytearray(shard.read_bytes())
    data[entry.offset + 5] ^= 0x10
    shard.write_bytes(bytes(data))
    with pytest.raises(ElmoFormatError) as err:
        _layers(folders / "checkpoint")
    message = str(err.value)
    assert "\n" not in message and "CRC32C" in message and "lm/CNN_proj/W_proj" in message


def test_a_flipped_byte_in_the_index_fails_its_crc_in_one_line(folders):
    index = Path(f"{checkpoint_prefix(folders / 'tfhub')}.index")
    data = bytearray(index.read_bytes())
    data[40] ^= 0x01
    index.write_bytes(bytes(data))
    with pytest.raises(ElmoFormatError) as err:
        _layers(folders / "tfhub")
    assert "\n" not in str(err.value) and "CRC32C" in str(err.value)
    index.write_bytes(index.read_bytes()[:-20])
    with pytest.raises(ElmoFormatError, match="truncated or damaged"):
        _layers(folders / "tfhub")


def test_a_missing_tensor_or_a_wrong_shape_is_refused(folders):
    options = srsly.read_json(folders / "checkpoint" / "options.json")
    options["char_cnn"]["n_highway"] = 2
    srsly.write_json(folders / "checkpoint" / "options.json", options)
    with pytest.raises(ElmoFormatError, match="CNN_high_1/W_carry"):
        _layers(folders / "checkpoint")
    options["char_cnn"]["n_highway"] = 1
    options["lstm"]["dim"] = 12
    srsly.write_json(folders / "checkpoint" / "options.json", options)
    with pytest.raises(ElmoFormatError, match="has shape .* but the options ask for"):
        _layers(folders / "checkpoint")


def test_a_checkpoint_without_options_says_where_they_come_from(folders):
    (folders / "tfhub" / "options.json").unlink()
    with pytest.raises(InputError, match="without options.json.*spacy-elmo download"):
        bilm_folder(folders / "tfhub")


def test_the_checkpoint_state_file_names_the_checkpoint_read(folders):
    folder = folders / "checkpoint"
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(folder / f"model.ckpt-3{suffix}", folder / f"model.ckpt-10{suffix}")
    assert checkpoint_prefix(folder) == folder / "model.ckpt-3"  # as `checkpoint` says, not the highest number
    (folder / "checkpoint").unlink()
    assert checkpoint_prefix(folder) == folder / "model.ckpt-10"


@pytest.mark.parametrize(
    "tf_name,name",
    [
        ("bilm/char_embed", "char_embed"),
        ("module/bilm/CNN_high_1/W_carry", "CNN_high_1/W_carry"),
        ("bilm/RNN_1/RNN/MultiRNNCell/Cell0/rnn/lstm_cell/kernel", "RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"),
        ("bilm/RNN_0/RNN/MultiRNNCell/Cell1/rnn/lstm_cell/projection/kernel", "RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0"),
        ("lm/RNN_0/rnn/multi_rnn_cell/cell_1/lstm_cell/bias", "RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/B"),
        ("lm/RNN_1/rnn/lstm_cell/kernel", "RNN_1/RNN/LSTMCell/W_0"),  # one layer: no MultiRNNCell
        ("lm/RNN_0/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel/Adagrad", None),
        ("lm/softmax/W", "softmax/W"),
        ("aggregation/weights", None),
        ("global_step", None),
    ],
)
def test_checkpoint_names_become_the_weights_file_names(tf_name, name):
    assert hdf5_name(tf_name) == name


@pytest.mark.parametrize(
    "record",
    [
        bytes([0x08, 0x01, 0x22, 0x01, 0x05]),  # dtype 1, then the offset (field 4) as bytes
        bytes([0x08, 0x01, 0x10, 0x07]),  # the shape (field 2) as a number
        bytes([0x12, 0x02, 0x10, 0x03]),  # a dimension as a number inside the shape
    ],
)
def test_a_record_field_of_the_wrong_wire_type_is_a_value_error_not_a_type_error(record):
    from spacy_elmo.bilm.tf_bundle import _entry

    with pytest.raises(ValueError, match="where a"):
        _entry(record)
