"""`packed_matmul.product`: float32 products under autograd through oneDNN, against float64."""

import pytest
import torch

from spacy_elmo.bilm import packed_matmul
from spacy_elmo.bilm.packed_matmul import PackedWeights, onednn_available, product, product_usable

needs_onednn = pytest.mark.skipif(not onednn_available(), reason="this PyTorch build has no oneDNN linear operators")


@needs_onednn
@pytest.mark.parametrize("rows,k,n", [(7, 5, 3), (205, 128, 512)])
def test_product_and_its_gradients_match_float64(rows, k, n):
    torch.manual_seed(0)
    x = torch.randn(rows, k, requires_grad=True)
    weight = torch.randn(k, n, requires_grad=True)
    upstream = torch.randn(rows, n)
    assert product_usable(x, weight)
    (product(x, weight) * upstream).sum().backward()
    x64, w64 = x.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    out64 = x64 @ w64
    (out64 * upstream.double()).sum().backward()
    scale = k**0.5  # the size of a sum of k unit products, to which float32 rounding is relative
    assert torch.allclose(product(x, weight).double(), out64, atol=1e-5 * scale)
    assert torch.allclose(x.grad.double(), x64.grad, atol=1e-5 * n**0.5)
    assert torch.allclose(weight.grad.double(), w64.grad, atol=1e-5 * rows**0.5)


@needs_onednn
def test_product_takes_a_transposed_copy_and_non_contiguous_rows():
    torch.manual_seed(0)
    weight = torch.randn(8, 6)
    big = torch.randn(4, 5, 8)
    rows = big[:, 2]  # (4, 8) with a stride of 40 between rows
    assert not rows.is_contiguous()
    out = product(rows, weight, weight.t().contiguous())
    assert torch.allclose(out, rows @ weight, atol=1e-5)


def test_product_is_a_plain_matmul_where_onednn_does_not_apply(monkeypatch):
    calls = []
    monkeypatch.setattr(packed_matmul._OneDnnProduct, "apply", lambda *a: calls.append(a))
    x, weight = torch.randn(3, 4), torch.randn(4, 2)
    assert torch.equal(product(x.double(), weight.double()), x.double() @ weight.double())
    assert product(torch.randn(3, 0), torch.randn(0, 2)).abs().sum() == 0  # oneDNN rejects an empty axis
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert product(x, weight).dtype == torch.bfloat16
    monkeypatch.setattr(PackedWeights, "enabled", False)
    assert torch.equal(product(x, weight), x @ weight)
    assert calls == []


@needs_onednn
def test_training_products_go_through_onednn_with_the_gradients_of_the_default_blas(monkeypatch):
    """The softmax's log-likelihood and the char encoder's products (PackedWeights under autograd)."""
    from spacy_elmo.bilm.target_log_prob import target_log_prob

    torch.manual_seed(0)
    x = torch.randn(600, 16)  # more rows than one softmax block
    weight, bias = torch.randn(50, 16) * 0.3, torch.randn(50)
    targets = torch.randint(0, 50, (600,))
    highway = torch.randn(16, 32) * 0.3
    calls = []
    linear = packed_matmul._linear
    monkeypatch.setattr(packed_matmul, "_linear", lambda *a: calls.append(1) or linear(*a))
    grads = {}
    for enabled in (True, False):
        monkeypatch.setattr(PackedWeights, "enabled", enabled)
        calls.clear()
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias, highway)]
        loss = target_log_prob(leaves[0], leaves[1], targets, leaves[2]).sum()
        loss = loss + PackedWeights().matmul(leaves[0], leaves[3], "highway").tanh().sum()
        loss.backward()
        grads[enabled] = [t.grad for t in leaves]
        assert bool(calls) == enabled
    for onednn, blas in zip(grads[True], grads[False]):
        assert torch.allclose(onednn, blas, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("by_blas", [False, True])
def test_the_char_cnn_trains_alike_as_conv1d_or_as_one_product_of_the_windows(by_blas, monkeypatch):
    """Training's char CNN, as Conv1d (oneDNN's convolution) or, where `training_products_by_blas` (AVX2), as one
    product of every char window: the same token vectors and gradients as an independent Conv1d + max computation."""
    import spacy_elmo.bilm.char_encoder as char_encoder
    from spacy_elmo.bilm.char_ids import cut_char_axis

    from ..helpers import tiny_bilm

    monkeypatch.setattr(char_encoder, "training_products_by_blas", lambda: by_blas)
    bilm = tiny_bilm(seed=3).train()
    encoder = bilm.char_encoder
    type_chars = bilm.batch([["The", "cat", "sat", "on", "a", "mat", "."], ["Zürich", "x" * 60]]).type_chars
    pooled = encoder._pool(type_chars)
    pooled.pow(2).sum().backward()
    ours = {name: p.grad.clone() for name, p in encoder.named_parameters() if p.grad is not None}
    encoder.zero_grad()
    chars = cut_char_axis(type_chars, encoder.options.max_width, pad=encoder.vocab.pad_id)
    x = torch.nn.functional.embedding(chars, encoder.char_embed).transpose(1, 2)
    expected = torch.cat([torch.nn.functional.conv1d(x, c.weight, c.bias).max(dim=-1).values for c in encoder.conv_layers], -1)
    expected.pow(2).sum().backward()
    torch.testing.assert_close(pooled, expected, rtol=1e-5, atol=1e-6)
    assert ours.keys() == {name for name, p in encoder.named_parameters() if p.grad is not None} and len(ours) >= 3
    for name, p in encoder.named_parameters():
        if p.grad is not None:
            torch.testing.assert_close(ours[name], p.grad, rtol=1e-5, atol=1e-6)
