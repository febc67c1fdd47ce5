"""Parity with the AllenNLP ELMo fixture, computed by the original TensorFlow implementation."""

import json

import h5py
import numpy
import pytest

from spacy_elmo.bilm import load_original


@pytest.fixture(scope="module")
def fixture_bilm(elmo_fixture):
    return load_original(elmo_fixture / "options.json", elmo_fixture / "lm_weights.hdf5")


def _expected_top_layer(elmo_fixture, k, i):
    with h5py.File(elmo_fixture / f"lm_embeddings_{k}.hdf5", "r") as f:
        forward_backward = f[str(i)][()]
    return numpy.concatenate([forward_backward[0], forward_backward[1]], axis=-1)


def _fixture_batches(elmo_fixture):
    sentences = json.loads((elmo_fixture / "sentences.json").read_text(encoding="utf8"))
    return [[sentences[k][i].split() for k in range(3)] for i in range(10)]


def test_stateful_top_layer_matches_original(elmo_fixture, fixture_bilm):
    fixture_bilm.reset_states()
    worst = 0.0
    for i, batch in enumerate(_fixture_batches(elmo_fixture)):
        outputs = fixture_bilm.embed(batch, stateful=True)
        for k, layers in enumerate(outputs):
            expected = _expected_top_layer(elmo_fixture, k, i)
            assert layers.shape == (3, len(batch[k]), 32)
            assert layers.dtype == numpy.float32
            worst = max(worst, float(numpy.abs(layers[-1] - expected).max()))
    fixture_bilm.reset_states()
    assert worst < 1e-5


def test_stateless_differs_after_first_batch_and_reset_restores(elmo_fixture, fixture_bilm):
    batches = _fixture_batches(elmo_fixture)
    stateless = fixture_bilm.embed(batches[1])
    gap = max(float(numpy.abs(s[-1] - _expected_top_layer(elmo_fixture, k, 1)).max()) for k, s in enumerate(stateless))
    assert gap > 0.1  # the fixture was made with state carried over from batch 0
    fixture_bilm.reset_states()
    first = fixture_bilm.embed(batches[0], stateful=True)
    fixture_bilm.reset_states()
    for k, layers in enumerate(first):
        numpy.testing.assert_allclose(layers[-1], _expected_top_layer(elmo_fixture, k, 0), atol=1e-5)
        # From zero state, stateful and stateless agree.
        numpy.testing.assert_allclose(layers, fixture_bilm.embed([batches[0][k]])[0], atol=1e-5)


def test_token_layer_matches_original(elmo_fixture, fixture_bilm):
    vocab = (elmo_fixture / "vocab_test.txt").read_text(encoding="utf8").split("\n")
    with h5py.File(elmo_fixture / "elmo_token_embeddings.hdf5", "r") as f:
        expected = f["embedding"][()]
    assert len(vocab) == expected.shape[0] == 458
    got = fixture_bilm.embed_words(vocab)
    assert numpy.abs(got - expected).max() < 1e-5


def test_layer_zero_is_the_token_layer_twice(elmo_fixture, fixture_bilm):
    sentence = _fixture_batches(elmo_fixture)[0][0]
    layers = fixture_bilm.embed([sentence])[0]
    tokens = fixture_bilm.embed_words(sentence)
    numpy.testing.assert_allclose(layers[0, :, :16], tokens, atol=1e-6)
    numpy.testing.assert_allclose(layers[0, :, 16:], tokens, atol=1e-6)
