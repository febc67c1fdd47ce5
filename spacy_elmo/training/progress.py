"""Progress of a pretraining run between two log lines: mean loss, speed and time left."""

import time
from typing import Tuple

import torch


class Window:
    """Loss and speed over the steps between two log lines, summed on the device."""

    def __init__(self, device: torch.device) -> None:
        self.start = time.perf_counter()
        self.loss = torch.zeros((), device=device)
        self.n = 0
        self.tokens = 0

    def add(self, loss: torch.Tensor, tokens: int) -> None:
        self.loss += loss * tokens
        self.n += tokens
        self.tokens += tokens

    def result(self) -> Tuple[float, float]:
        mean = float(self.loss) / max(1, self.n)
        return mean, self.tokens / max(1e-9, time.perf_counter() - self.start)


def clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(seconds))


def time_left(step: int, elapsed: float, max_steps: int, max_seconds: float) -> str:
    lefts = []
    if max_steps > 0 and step > 0:
        lefts.append(elapsed / step * (max_steps - step))
    if max_seconds > 0:
        lefts.append(max_seconds - elapsed)
    return clock(max(0.0, min(lefts))) if lefts else "-"
