"""ELMoForManyLangs models: parity with the package's own outputs on a random-weight fixture
(tests/fixtures/elmoformanylangs, written by its make_fixture.py with `elmoformanylangs` 0.0.4.post2),
its token input, and the files it refuses."""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import torch

from spacy_elmo.bilm import ElmoFormatError, save_original
from spacy_elmo.bilm.elmoformanylangs import load_elmoformanylangs, read_folder
from spacy_elmo.bilm.folders import bilm_folder
from spacy_elmo.token_ids import LearnedVocab, read_lexicon

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "elmoformanylangs"
MODEL = FIXTURE / "model"


def _reference(folder: Path = FIXTURE):
    sentences = json.loads((folder / "sentences.json").read_text(encoding="utf-8"))
    arrays = numpy.load(folder / "reference.npz")
    return sentences, [arrays[f"arr_{i}"] for i in range(len(sentences))]


def _copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(MODEL, tmp_path / "model"))


@pytest.mark.parametrize("batch_size", [64, 2])
def test_parity_with_its_own_embedder_every_layer_and_token(batch_size):
    sentences, reference = _reference()
    bilm = load_elmoformanylangs(MODEL)
    out = bilm.embed(sentences, batch_size=batch_size)
    for ours, theirs in zip(out, reference):
        assert ours.shape == theirs.shape == (3, ours.shape[1], 16)
        numpy.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)
    # the cache of token vectors changes nothing, and neither does the second call that uses it
    numpy.testing.assert_allclose(bilm.embed(sentences, batch_size=batch_size)[2], out[2], atol=0, rtol=0)


def test_layer_zero_is_the_token_layer_twice_and_context_free():
    bilm = load_elmoformanylangs(MODEL)
    first, second = bilm.embed([["the", "cat", "sat"], ["a", "cat"]])
    numpy.testing.assert_allclose(first[0, :, :8], first[0, :, 8:], atol=0)
    numpy.testing.assert_allclose(first[0, 1], second[0, 1], atol=1e-6)
    numpy.testing.assert_allclose(bilm.embed_words(["cat"])[0], first[0, 1, :8], atol=1e-6)
    assert not numpy.allclose(first[2, 1], second[2, 1], atol=1e-3)  # layers 1..L see the context


def test_token_input_by_hand():
    options, vocab = read_folder(MODEL)
    chars = read_lexicon(MODEL / "char.dic")
    assert chars["\u3000"] == chars.get("\u3000")  # the " " entry loses its key to stripping, as in its reader
    assert " " not in chars
    W = options.max_characters_per_token
    assert (options.char_vocab, options.word_dim, options.n_words, options.n_characters) == ("learned", 5, 16, len(chars))
    ids = vocab.char_ids("ab", W)
    # [<eow>, a, b, <bow>, <pad>...]: the two markers swapped, exactly as its create_one_batch writes them
    assert ids.tolist() == [chars["<eow>"] + 1, chars["a"] + 1, chars["b"] + 1, chars["<bow>"] + 1] + [chars["<pad>"] + 1] * (W - 4)
    assert vocab.char_ids("<bos>", W)[:3].tolist() == [chars["<eow>"] + 1, chars["<bos>"] + 1, chars["<bow>"] + 1]
    long = vocab.char_ids("internationalization", W)  # cut to W - 2 characters
    assert long[W - 1] == chars["<bow>"] + 1 and long[1] == chars["i"] + 1
    assert vocab.char_ids("ñ", W)[1] == chars["<oov>"] + 1
    words = read_lexicon(MODEL / "word.dic")
    assert vocab.word_id("cat", W) == words["cat"] and vocab.word_id("Cat", W) == words["<oov>"]
    assert vocab.word_id("<bos>", W) == words["<bos>"]


def test_a_pickle_that_is_not_a_plain_state_dict_is_refused(tmp_path):
    folder = _copy(tmp_path)
    state = torch.load(folder / "encoder.pkl", weights_only=True)
    state["extra"] = _Payload()  # an object: loading it would run code from the file
    torch.save(state, folder / "encoder.pkl")
    with pytest.raises(ElmoFormatError, match="refused"):
        load_elmoformanylangs(folder)


class _Payload:
    pass


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda f: (f / "word.dic").write_text((f / "word.dic").read_text(encoding="utf-8") + "extra\t16\n", encoding="utf-8"), "shape"),
        (lambda f: (f / "encoder.pkl").write_bytes((f / "encoder.pkl").read_bytes()[:500]), "truncated or damaged"),
        (lambda f: (f / "char.dic").write_bytes(b"\xff\xfe\x00bad\t1\n"), "not UTF-8"),
        (lambda f: (f / "char.dic").write_text("a\t0\n", encoding="utf-8"), "lacks the special entries"),
        (lambda f: (f / "config.json").write_text('{"config_path": "nowhere.json"}', encoding="utf-8"), "names the network config"),
        (lambda f: (f / "token_embedder.pkl").unlink(), "is not a biLM folder"),
    ],
)
def test_damaged_folders_fail_in_one_line_naming_the_file(tmp_path, damage, message):
    folder = _copy(tmp_path)
    damage(folder)
    with pytest.raises(Exception) as info:
        bilm_folder(folder).load()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_non_finite_weights_are_refused(tmp_path):
    folder = _copy(tmp_path)
    state = torch.load(folder / "token_embedder.pkl", weights_only=True)
    state["projection.bias"][0] = float("nan")
    torch.save(state, folder / "token_embedder.pkl")
    with pytest.raises(ElmoFormatError, match="NaN"):
        load_elmoformanylangs(folder)


def test_a_network_config_it_ships_is_found_by_name(tmp_path):
    folder = _copy(tmp_path)
    (folder / "cnn_tiny.json").unlink()
    (folder / "config.json").write_text('{"config_path": "/somewhere/configs/cnn_50_100_512_4096_sample.json"}', encoding="utf-8")
    options, _ = read_folder(folder)
    assert (options.cell_dim, options.projection_dim, options.n_layers, options.n_highway) == (4096, 512, 2, 2)
    assert (options.char_embed_dim, options.word_dim, options.max_characters_per_token) == (50, 100, 50)


def test_the_original_format_is_refused_for_a_learned_vocabulary(tmp_path):
    with pytest.raises(ElmoFormatError, match="no options.json \\+ weights.hdf5 form"):
        save_original(load_elmoformanylangs(MODEL), tmp_path / "options.json", tmp_path / "weights.hdf5")


def test_vocab_round_trips():
    _, vocab = read_folder(MODEL)
    assert LearnedVocab.from_dict(vocab.to_dict()) == vocab


@pytest.mark.skipif(importlib.util.find_spec("elmoformanylangs") is None, reason="needs the elmoformanylangs package (see make_fixture.py)")
def test_a_fresh_fixture_from_the_package_matches(tmp_path):
    subprocess.run([sys.executable, str(FIXTURE / "make_fixture.py"), str(tmp_path)], check=True, capture_output=True)
    sentences, reference = _reference(tmp_path)
    for ours, theirs in zip(load_elmoformanylangs(tmp_path / "model").embed(sentences), reference):
        numpy.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)
