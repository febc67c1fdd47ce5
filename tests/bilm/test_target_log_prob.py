import pytest
import torch

from spacy_elmo.bilm import target_log_prob as module
from spacy_elmo.bilm.target_log_prob import target_log_prob


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    # Several blocks, the last one partial, on test-sized inputs.
    monkeypatch.setattr(module, "BLOCK_ROWS", 4)


def _inputs(n=11, k=5, v=7, dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, k, generator=g, dtype=dtype, requires_grad=True)
    w = torch.randn(v, k, generator=g, dtype=dtype, requires_grad=True)
    b = torch.randn(v, generator=g, dtype=dtype, requires_grad=True)
    t = torch.randint(0, v, (n,), generator=g)
    return x, w, b, t


@pytest.mark.parametrize("with_bias", [True, False])
def test_values_are_the_log_softmax_at_the_targets(with_bias):
    x, w, b, t = _inputs()
    bias = b if with_bias else None
    logits = x @ w.t() + (b if with_bias else 0)
    expected = torch.log_softmax(logits, dim=1).gather(1, t.unsqueeze(1)).squeeze(1)
    got = target_log_prob(x, w, t, bias)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, expected.detach(), rtol=1e-12, atol=1e-12)
    got32 = target_log_prob(x.float(), w.float(), t, None if bias is None else bias.float())
    assert got32.dtype == torch.float32
    torch.testing.assert_close(got32.double(), expected.detach(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("with_bias", [True, False])
def test_gradients_match_finite_differences(with_bias):
    x, w, b, t = _inputs()
    inputs = (x, w, b) if with_bias else (x, w)

    def f(*args):
        return target_log_prob(args[0], args[1], t, args[2] if with_bias else None)

    assert torch.autograd.gradcheck(f, inputs)


def test_gradients_equal_the_dense_computation_in_float32():
    x, w, b, t = _inputs(dtype=torch.float32)
    weights = torch.rand(x.shape[0])
    (target_log_prob(x, w, t, b) * weights).sum().backward()
    got = [p.grad.clone() for p in (x, w, b)]
    for p in (x, w, b):
        p.grad = None
    (torch.log_softmax(x @ w.t() + b, 1).gather(1, t.unsqueeze(1)).squeeze(1) * weights).sum().backward()
    for g, p in zip(got, (x, w, b)):
        assert g.dtype == p.dtype
        torch.testing.assert_close(g, p.grad, rtol=1e-5, atol=1e-6)


def test_under_bf16_autocast_products_are_bf16_and_results_close():
    x, w, b, t = _inputs(n=64, k=32, v=50, dtype=torch.float32)
    exact = target_log_prob(x, w, t, b)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = target_log_prob(x, w, t, b)
    assert low.dtype == torch.float32
    assert not torch.equal(low, exact)  # the products did run in bfloat16
    torch.testing.assert_close(low, exact, rtol=0, atol=0.1)
    low.sum().backward()
    assert x.grad.dtype == torch.float32 and w.grad.dtype == torch.float32
