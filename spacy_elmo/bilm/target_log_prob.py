"""log softmax(x W^T + b)[target] per row, without the (N, V) logits in memory.

The softmax's logits are the largest tensors of a training step (7,600 rows x 4,002 head columns
for the `small` preset: 120 MB in float32), and every pass over them (cast, log-softmax, its
backward, the gather's zero-filled gradient) is memory-bound. Here they exist one block of rows at
a time: the forward keeps only each row's log-sum-exp, the backward recomputes a block's logits
and turns them into the gradient in place (`softmax - onehot`, scaled), so each block stays in
cache. The price is the logits' product once more in the backward.

Under autocast the products run in its dtype (bfloat16 on CPU), the exponentials and sums in
float32; the weight's gradient is summed over blocks in float32.
"""

from typing import Any, Optional, Tuple

import torch

from . import shape_buckets
from .packed_matmul import product

# Rows per block: 512 x 4,002 float32 logits are 8 MB, about what stays in this CPU's caches.
BLOCK_ROWS = 512


def target_log_prob(x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """log p(targets[i] | x[i]) under softmax(x @ weight.T + bias).

    x (torch.Tensor): (N, K) inputs.
    weight (torch.Tensor): (V, K), as `nn.Linear` keeps it.
    targets (torch.Tensor): (N,) column ids in [0, V).
    bias (Optional[torch.Tensor]): (V,) or None.
    RETURNS (torch.Tensor): (N,) float32 log-probabilities (float64 for float64 inputs).
    """
    device = x.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype
    n = x.shape[0]
    if shape_buckets.active(x.device):  # rows of zeros (target 0) up to a bucket: their results are dropped
        x, targets = shape_buckets.padded_rows(x), shape_buckets.padded_rows(targets)
    with torch.autocast(device, enabled=False):
        out = _TargetLogProb.apply(x, weight, bias, targets, dtype)
    return out if out.shape[0] == n else out[:n]


def _block_logits(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    logits = product(x, weight.t(), weight).to(_accumulation_dtype(x.dtype))
    return logits if bias is None else logits.add_(bias)


def _accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32, or float64 for float64 inputs."""
    return torch.promote_types(dtype, torch.float32)


class _TargetLogProb(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], targets: torch.Tensor, dtype: torch.dtype
    ) -> torch.Tensor:
        xc, wc = x.to(dtype), weight.to(dtype)
        acc = _accumulation_dtype(dtype)
        bias_f = None if bias is None else bias.to(acc)
        out = x.new_empty(x.shape[0], dtype=acc)
        lse = x.new_empty(x.shape[0], dtype=acc)
        for start in range(0, x.shape[0], BLOCK_ROWS):
            rows = slice(start, start + BLOCK_ROWS)
            logits = _block_logits(xc[rows], wc, bias_f)
            lse[rows] = torch.logsumexp(logits, dim=1)
            out[rows] = logits.gather(1, targets[rows].unsqueeze(1)).squeeze(1) - lse[rows]
        ctx.save_for_backward(xc, wc, bias_f, targets, lse)
        ctx.dtypes = (x.dtype, weight.dtype, None if bias is None else bias.dtype)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:  # type: ignore[override]
        xc, wc, bias_f, targets, lse = ctx.saved_tensors
        x_dtype, w_dtype, b_dtype = ctx.dtypes
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        grad = grad.to(lse.dtype)
        grad_x = torch.empty_like(xc) if need_x else None
        grad_w = torch.zeros(wc.shape, dtype=lse.dtype, device=wc.device) if need_w else None
        grad_b = torch.zeros(wc.shape[0], dtype=lse.dtype, device=wc.device) if need_b else None
        wc_t = wc.t().contiguous() if need_x else None
        for start in range(0, xc.shape[0], BLOCK_ROWS):
            rows = slice(start, start + BLOCK_ROWS)
            # d log p_t / d logits = onehot(t) - softmax; times the incoming gradient.
            g = grad[rows].unsqueeze(1)
            d = _block_logits(xc[rows], wc, bias_f).sub_(lse[rows].unsqueeze(1)).exp_().mul_(-g)
            d.scatter_add_(1, targets[rows].unsqueeze(1), g)
            if grad_b is not None:
                grad_b += d.sum(0)
            d = d.to(wc.dtype)
            if grad_x is not None:
                grad_x[rows] = product(d, wc, wc_t)
            if grad_w is not None:
                grad_w += d.t() @ xc[rows]
        return (
            None if grad_x is None else grad_x.to(x_dtype),
            None if grad_w is None else grad_w.to(w_dtype),
            None if grad_b is None else grad_b.to(b_dtype),
            None,
            None,
        )
