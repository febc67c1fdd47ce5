"""Where pretraining runs: the device of a gpu_id, and bfloat16 autocast where it has the units."""

import contextlib
import os
from typing import Any, Callable, Optional

import torch

from ..bilm.precision import bf16_supported

Log = Callable[[str], None]


def mixed_precision(device: torch.device, mode: str, log: Log) -> Callable[[], Any]:
    """The context of the forward pass for [training] mixed_precision: "no", or "bf16" / "auto":
    bfloat16 autocast where the device has bfloat16 units, else float32 with one message (emulated
    bfloat16 runs slower than float32)."""
    if mode == "no":
        return contextlib.nullcontext
    if not bf16_supported(device):
        log(
            f"[training] mixed_precision = {mode}: this {device.type.upper()} has no bfloat16 units "
            "(AVX-512 BF16 or AMX on a CPU, compute capability 8+ on a GPU); training in float32"
        )
        return contextlib.nullcontext
    return lambda: torch.autocast(device.type, dtype=torch.bfloat16)


def training_device(gpu_id: Optional[int]) -> torch.device:
    if gpu_id is None:
        if torch.cuda.is_available():
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        return torch.device("cpu")
    if gpu_id < 0:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"gpu_id {gpu_id} asks for CUDA, but torch sees no GPU: use -1 for the CPU")
    return torch.device("cuda", gpu_id)
