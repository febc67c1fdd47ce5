"""The training path's one-node step loop (`lstm_training`) against the step-by-step loop under
autograd: outputs, final states and every gradient, with rows finishing at different steps, rows
of no step at all, clips engaged, with and without projection; finite differences are in
test_lstm_gradients.py."""

import pytest
import torch

from spacy_elmo.bilm.lstm import BiLstmLayer


def _run(layer, x, batch_sizes, c0, h0, one_node, monkeypatch):
    monkeypatch.setattr(BiLstmLayer, "one_node_training", one_node)
    params = [x, c0, h0, *layer.parameters()]
    for p in params:
        p.grad = None
    out, (c, h) = layer(x, batch_sizes, (c0, h0))
    assert ("LayerRecurrence" in type(out.grad_fn).__name__) == one_node
    torch.manual_seed(5)
    loss = (out * torch.randn_like(out)).sum() + (c * torch.randn_like(c)).sum() + (h * torch.randn_like(h)).sum()
    loss.backward()
    return [out.detach(), c.detach(), h.detach()] + [p.grad.clone() for p in params]


@pytest.mark.parametrize("hidden_dim", [6, 16])  # with a projection, without
@pytest.mark.parametrize("clip", [None, 0.5])
def test_one_node_equals_the_step_loop(hidden_dim, clip, monkeypatch):
    torch.manual_seed(0)
    layer = BiLstmLayer(5, 16, hidden_dim, cell_clip=clip, proj_clip=None if clip is None else 0.3)
    with torch.no_grad():
        layer.bias.normal_()
        layer.hidden_weight.mul_(3)
    batch_sizes = [4, 4, 3, 1, 1, 0]  # the fifth row has no step: its final state is the initial one
    x = torch.randn(2, 6, 5, 5, requires_grad=True)
    c0 = torch.randn(2, 5, 16, requires_grad=True)
    h0 = torch.randn(2, 5, hidden_dim, requires_grad=True)
    loop = _run(layer, x, batch_sizes, c0, h0, False, monkeypatch)
    one = _run(layer, x, batch_sizes, c0, h0, True, monkeypatch)
    names = ["out", "final c", "final h", "grad x", "grad c0", "grad h0"] + [n for n, _ in layer.named_parameters()]
    for name, a, b in zip(names, loop, one):
        torch.testing.assert_close(b, a, atol=1e-6, rtol=1e-5, msg=name)
    out, final_c, final_h = one[:3]
    if clip is not None:  # the clips are engaged
        assert (final_c.abs() == clip).any() and (final_c.abs() < clip).any()
        assert hidden_dim == 16 or (out.abs() == 0.3).any()
    for t, b in enumerate(batch_sizes):
        assert torch.equal(out[:, t, b:], torch.zeros_like(out[:, t, b:]))
    assert torch.equal(final_c[:, 4], c0[:, 4].detach()) and torch.equal(final_h[:, 4], h0[:, 4].detach())
    assert one[3].abs().sum() > 0 and one[4][:, 4].abs().sum() > 0  # gradients reach x and the stepless row's state


def test_taken_under_bf16_autocast_not_under_float16_nor_for_another_cell(monkeypatch):
    from spacy_elmo.bilm import lstm as lstm_module

    layer = BiLstmLayer(3, 4, 2, cell_clip=3.0, proj_clip=3.0)
    x = torch.randn(2, 3, 2, 3)
    state = layer.zero_state(2, x)
    assert "LayerRecurrence" in type(layer(x, [2, 2, 1], state)[0].grad_fn).__name__
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layer(x, [2, 2, 1], state)[0]
    assert "LayerRecurrence" in type(out.grad_fn).__name__ and out.dtype == torch.float32  # the recurrence in float32
    with torch.autocast("cpu", dtype=torch.float16):
        assert "LayerRecurrence" not in type(layer(x, [2, 2, 1], state)[0].grad_fn).__name__
    layer.cell = lambda *args: lstm_module.lstm_cell(*args)
    assert "LayerRecurrence" not in type(layer(x, [2, 2, 1], state)[0].grad_fn).__name__


@pytest.mark.parametrize("hidden_dim", [6, 16])  # with a projection, without
def test_under_bf16_autocast_only_the_large_products_are_bfloat16(hidden_dim, monkeypatch):
    """Mixed precision's one node: the input gates' product in bfloat16 (x and the input weight rounded to bfloat16,
    the product rounded to bfloat16 as autocast gives it), the whole recurrence in float32. Its outputs equal the
    float32 one node run on those rounded input gates, computed by hand here, up to float32 rounding; its
    gradients are within bfloat16's rounding of float32's; the step loop under autocast (bfloat16 step
    products) is further from float32 than it."""
    torch.manual_seed(3)
    layer = BiLstmLayer(5, 16, hidden_dim, cell_clip=0.5, proj_clip=0.3)
    with torch.no_grad():
        layer.bias.normal_()
    batch_sizes = [4, 4, 3, 1, 1, 0]
    x = torch.randn(2, 6, 5, 5, requires_grad=True)
    c0, h0 = torch.zeros(2, 5, 16), torch.zeros(2, 5, hidden_dim)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, (c, h) = layer(x, batch_sizes, (c0, h0))
    # by hand: bfloat16 input gates, then the float32 recurrence
    from spacy_elmo.bilm.lstm_training import layer_recurrence

    bias = (layer.bias + layer.forget_bias).unsqueeze(1)
    xw = torch.baddbmm(bias.bfloat16(), x.detach().reshape(2, 30, 5).bfloat16(), layer.input_weight.detach().bfloat16())
    weights = (layer.hidden_weight.detach(), None if layer.proj_weight is None else layer.proj_weight.detach())
    expected, _ = layer_recurrence(xw.float().view(2, 6, 5, 64), (c0, h0), *weights, batch_sizes, 0.5, 0.3)
    torch.testing.assert_close(out.detach(), expected, atol=1e-5, rtol=1e-4)
    grads = torch.autograd.grad((out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum(), [x, layer.hidden_weight])
    fp32_out, _ = layer(x, batch_sizes, (c0, h0))
    fp32_grads = torch.autograd.grad((fp32_out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum(), [x, layer.hidden_weight])
    for low, high in zip(grads, fp32_grads):
        assert low.dtype == torch.float32 and float((low - high).abs().max()) < 2e-2 * float(high.abs().max())
    monkeypatch.setattr(BiLstmLayer, "one_node_training", False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loop_out, _ = layer(x, batch_sizes, (c0, h0))
    assert (loop_out.float() - fp32_out).abs().max() > (out - fp32_out).abs().max()


@pytest.mark.parametrize("one_node", [True, False])
@pytest.mark.parametrize("steps,batch_sizes", [(0, []), (2, [0, 0])])
def test_no_step_at_all(steps, batch_sizes, one_node, monkeypatch):
    """Every row of length 0: the final state is the initial one, its gradient passes straight through."""
    monkeypatch.setattr(BiLstmLayer, "one_node_training", one_node)
    layer = BiLstmLayer(3, 4, 2, cell_clip=3.0, proj_clip=3.0)
    x = torch.randn(2, steps, 2, 3, requires_grad=True)
    c0, h0 = torch.randn(2, 2, 4, requires_grad=True), torch.randn(2, 2, 2, requires_grad=True)
    out, (c, h) = layer(x, batch_sizes, (c0, h0))
    assert out.shape == (2, steps, 2, 2) and not out.any()
    (c.sum() * 2 + h.sum() * 3 + out.sum()).backward()
    assert torch.equal(c0.grad, torch.full_like(c0, 2.0)) and torch.equal(h0.grad, torch.full_like(h0, 3.0))
    assert layer.hidden_weight.grad is None or not layer.hidden_weight.grad.any()
