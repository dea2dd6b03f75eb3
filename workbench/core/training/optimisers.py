"""Optimiser and learning-rate schedule from the config (torchvision reference-script names)."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from workbench.core.runs.config import TrainConfig


def build_optimizer(
    config: TrainConfig, params: Iterable[torch.nn.Parameter]
) -> torch.optim.Optimizer:
    """SGD with momentum (the transfer-learning tutorial's choice) or AdamW."""
    params = list(params)
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    return torch.optim.SGD(
        params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
    )


def build_scheduler(
    config: TrainConfig, optimizer: torch.optim.Optimizer
) -> torch.optim.lr_scheduler.LRScheduler | None:
    """StepLR (step size and gamma as in the tutorial), cosine over the run, or none."""
    if config.scheduler == "step":
        return torch.optim.lr_scheduler.StepLR(
            optimizer, step_size=config.lr_step_size, gamma=config.lr_gamma
        )
    if config.scheduler == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.epochs)
    return None
