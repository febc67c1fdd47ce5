"""The Thinc wrapper of the biLM (layers/bilm_model.py) on its own: Docs in, (L + 1, n_tokens, 2P)
arrays out, equal to the torch biLM's own embedding of each sentence, whatever the batching;
gradients, the frozen wrapper and serialization."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from thinc.api import Model

from spacy_elmo.layers.bilm_model import frozen_layer, get_bilm, wrap_bilm
from spacy_elmo.layers.segments import configure_sentences

from ..helpers import tiny_bilm

SENTENCES = [["The", "cat", "sat", "."], ["It", "was", "happy", "!"], ["Shares", "fell"], ["Ünïcode", "ok", "🙂"]]


def _docs(nlp):
    """Two Docs of two sentences each (sentence starts set), and one empty Doc."""
    docs = []
    for first, second in (SENTENCES[:2], SENTENCES[2:]):
        words = first + second
        docs.append(Doc(nlp.vocab, words=words, sent_starts=[i in (0, len(first)) for i in range(len(words))]))
    docs.append(Doc(nlp.vocab, words=[]))
    return docs


@pytest.fixture
def nlp():
    return spacy.blank("en")


def test_each_sentence_gets_the_biLMs_own_layers(nlp):
    bilm = tiny_bilm(seed=1)
    model = wrap_bilm(bilm, configure_sentences())
    outputs = model.predict(_docs(nlp))
    expected = bilm.embed(SENTENCES)
    L1, P2 = bilm.options.n_output_layers, bilm.options.output_dim
    assert [o.shape for o in outputs] == [(L1, 8, P2), (L1, 5, P2), (L1, 0, P2)]
    numpy.testing.assert_allclose(outputs[0], numpy.concatenate(expected[:2], axis=1), atol=1e-5)
    numpy.testing.assert_allclose(outputs[1], numpy.concatenate(expected[2:], axis=1), atol=1e-5)


def test_outputs_do_not_depend_on_batch_size_or_order(nlp):
    bilm = tiny_bilm(seed=2)
    docs = _docs(nlp)
    one = wrap_bilm(bilm, batch_size=1).predict(docs)
    many = wrap_bilm(bilm, batch_size=32).predict(docs[::-1])[::-1]
    for a, b in zip(one, many):
        numpy.testing.assert_allclose(a, b, atol=1e-6)


def test_gradients_reach_the_biLM_unless_frozen(nlp):
    bilm = tiny_bilm(seed=3)
    model = wrap_bilm(bilm)
    docs = _docs(nlp)[:2]
    outputs, backprop = model.begin_update(docs)
    bilm.zero_grad()
    backprop([numpy.ones_like(o) for o in outputs])
    grads = [p.grad for p in bilm.parameters() if p.requires_grad]
    assert grads and all(g is not None for g in grads) and any(float(g.abs().sum()) > 0 for g in grads)

    bilm.zero_grad(set_to_none=True)
    frozen = frozen_layer(model)
    outputs, backprop = frozen.begin_update(docs)
    assert backprop([numpy.ones_like(o) for o in outputs]) == []
    assert all(p.grad is None for p in bilm.parameters())
    for a, b in zip(outputs, model.predict(docs)):
        numpy.testing.assert_array_equal(a, b)


def test_bytes_round_trip_gives_the_same_outputs_and_refuses_other_options(nlp):
    docs = _docs(nlp)
    model = wrap_bilm(tiny_bilm(seed=4))
    again = wrap_bilm(tiny_bilm(seed=5)).from_bytes(model.to_bytes())
    for a, b in zip(model.predict(docs), again.predict(docs)):
        numpy.testing.assert_array_equal(a, b)
    other = wrap_bilm(tiny_bilm(seed=4, cell_dim=20))  # same widths: the options check speaks
    with pytest.raises(ValueError, match="does not match the pipeline config"):
        other.from_bytes(model.to_bytes())


def test_get_bilm_finds_the_torch_module_or_says_there_is_none():
    bilm = tiny_bilm()
    assert get_bilm(frozen_layer(wrap_bilm(bilm))) is bilm
    with pytest.raises(ValueError, match="No biLM inside model 'plain'"):
        get_bilm(Model("plain", lambda model, X, is_train: (X, lambda d: d)))
