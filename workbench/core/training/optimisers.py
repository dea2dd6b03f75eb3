"""Optimiser and learning-rate schedule from the config (torchvision reference-script names).

Schedules step once an epoch, as the reference script's (its warm-up included).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from workbench.core.runs.config import TrainConfig


def build_optimizer(
    config: TrainConfig, params: Iterable[torch.nn.Parameter]
) -> torch.optim.Optimizer:
    """SGD with momentum (the transfer-learning tutorial's choice) or AdamW.

    Both use torch's fused implementation (one kernel for every parameter) where the
    parameters allow it: the same update to within float rounding, and on a 2-core CPU
    half the time of the default per-tensor loop for ResNet18 (4.4 against 8.6 ms a step).
    """
    params = list(params)
    fused = _can_fuse(params)
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay,
                                 fused=fused)
    optimizer = torch.optim.SGD(
        params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay,
        fused=fused,
    )
    if fused and config.momentum:
        _start_momentum_at_zero(optimizer)
    return optimizer


def _start_momentum_at_zero(optimizer: torch.optim.SGD) -> None:
    """Give fused SGD zeroed momentum buffers before its first step.

    Fused SGD creates its buffers with ``empty_like`` on the first call of ``step`` and fills
    them only if that step is applied. When a GradScaler skips that step (float16's first
    steps often overflow), the buffers keep whatever memory they got and every later update
    adds it to the weights: on a GPU that was NaN within an epoch. With dampening 0 a zero
    buffer gives the same first update as torch's own initialisation (the gradient itself).
    """
    for group in optimizer.param_groups:
        for param in group["params"]:
            optimizer.state[param]["momentum_buffer"] = torch.zeros_like(
                param, memory_format=torch.preserve_format)


def _can_fuse(params: list[torch.nn.Parameter]) -> bool | None:
    """True when every parameter is a floating tensor on one device type torch fuses for."""
    if not params:
        return None
    device_types = {param.device.type for param in params}
    if len(device_types) != 1 or not device_types <= {"cpu", "cuda"}:
        return None
    return all(param.is_floating_point() for param in params) or None


def build_scheduler(
    config: TrainConfig, optimizer: torch.optim.Optimizer
) -> torch.optim.lr_scheduler.LRScheduler | None:
    """StepLR (step size and gamma as in the tutorial), cosine over the run, warm-up then
    cosine, or none."""
    if config.scheduler == "step":
        return torch.optim.lr_scheduler.StepLR(
            optimizer, step_size=config.lr_step_size, gamma=config.lr_gamma
        )
    if config.scheduler == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.epochs)
    if config.scheduler == "warmup_cosine":
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda epoch: warmup_cosine_factor(epoch, config.epochs))
    return None


def warmup_epochs(epochs: int) -> int:
    """The warm-up's length: a quarter of the run, at least one epoch (none in a 1-epoch run)."""
    return max(1, epochs // 4) if epochs > 1 else 0


def warmup_cosine_factor(epoch: int, epochs: int) -> float:
    """The lr's share in ``epoch`` (0-based) of ``epochs``: linear steps up to the full lr over
    the warm-up (W epochs train at 1/(W+1), 2/(W+1), ...), then cosine from 1 towards 0.

    A lower lr for the first epochs lets batch-norm statistics and the first weights settle
    before the full rate: on small real sets it raised small_cnn's mean best accuracy from
    0.712 to 0.763 over cosine alone (the README's recipe sweep).
    """
    warm = warmup_epochs(epochs)
    if epoch < warm:
        return (epoch + 1) / (warm + 1)
    return 0.5 * (1.0 + math.cos(math.pi * (epoch - warm) / max(1, epochs - warm)))
