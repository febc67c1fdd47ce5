"""The pretraining optimizer and its learning-rate schedule."""

from typing import Any, Callable

import torch

from ..bilm.language_model import BiLanguageModel
from .settings import TrainingSettings


def make_optimizer(lm: BiLanguageModel, settings: TrainingSettings, device: torch.device) -> torch.optim.Optimizer:
    """One parameter group, or with `bilm_lr_scale` != 1 two: the biLM's (at that fraction of
    the learning rate) and the softmax's."""
    name, scale, lr = settings.optimizer.lower(), settings.bilm_lr_scale, settings.learn_rate
    params: Any = list(lm.parameters())
    if scale != 1.0:
        params = [{"params": list(lm.bilm.parameters()), "lr": lr * scale}, {"params": list(lm.softmax.parameters())}]
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, fused=device.type == "cuda" or None)
    # adagrad, as in the original training code (the settings allow no other)
    return torch.optim.Adagrad(params, lr=lr, initial_accumulator_value=1.0)


def lr_schedule(settings: TrainingSettings) -> Callable[[int], float]:
    warmup, max_steps, decay = settings.warmup_steps, settings.max_steps, settings.decay

    def factor(step: int) -> float:
        warm = min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0
        if decay == "linear":
            return warm * max(0.0, 1.0 - step / max_steps)
        return warm

    return factor
