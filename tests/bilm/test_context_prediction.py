"""context_log_probs: what each direction predicts at a position reads only the context on its side."""

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
