"""The training path's fused LSTM cell (`lstm_cell_training`, one autograd node with a hand-written
backward) and its whole step loop as one node (`lstm_training`) against the plain path
(`lstm_cell` under autograd): cell values and gradients, the whole pretraining objective's loss
and every parameter's gradient on sentences of mixed lengths, and finite differences in float64."""

import pytest
import torch

from spacy_elmo.bilm import CharBatch
from spacy_elmo.bilm.language_model import BiLanguageModel, SharedSoftmax, batch_targets
from spacy_elmo.bilm.lstm import BiLstmLayer, lstm_cell, lstm_cell_training

from ..helpers import tiny_bilm

C = 16


def _inputs(dtype=torch.float32):
    torch.manual_seed(0)
    z = (torch.randn(2, 5, 4 * C, dtype=dtype) * 3).requires_grad_()  # gates into both tails
    c = (torch.randn(2, 5, C, dtype=dtype) * 2).requires_grad_()  # some cells clipped
    return z, c


@pytest.mark.parametrize("clip", [None, 3.0])
@pytest.mark.parametrize("used", ["c and h", "h only", "c only"])
def test_values_and_gradients_equal_the_plain_cell(clip, used):
    z, c = _inputs()
    grad_c, grad_h = torch.randn(2, 5, C), torch.randn(2, 5, C)
    results = []
    for cell in (lstm_cell, lstm_cell_training):
        c_new, h = cell(z, c, C, clip)
        outputs, grads = [], []
        if used != "h only":
            outputs.append(c_new), grads.append(grad_c)
        if used != "c only":
            outputs.append(h), grads.append(grad_h)
        results.append((c_new.detach(), h.detach(), *torch.autograd.grad(outputs, [z, c], grads)))
    plain, fused = results
    if clip is not None:
        assert (plain[0].abs() == clip).any() and (plain[0].abs() < clip).any()  # the clip is engaged
    for name, a, b in zip(("c", "h", "grad z", "grad c"), plain, fused):
        torch.testing.assert_close(b, a, atol=2e-6, rtol=1e-5, msg=name)


@pytest.mark.slow
def test_fused_cell_matches_finite_differences():
    z, c = _inputs(torch.float64)
    assert torch.autograd.gradcheck(lambda z, c: lstm_cell_training(z, c, C, 3.0), (z, c))


def _objective(lm: BiLanguageModel, sentences):
    batch = CharBatch.from_sentences(sentences, max_chars=lm.bilm.options.max_characters_per_token)
    words = sorted({w for s in sentences for w in s})
    ids = {w: i + 3 for i, w in enumerate(words)}
    targets = batch_targets(sentences, ids, unk_id=0, bos_id=1, eos_id=2)
    out = lm(batch, targets)
    return (out["forward"] + out["backward"]) / (2 * out["n_tokens"])


def test_training_path_equals_the_plain_path_in_loss_and_every_gradient(monkeypatch):
    sentences = [
        ["The", "cat", "sat", "on", "the", "mat", "."],
        ["Dogs", "bark", "."],
        ["A"],
        ["Shares", "of", "the", "bank", "rose", "two", "percent", "on", "Monday", "."],
    ]
    bilm = tiny_bilm()
    n_words = 3 + len({w for s in sentences for w in s})
    lm = BiLanguageModel(bilm, SharedSoftmax(bilm.options.projection_dim, n_words), dropout=0.0).train()
    layers = [m for m in lm.modules() if isinstance(m, BiLstmLayer)]
    assert layers
    results = {}
    # plain: any cell but `lstm_cell` itself runs as given, under autograd; step loop: the fused
    # cell at each step (what autocast trains with); one node: the whole loop (lstm_training)
    for path in ("plain", "step loop", "one node"):
        monkeypatch.setattr(BiLstmLayer, "one_node_training", path == "one node")
        for layer in layers:
            layer.cell = (lambda *args: lstm_cell(*args)) if path == "plain" else lstm_cell
        lm.zero_grad()
        loss = _objective(lm, sentences)
        loss.backward()
        results[path] = (loss.detach(), {n: p.grad.clone() for n, p in lm.named_parameters() if p.grad is not None})
    loss_plain, grads_plain = results["plain"]
    assert any("layers" in n for n in grads_plain)
    for path in ("step loop", "one node"):
        loss_fused, grads_fused = results[path]
        torch.testing.assert_close(loss_fused, loss_plain, atol=1e-6, rtol=1e-6)
        assert grads_fused.keys() == grads_plain.keys()
        for name, grad in grads_plain.items():
            assert grad.abs().sum() > 0, name
            torch.testing.assert_close(grads_fused[name], grad, atol=1e-6, rtol=1e-4, msg=f"{path}: {name}")


def test_inference_does_not_take_the_training_cell(monkeypatch):
    from spacy_elmo.bilm import lstm as lstm_module

    def refuse(*args):
        raise AssertionError("the training cell ran at inference")

    monkeypatch.setattr(lstm_module, "lstm_cell_training", refuse)
    bilm = tiny_bilm()
    batch = CharBatch.from_sentences([["A", "short", "one"], ["Two"]], max_chars=bilm.options.max_characters_per_token)
    with torch.no_grad():
        assert len(bilm(batch)) == bilm.options.n_layers + 1
