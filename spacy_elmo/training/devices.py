"""Where pretraining runs: the device of a gpu_id, and the precision of its forward pass."""

import contextlib
import os
from typing import Any, Callable, Dict, Optional, Tuple

import torch

from ..bilm.measured import MEASURE_ENV, fastest_of, how_measured, machine_key, measured, measuring_on
from ..bilm.precision import bf16_supported
from .checkpoint import rng_state, set_rng_state

Log = Callable[[str], None]


def forward_precision(
    device: torch.device, mode: str, log: Log, seconds_per_token: Callable[[], Dict[str, float]], key: Dict[str, Any]
) -> str:
    """The precision of the forward pass for [training] mixed_precision = mode.

    mode (str): "no" (float32), "bf16" (bfloat16 autocast where the device has bfloat16 units, else
        float32 with one message: emulated bfloat16 runs slower) or "auto": where bf16 runs, the faster
        of the two on this machine, timed once with `seconds_per_token` and kept (bilm/measured.py;
        with measuring off, bf16 wherever it runs).
    seconds_per_token (Callable[[], Dict[str, float]]): times a few steps of the run's model in "fp32"
        and "bf16".
    key (Dict[str, Any]): the sizes that the timing depends on.
    RETURNS (str): "fp32" or "bf16".
    """
    if mode == "no":
        return "fp32"
    if not bf16_supported(device):
        log(
            f"[training] mixed_precision = {mode}: this {device.type.upper()} has no bfloat16 units "
            "(AVX-512 BF16 or AMX on a CPU, compute capability 8+ on a GPU); training in float32"
        )
        return "fp32"
    if mode == "bf16" or not measuring_on():
        return "bf16"
    key = machine_key("pretraining", device=device.type, **key)
    return _measured_choice(key, seconds_per_token, ("fp32", "bf16"), "[training] mixed_precision = auto", "bf16 wherever it runs", log)


def _measured_choice(
    key: Dict[str, Any], seconds_per_token: Callable[[], Dict[str, float]], choices: Tuple[str, str], what: str, off: str, log: Log
) -> str:
    """The kept (or new) measurement's choice among `choices`, said in one line: what chose it, and what choosing
    without a measurement (`off`) would be."""
    entry = measured(key, seconds_per_token, choices=choices, default=choices[0])
    rates = ", ".join(f"{p} {1 / s:,.0f}" for p, s in sorted(entry["seconds"].items()))
    log(f"{what}: {entry['choice']} (tokens/s of a step here: {rates}; {how_measured(entry)}; {MEASURE_ENV}=0 picks {off})")
    return str(entry["choice"])


def autocast(device: torch.device, precision: str) -> Callable[[], Any]:
    """RETURNS (Callable[[], Any]): the context of the forward pass at `precision` ("fp32" or "bf16")."""
    if precision == "bf16":
        return lambda: torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext


def time_step(model: torch.nn.Module, batch: Any, device: torch.device) -> Dict[str, float]:
    """Seconds per token of a forward and backward pass of `model` (a BiLanguageModel) on `batch`, in float32
    and in bf16 autocast, taken in turn. On the CPU float32 is timed with training's products through each
    library (`products_library` then picks the faster of them for a float32 run), and its faster time counts:
    timed with one library alone, float32 lost to bf16 on an AMX Xeon where it was in fact 1.5x faster. No update:
    the caller clears the gradients; the random state (dropout) is put back, so a run that measured goes on as
    one that did not.

    RETURNS (Dict[str, float]): {"fp32": s, "bf16": s}.
    """
    from ..bilm.packed_matmul import onednn_available, set_training_library, training_library

    state, before = rng_state(), training_library()

    def step(precision: str, library: Optional[str] = None) -> Callable[[], None]:
        context = autocast(device, precision)

        def run() -> None:
            set_training_library(library or before)
            with context():
                out = model(batch.chars, batch.targets)
            ((out["forward"] + out["backward"]).float() / max(1, batch.n_tokens)).backward()

        return run

    runs = {"bf16": step("bf16")}
    if device.type == "cpu" and onednn_available():
        runs.update({f"fp32 {library}": step("fp32", library) for library in ("blas", "onednn")})
    else:
        runs["fp32"] = step("fp32")
    try:
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        seconds = fastest_of(runs, repeats=2, sync=sync)
    finally:
        set_training_library(before)
        set_rng_state(state)
    fp32 = min(s for name, s in seconds.items() if name.startswith("fp32"))
    return {"fp32": fp32 / batch.n_tokens, "bf16": seconds["bf16"] / batch.n_tokens}


def products_library(
    device: torch.device, precision: str, log: Log, seconds_per_token: Callable[[], Dict[str, float]], key: Dict[str, Any]
) -> Optional[str]:
    """The library training's products run through on the CPU (bilm/packed_matmul.py): the faster of the default
    BLAS (MKL) and oneDNN for this run's own step on this machine, timed once with `seconds_per_token` and kept
    (bilm/measured.py), as the precision is: which is the faster depends on the CPU's make as much as on its class
    (MKL on AVX2 and on an Intel AVX-512 Xeon, oneDNN on an AVX-512 AMD EPYC), so no rule of the class can say it.

    RETURNS (Optional[str]): "blas" or "onednn"; None where the choice does not arise (a GPU, bf16 autocast, no
        oneDNN) or measuring is off (the class rule then, the same on every run).
    """
    from ..bilm.packed_matmul import class_rule_library, onednn_available

    if device.type != "cpu" or precision != "fp32" or not onednn_available() or not measuring_on():
        return None
    key = machine_key("training-products", **key)
    return _measured_choice(
        key, seconds_per_token, ("blas", "onednn"), "Training's products", f"{class_rule_library()} by the CPU class", log
    )


def time_products(model: torch.nn.Module, batch: Any) -> Dict[str, float]:
    """Seconds per token of a float32 forward and backward pass of `model` on `batch` with training's products
    through each library, taken in turn; like `time_step`, nothing of the run changes.

    RETURNS (Dict[str, float]): {"blas": s, "onednn": s}.
    """
    from ..bilm.packed_matmul import set_training_library, training_library

    state, before = rng_state(), training_library()

    def step(library: str) -> Callable[[], None]:
        def run() -> None:
            set_training_library(library)
            out = model(batch.chars, batch.targets)
            ((out["forward"] + out["backward"]).float() / max(1, batch.n_tokens)).backward()

        return run

    try:
        seconds = fastest_of({library: step(library) for library in ("blas", "onednn")}, repeats=2)
    finally:
        set_training_library(before)
        set_rng_state(state)
    return {library: s / batch.n_tokens for library, s in seconds.items()}


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
