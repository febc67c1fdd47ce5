"""The CPU dropout's masks (four 16-bit numbers per 64-bit draw): the rate asked for in every
lane of a draw, an unbiased scale, gradients through the mask, reproducible under a seed."""

import pytest
import torch

from spacy_elmo.bilm.dropout import dropout

N = 1_000_003  # not a multiple of 4: the last draw is cut


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_rate_in_every_lane_and_an_unbiased_scale(p):
    torch.manual_seed(0)
    x = torch.ones(N)
    y = dropout(x, p)
    dropped = y == 0
    keep = round((1 - p) * 65536)
    assert torch.equal(y[~dropped], torch.full_like(y[~dropped], 65536 / keep))
    # each of the four 16-bit lanes of a 64-bit draw drops at the rate (a lane of a 63-bit draw would not)
    for lane in range(4):
        assert abs(dropped[lane::4].double().mean().item() - p) < 0.005, lane
    assert abs(y.double().mean().item() - 1.0) < 0.01


@pytest.mark.slow
def test_gradient_is_the_mask_and_masks_follow_the_seed():
    x = torch.randn(3, 7, 5, requires_grad=True)
    torch.manual_seed(1)
    y = dropout(x, 0.3)
    y.sum().backward()
    kept = y.detach() != 0
    torch.testing.assert_close(x.grad, kept.float() * (65536 / round(0.7 * 65536)))
    torch.manual_seed(1)
    assert torch.equal(dropout(x, 0.3), y)
    torch.manual_seed(2)
    assert not torch.equal(dropout(x, 0.3), y)


def test_identity_and_edges():
    x = torch.randn(4, 4)
    assert dropout(x, 0.0) is x
    assert dropout(x, 0.5, training=False) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))
    assert dropout(torch.empty(0, 3), 0.5).shape == (0, 3)
    with pytest.raises(ValueError, match="between 0 and 1"):
        dropout(x, 1.5)
