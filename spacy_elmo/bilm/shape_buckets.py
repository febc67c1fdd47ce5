"""Training's bfloat16 products at a bounded set of shapes, so that oneDNN compiles each kernel once.

Under bfloat16 autocast on the CPU, oneDNN compiles (JIT) a kernel for each new shape of a product or
convolution: on an AMX Xeon 10-24 ms, where the product itself takes 1-2 ms (a (M, 8) x (8, 10000) product:
24 ms at a row count it has not seen, 0.9 ms at one it has; float32's BLAS compiles nothing). A training
batch's row counts (tokens, word types, a softmax cluster's rows) change at every step, so a bf16 step
compiled most of its products afresh: slower than float32 on the `cpu` preset. Here a row count is rounded
up to one of 8 sizes per octave (at most 12.5% more rows, zeros, whose results are dropped and whose
gradients are zero), so a run meets a few dozen shapes per product and compiles each once.

Only where it pays: bfloat16 autocast on the CPU with gradients (`active`); everywhere else the shapes are
left as they are, so float32 training and inference compute exactly what they did.
"""

import torch

STEPS_PER_OCTAVE = 8
_SMALLEST_STEP = 8


def active(device: torch.device) -> bool:
    """RETURNS (bool): whether products on `device` are bucketed now: the CPU, bfloat16 autocast, gradients on."""
    return (
        device.type == "cpu"
        and torch.is_grad_enabled()
        and torch.is_autocast_enabled("cpu")
        and torch.get_autocast_dtype("cpu") == torch.bfloat16
    )


def bucket(n: int) -> int:
    """RETURNS (int): `n` rounded up to the next of STEPS_PER_OCTAVE sizes per octave (a multiple of 8 at least):
    61 -> 64, 2040 -> 2048, 2050 -> 2304."""
    if n <= 0:
        return n
    step = max(_SMALLEST_STEP, 1 << max(0, n.bit_length() - 1 - STEPS_PER_OCTAVE.bit_length() + 1))
    return -(-n // step) * step


def padded_rows(x: torch.Tensor, dim: int = 0, value: float = 0.0) -> torch.Tensor:
    """`x` with rows of `value` added along `dim` up to `bucket` of its size (differentiable; `x` itself where
    the size is a bucket already)."""
    n = x.shape[dim]
    extra = bucket(n) - n
    if extra <= 0:
        return x
    shape = list(x.shape)
    shape[dim] = extra
    return torch.cat([x, x.new_full(shape, value)], dim=dim)
