"""bf16 training's products at bucketed row counts (bilm/shape_buckets.py): the sizes, and a training step's
loss and gradients the same with the rows padded as without."""

import pytest
import torch

from spacy_elmo.bilm import shape_buckets
from spacy_elmo.bilm.char_ids import CharBatch
from spacy_elmo.bilm.language_model import BiLanguageModel, SharedSoftmax, batch_targets

from ..helpers import tiny_bilm


@pytest.mark.parametrize("n,expected", [(1, 8), (8, 8), (9, 16), (61, 64), (100, 104), (129, 144), (2040, 2048), (2050, 2304)])
def test_a_row_count_goes_up_to_the_next_of_eight_sizes_an_octave(n, expected):
    assert shape_buckets.bucket(n) == expected


def test_buckets_waste_at_most_an_eighth_and_are_few():
    sizes = [shape_buckets.bucket(n) for n in range(1, 20000)]
    assert all(b >= n for n, b in zip(range(1, 20000), sizes))
    assert all(b <= n * 1.125 for n, b in zip(range(64, 20000), sizes[63:]))
    for k in range(6, 14):  # at most 8 distinct sizes in each octave (and its end, the next octave's first)
        assert len({b for n, b in zip(range(1, 20000), sizes) if 2**k <= n < 2 ** (k + 1)} - {2 ** (k + 1)}) <= 8
    assert len(set(sizes)) < 120  # against 19,999 row counts


def test_active_only_for_bf16_autocast_with_gradients_on_the_cpu():
    cpu = torch.device("cpu")
    assert not shape_buckets.active(cpu)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert shape_buckets.active(cpu)
        with torch.no_grad():
            assert not shape_buckets.active(cpu)
    with torch.autocast("cpu", dtype=torch.float16):
        assert not shape_buckets.active(cpu)


def test_padded_rows_adds_rows_of_the_value_and_passes_gradients():
    x = torch.randn(61, 3, requires_grad=True)
    padded = shape_buckets.padded_rows(x, value=2.0)
    assert padded.shape == (64, 3) and torch.equal(padded[:61], x) and bool((padded[61:] == 2.0).all())
    padded[:61].sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    assert shape_buckets.padded_rows(torch.zeros(64, 2)).shape == (64, 2)


@pytest.mark.parametrize("kind", ["full", "adaptive"])
def test_a_bf16_step_is_the_same_with_its_rows_padded(kind, monkeypatch):
    """The loss and every gradient of a bf16 step with the products' rows padded to buckets (char CNN, highway,
    projection, input gates, softmax and its clusters, the weights' gradients) equal those at the rows' own
    counts, up to the order of float32 sums of the bfloat16 products."""
    words = ["<S>", "</S>", "<UNK>"] + [f"w{i}" for i in range(40)]
    ids = {w: i for i, w in enumerate(words)}
    torch.manual_seed(1)
    sentences = [[f"w{int(i)}" for i in torch.randint(0, 40, (n,))] for n in (7, 5, 3, 9, 2)]
    targets = batch_targets(sentences, ids, 2, 0, 1)
    batch = CharBatch.from_sentences(sentences)

    def step(bucketed: bool):
        monkeypatch.setattr(shape_buckets, "active", shape_buckets.active if bucketed else (lambda device: False))
        torch.manual_seed(0)
        softmax = SharedSoftmax(8, len(words), kind=kind, cutoffs=[10, 25] if kind == "adaptive" else (), div_value=2.0)
        lm = BiLanguageModel(tiny_bilm(), softmax, dropout=0.0).train()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = lm(batch, targets)
        loss = (out["forward"] + out["backward"]).float()
        loss.backward()
        return loss.detach(), {name: p.grad.clone() for name, p in lm.named_parameters() if p.grad is not None}

    calls = []
    real_pad = shape_buckets.padded_rows
    monkeypatch.setattr(shape_buckets, "padded_rows", lambda x, *a, **k: calls.append(x.shape) or real_pad(x, *a, **k))
    loss, grads = step(True)
    assert any(shape_buckets.bucket(s[0]) != s[0] for s in calls)  # rows were padded
    plain_loss, plain_grads = step(False)
    torch.testing.assert_close(loss, plain_loss, rtol=2e-3, atol=1e-3)
    assert grads.keys() == plain_grads.keys() and len(grads) > 10
    for name, grad in grads.items():
        scale = float(plain_grads[name].abs().max()) + 1e-6
        assert float((grad - plain_grads[name]).abs().max()) <= 2e-2 * scale, name
