"""The biLSTM layer's backward (rows finishing at different steps, clipping, projection, a frozen
weight) against finite differences in float64, and bf16 autocast's gradients against float32's."""

import pytest
import torch

from spacy_elmo.bilm.lstm import BiLstmLayer


@pytest.mark.slow
@pytest.mark.parametrize("one_node", [True, False])  # the training loop as one autograd node, or step by step
@pytest.mark.parametrize("hidden_dim,trainable", [(2, "all"), (4, "all"), (2, "hidden_weight frozen")])
def test_layer_gradients_match_finite_differences(hidden_dim, trainable, one_node, monkeypatch):
    monkeypatch.setattr(BiLstmLayer, "one_node_training", one_node)
    torch.manual_seed(0)
    layer = BiLstmLayer(3, 4, hidden_dim, cell_clip=3.0, proj_clip=3.0).double()
    with torch.no_grad():
        layer.bias.normal_()
    params = {
        name: p.detach().clone().requires_grad_(not (trainable != "all" and name == "hidden_weight"))
        for name, p in layer.named_parameters()
    }
    x = torch.randn(2, 5, 3, 3, dtype=torch.float64, requires_grad=True)
    batch_sizes = [3, 3, 2, 1, 0]  # rows finish at different steps; the last step has none
    c0 = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(2, 3, hidden_dim, dtype=torch.float64, requires_grad=True)
    names = list(params)

    def run(x, c0, h0, *weights):
        out, (c, h) = torch.func.functional_call(layer, dict(zip(names, weights)), (x, batch_sizes, (c0, h0)))
        return out, c, h

    inputs = (x, c0, h0, *params.values())
    assert torch.autograd.gradcheck(run, inputs)
    out, c, h = run(*inputs)
    (out.sum() + c.sum() + h.sum()).backward()
    if trainable == "all":
        assert params["hidden_weight"].grad.abs().sum() > 0
    else:
        assert params["hidden_weight"].grad is None


def test_bf16_training_gradients_are_close_to_float32():
    torch.manual_seed(0)
    layer = BiLstmLayer(64, 128, 32, cell_clip=3.0, proj_clip=3.0)
    x = torch.randn(2, 12, 8, 64)
    batch_sizes = [8] * 6 + [5] * 6
    grads = {}
    for mode in ("fp32", "bf16"):
        layer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"):
            out, _ = layer(x, batch_sizes, layer.zero_state(8, x))
        out.float().pow(2).sum().backward()
        grads[mode] = {n: p.grad.clone() for n, p in layer.named_parameters()}
        assert all(g.dtype == torch.float32 for g in grads[mode].values())
    for name, exact in grads["fp32"].items():
        cos = torch.nn.functional.cosine_similarity(grads["bf16"][name].flatten(), exact.flatten(), dim=0)
        assert cos > 0.99, name
