"""context_log_probs: what each direction predicts at a position reads only the context on its side."""

import numpy
import pytest
import torch

from spacy_elmo.bilm.char_ids import CharBatch
from spacy_elmo.bilm.context_prediction import context_log_probs
from spacy_elmo.bilm.language_model import BiLanguageModel, SharedSoftmax, batch_targets
from spacy_elmo.training.vocab import Vocabulary

from ..helpers import tiny_bilm

WORDS = ["<S>", "</S>", "<UNK>", "the", "bank", "river", "money", "flows", "high"]


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, rtol=0, atol=1e-6)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(3)
    return tiny_bilm(seed=2), SharedSoftmax(8, len(WORDS), "adaptive", cutoffs=[4])


def test_neither_direction_reads_the_token_it_predicts(model):
    bilm, softmax = model
    sentences = [["the", "bank", "flows", "high"], ["the", "river", "flows", "high"], ["money", "bank", "flows", "high"]]
    forward, backward = context_log_probs(bilm, softmax, sentences, [1, 1, 1])
    assert forward.shape == backward.shape == (3, len(WORDS))
    assert torch.allclose(forward.exp().sum(1), torch.ones(3), atol=1e-5)
    # another target token: both predictions the same; another left context: only the forward one moves
    # the same within float rounding: AVX-512 kernels may round a batch's rows apart in the last bits, where a changed
    # context moves a prediction by 1e-2
    assert same(forward[0], forward[1]) and same(backward[0], backward[1])
    assert not torch.allclose(forward[0], forward[2]) and same(backward[0], backward[2])
    # a right context cut short moves only the backward prediction
    f, b = context_log_probs(bilm, softmax, [["the", "bank", "flows"]], [1])
    assert same(f[0], forward[0]) and not torch.allclose(b[0], backward[0])


def test_the_predictions_are_the_training_objectives(model):
    """Summed over a sentence's positions (plus the end and start markers' terms), the log-probabilities of the
    actual tokens are minus the forward and backward NLLs BiLanguageModel trains on."""
    bilm, softmax = model
    vocab = Vocabulary(WORDS)
    sentence = ["the", "river", "bank", "flows", "high"]
    n = len(sentence)
    forward, backward = context_log_probs(bilm, softmax, [sentence] * n, list(range(n)), batch_size=2)
    ids = torch.tensor([vocab.ids[w] for w in sentence])
    rows = torch.arange(n)
    batch = CharBatch.from_sentences([sentence])
    with torch.no_grad():
        top = bilm(batch)[-1][0]
        end = softmax.log_prob(top[n : n + 1, :8])[0, vocab.eos_id]  # the forward LM's </S> after the last token
        start = softmax.log_prob(top[1:2, 8:])[0, vocab.bos_id]  # the backward LM's <S> before the first
        nll = BiLanguageModel(bilm, softmax, dropout=0.0).eval()(batch, batch_targets([sentence], vocab.ids, 2, 0, 1))
    assert float(forward[rows, ids].sum() + end) == pytest.approx(-float(nll["forward"]), abs=1e-4)
    assert float(backward[rows, ids].sum() + start) == pytest.approx(-float(nll["backward"]), abs=1e-4)


def test_batches_give_the_same_predictions(model):
    bilm, softmax = model
    sentences = [["the", "bank"], ["money", "flows", "high", "the", "river"], ["high"]]
    one = context_log_probs(bilm, softmax, sentences, [0, 3, 0], batch_size=1)
    three = context_log_probs(bilm, softmax, sentences, [0, 3, 0], batch_size=3)
    assert torch.allclose(one[0], three[0], atol=1e-5) and torch.allclose(one[1], three[1], atol=1e-5)


def test_a_position_outside_its_sentence_is_refused(model):
    bilm, softmax = model
    with pytest.raises(ValueError, match="position 2 is outside sentence 0"):
        context_log_probs(bilm, softmax, [["the", "bank"]], [2])
    with pytest.raises(ValueError, match="one position a sentence"):
        context_log_probs(bilm, softmax, [["the", "bank"]], [0, 1])


def test_context_layers_are_the_states_each_direction_predicts_a_token_from():
    from spacy_elmo.bilm.context_prediction import boundary_states, context_layers

    bilm = tiny_bilm(seed=4).eval()
    P = bilm.options.projection_dim
    tokens = ["the", "bank", "flows", "high"]
    with torch.no_grad():
        full = bilm(bilm.batch([tokens]))[:, 0].numpy()  # (L + 1, T + 2, 2P), <S> at step 0
    bos, eos = boundary_states(bilm)
    found = context_layers(full[:, 1:-1], [0, 1, 3], [(0, 4)], bos, eos)
    assert found.shape == (3, bilm.options.n_output_layers, 2 * P)
    for k, i in enumerate([0, 1, 3]):
        # token i sits at step i + 1: the forward state at step i and the backward state at step i + 2
        assert numpy.allclose(found[k, :, :P], full[:, i, :P], atol=1e-6)
        assert numpy.allclose(found[k, :, P:], full[:, i + 2, P:], atol=1e-6)


def test_context_layers_never_read_the_token_and_respect_each_sequence():
    from spacy_elmo.bilm.context_prediction import boundary_states, context_layers

    bilm = tiny_bilm(seed=5).eval()
    bos, eos = boundary_states(bilm)
    texts = [["the", "bank", "flows", "high"], ["the", "BANKS", "flows", "high"], ["the", "river", "flows", "high"]]
    with torch.no_grad():
        layers = bilm(bilm.batch(texts))[:, :, 1:-1].numpy()
    vectors = [context_layers(layers[:, row], [1], [(0, 4)], bos, eos) for row in range(3)]
    assert numpy.allclose(vectors[0], vectors[1], atol=1e-6) and numpy.allclose(vectors[0], vectors[2], atol=1e-6)
    # the token's own vectors do differ: the target layers read its characters
    assert not numpy.allclose(layers[:, 0, 1], layers[:, 1, 1], atol=1e-3)
    # a sequence's first and last tokens take the markers' states: the same at any length
    with torch.no_grad():
        alone = bilm(bilm.batch([["bank"]]))[:, 0, 1:-1].numpy()
    edge = context_layers(alone, [0], [(0, 1)], bos, eos)
    first = context_layers(layers[:, 0], [0], [(0, 4)], bos, eos)
    last = context_layers(layers[:, 0], [3], [(0, 4)], bos, eos)
    assert numpy.allclose(edge[..., : bos.shape[1]], first[..., : bos.shape[1]], atol=1e-6)
    assert numpy.allclose(edge[..., bos.shape[1] :], last[..., bos.shape[1] :], atol=1e-6)
    # two sequences side by side (a long sentence cut into windows): the context stops at the cut
    cut = context_layers(layers[:, 0], [1, 2], [(0, 2), (2, 4)], bos, eos)
    assert numpy.allclose(cut[0, :, bos.shape[1] :], eos, atol=1e-6) and numpy.allclose(cut[1, :, : bos.shape[1]], bos, atol=1e-6)
    with pytest.raises(ValueError, match="no sequence"):
        context_layers(layers[:, 0], [3], [(0, 2)], bos, eos)


def test_substitutes_from_stored_context_vectors_are_what_the_two_language_models_predict(model):
    """The top layer's context-only vectors through the softmax give each usage the substitutes that
    context_log_probs computes by running the biLM (product of the two directions), the target's forms left out."""
    from spacy_elmo.bilm.context_prediction import boundary_states, context_layers
    from spacy_elmo.change.substitutes import Substitutes

    bilm, softmax = model
    sentences = [["the", "bank", "flows", "high"], ["money", "river", "flows"]]
    positions = [1, 0]
    forward, backward = context_log_probs(bilm, softmax, sentences, positions)
    bos, eos = boundary_states(bilm)
    with torch.no_grad():
        tops = []
        for tokens, at in zip(sentences, positions):
            layers = bilm.eval()(bilm.batch([tokens]))[:, 0, 1:-1].numpy()
            tops.append(context_layers(layers, [at], [(0, len(tokens))], bos, eos)[0, -1])
    subs = Substitutes(softmax, WORDS)
    ids, scores = subs.top(numpy.stack(tops), k=3, forms={"BANK", "money"})
    both = forward + backward
    both[:, [WORDS.index(w) for w in ("<S>", "</S>", "<UNK>", "bank", "money")]] = float("-inf")
    expected = both.topk(3, dim=1)
    assert (ids == expected.indices.numpy()).all()
    assert numpy.allclose(scores, expected.values.numpy(), atol=1e-5)
