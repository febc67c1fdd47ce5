"""The precisions of the biLM's large products at inference: which there are, which run on this
machine, which one "auto" picks, and the CPU class that decides it.

"fp32" is the original computation. "bf16" and "int8" trade about 1e-2 relative error per product
for speed where the hardware has the units (bfloat16 units; PyTorch's int8 kernels, exact at some
weight range); elsewhere asking for them gives float32 and a warning that says why. "auto" is the
fastest of them that runs exactly as defined here, chosen once per process and device and logged.
"""

import logging
import platform
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, FrozenSet, Optional, Tuple

import torch

from .packed_matmul import int8_available, int8_unavailable_reason, int8_weight_range, onednn_bf16_available

PRECISIONS = ("fp32", "bf16", "int8")
SETTINGS = PRECISIONS + ("auto",)
DTYPES: Dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16, "int8": torch.qint8}
logger = logging.getLogger("spacy_elmo")
_auto: Dict[str, str] = {}


@dataclass(frozen=True)
class CpuClass:
    """What decides the speed of each precision on this CPU.

    capability (str): the vector instructions PyTorch's own kernels use (AVX512, AVX2, ...).
    model (str): the CPU's name.
    int8_range (Optional[int]): the int8 weight range whose products are exact (127 with VNNI or
        AMX, 63 on AVX2 without VNNI), None where int8 does not run.
    bf16_units (bool): whether bfloat16 products run on bfloat16 units (AVX-512 BF16, AMX).
    amx (bool): whether the CPU has AMX tiles.
    """

    capability: str
    model: str
    int8_range: Optional[int]
    bf16_units: bool
    amx: bool

    def describe(self) -> str:
        """RETURNS (str): one line, e.g. "AMD EPYC: AVX512, int8 with 8-bit weights (VNNI), bfloat16 units"."""
        if self.int8_range == 127:
            int8 = "int8 with 8-bit weights (VNNI)"
        elif self.int8_range is not None:
            int8 = f"int8 with weights in [-{self.int8_range}, {self.int8_range}] (no VNNI)"
        else:
            int8 = "no int8"
        parts = [self.capability, int8, "bfloat16 units" if self.bf16_units else "no bfloat16 units"]
        if self.amx:
            parts.append("AMX")
        return f"{self.model}: {', '.join(parts)}"


@lru_cache(maxsize=1)
def cpu_class() -> CpuClass:
    """RETURNS (CpuClass): this CPU as the biLM's products see it (the kernels' own self-tests, so
    settings that restrict them, such as ATEN_CPU_CAPABILITY or FBGEMM_ENABLE_INSTRUCTIONS, show)."""
    flags, model = _cpuinfo()
    return CpuClass(
        capability=torch.backends.cpu.get_cpu_capability(),
        model=model,
        int8_range=int8_weight_range(),
        bf16_units=onednn_bf16_available(),
        amx="amx_bf16" in flags,
    )


def _cpuinfo() -> Tuple[FrozenSet[str], str]:
    """The CPU's flags and name from /proc/cpuinfo (Linux); no flags elsewhere."""
    flags: FrozenSet[str] = frozenset()
    model = platform.processor() or platform.machine() or "unknown CPU"
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf8", errors="replace")
    except OSError:
        return flags, model
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags" and not flags:
            flags = frozenset(value.split())
        elif key.strip() == "model name" and value.strip():
            model = value.strip()
    return flags, model


def bf16_supported(device: torch.device) -> bool:
    """RETURNS (bool): whether `device` has bfloat16 units (CUDA: compute capability 8+; CPU:
    oneDNN's bfloat16 kernels, i.e. AVX-512 BF16 or AMX), for inference and training alike."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return device.type == "cpu" and onednn_bf16_available()


def unavailable_reason(precision: str, device: torch.device) -> str:
    """RETURNS (str): why `precision` does not run on `device` ("" where it does)."""
    if precision == "bf16" and not bf16_supported(device):
        if device.type == "cpu":
            return (
                "precision 'bf16' needs a CPU with bfloat16 matrix units (AVX-512 BF16 or AMX) and a PyTorch build with oneDNN: "
                "this one has none"
            )
        if device.type == "cuda":
            return "precision 'bf16' needs a GPU with bfloat16 support: this one has none"
        return f"precision 'bf16' runs on a CPU with bfloat16 units or on CUDA, and the biLM is on {device.type}"
    if precision == "int8" and device.type != "cpu":
        return f"precision 'int8' runs on the CPU only, and the biLM is on {device.type}"
    if precision == "int8" and not int8_available():
        return f"precision 'int8' needs exact int8 products: {int8_unavailable_reason()}"
    return ""


def auto_precision(device: torch.device) -> str:
    """The fastest precision that runs on `device`: on a CPU, bf16 where it has AMX (its bfloat16
    tiles outrun the int8 kernels), else int8 where its products are exact, else bf16 where it
    has bfloat16 units, else fp32; on CUDA bf16 where supported. Chosen once per device type and
    logged (logger "spacy_elmo", INFO).

    RETURNS (str): "fp32", "bf16" or "int8".
    """
    if device.type not in _auto:
        if device.type == "cpu":
            cpu = cpu_class()
            order = ("bf16", "int8") if cpu.amx else ("int8", "bf16")
            choice = next((p for p in order if not unavailable_reason(p, device)), "fp32")
            where = cpu.describe()
        else:
            choice = "bf16" if not unavailable_reason("bf16", device) else "fp32"
            where = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
        _auto[device.type] = choice
        logger.info("precision 'auto' runs the biLM in %s on %s", choice, where)
    return _auto[device.type]


def resolve(setting: str, device: torch.device) -> Tuple[str, str]:
    """The precision a setting runs at on `device`, and why it is not the one asked for.

    setting (str): "fp32", "bf16", "int8" or "auto".
    RETURNS (Tuple[str, str]): the precision, and a message ("" where it is the one asked for, or auto's choice).
    """
    if setting not in SETTINGS:
        raise ValueError(f"precision must be one of {', '.join(SETTINGS)}, got {setting!r}")
    if setting == "auto":
        return auto_precision(device), ""
    reason = unavailable_reason(setting, device)
    if reason:
        return "fp32", f"{reason}, so the biLM runs in float32 ('fp32'). precision='auto' picks the fastest that runs here."
    return setting, ""
