"""Optimiser, learning-rate schedule and fine-tuning stages from the config (torchvision
reference-script names).

Schedules step once an epoch, as the reference script's (its warm-up included).

Fine-tune mode 'head_then_full' (fastai's ``fine_tune``) trains in two stages: for
``head_epochs`` epochs only the head learns on the frozen backbone (its BatchNorm in eval mode,
as 'last_layer'), then everything learns, the backbone at ``lr * backbone_lr_factor``. The
optimiser is built once with two parameter groups (head, backbone), so the schedule and the
optimiser's state run on across the switch; the stage follows from the epoch number alone, so
a run resumed in either stage trains as the uninterrupted one would.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from workbench.core.models.building import apply_finetune_mode, set_train_mode
from workbench.core.models.heads import classifier_head
from workbench.core.runs.config import TrainConfig

HEAD_STAGE = "head"
FULL_STAGE = "full"
ParamsOrGroups = Iterable[torch.nn.Parameter] | Iterable[dict[str, Any]]


def finetune_stage(config: TrainConfig, epoch: int) -> str | None:
    """The stage of 0-based ``epoch``: 'head' or 'full' with 'head_then_full', None with a
    single-stage mode."""
    if config.finetune != "head_then_full":
        return None
    return HEAD_STAGE if epoch < config.head_epochs else FULL_STAGE


def stage_mode(config: TrainConfig, epoch: int) -> str:
    """The single-stage fine-tune mode ``epoch`` trains like: 'last_layer' in the head stage,
    'full' after it, the config's own mode otherwise."""
    stage = finetune_stage(config, epoch)
    if stage is None:
        return config.finetune
    return "last_layer" if stage == HEAD_STAGE else "full"


def apply_finetune_stage(model: nn.Module, config: TrainConfig, epoch: int) -> str:
    """Freeze or unfreeze ``model`` for ``epoch``'s stage and set its train mode (the frozen
    backbone's BatchNorm and dropout in eval mode); returns the mode it trains like."""
    mode = stage_mode(config, epoch)
    apply_finetune_mode(model, mode)
    set_train_mode(model, mode)
    return mode


def optimiser_params(model: nn.Module, config: TrainConfig) -> list[Any]:
    """What ``build_optimizer`` gets for ``config``'s mode: the trainable parameters, or with
    'head_then_full' two groups, the head at ``lr`` and the backbone at
    ``lr * backbone_lr_factor`` (named 'head' and 'backbone'), every parameter trainable."""
    params = apply_finetune_mode(model, config.finetune)
    if config.finetune != "head_then_full":
        return params
    head_ids = {id(param) for param in classifier_head(model).parameters()}
    head = [param for param in params if id(param) in head_ids]
    backbone = [param for param in params if id(param) not in head_ids]
    return [{"params": head, "lr": config.lr, "name": "head"},
            {"params": backbone, "lr": config.lr * config.backbone_lr_factor,
             "name": "backbone"}]


def build_optimizer(config: TrainConfig, params: ParamsOrGroups) -> torch.optim.Optimizer:
    """SGD with momentum (the transfer-learning tutorial's choice) or AdamW.

    ``params``: the parameters, or parameter groups (dicts, as ``optimiser_params`` gives for
    'head_then_full') whose own ``lr`` overrides ``config.lr``.

    Both use torch's fused implementation (one kernel for every parameter) where the
    parameters allow it: the same update to within float rounding, and on a 2-core CPU
    half the time of the default per-tensor loop for ResNet18 (4.4 against 8.6 ms a step).
    """
    params = list(params)
    fused = _can_fuse([param for item in params for param in
                       (item["params"] if isinstance(item, dict) else [item])])
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
    config: TrainConfig, optimizer: torch.optim.Optimizer, steps_per_epoch: int = 1
) -> torch.optim.lr_scheduler.LRScheduler | None:
    """StepLR (step size and gamma as in the tutorial), cosine over the run, warm-up then
    cosine, one-cycle (stepped every batch: ``steps_per_epoch`` sets its length), or none.
    ``steps_each_batch`` says which of them the caller steps after every optimiser step
    rather than once an epoch."""
    if config.scheduler == "step":
        return torch.optim.lr_scheduler.StepLR(
            optimizer, step_size=config.lr_step_size, gamma=config.lr_gamma
        )
    if config.scheduler == "cosine":
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda epoch: cosine_factor(epoch, config.epochs))
    if config.scheduler == "warmup_cosine":
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda epoch: warmup_cosine_factor(epoch, config.epochs))
    if config.scheduler == "onecycle":
        total = max(1, config.epochs * steps_per_epoch)
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: one_cycle_factor(step, total))
    return None


def steps_each_batch(config: TrainConfig) -> bool:
    """Whether ``config``'s schedule advances after every optimiser step (one-cycle) rather
    than once an epoch."""
    return config.scheduler == "onecycle"


# fastai's fit_one_cycle: a quarter of the steps climbing from lr / 25 to lr, then cosine
# down to lr / 1e5.
ONE_CYCLE_WARM_SHARE = 0.25
ONE_CYCLE_START_DIVISOR = 25.0
ONE_CYCLE_END_DIVISOR = 1e5


def one_cycle_factor(step: int, total: int) -> float:
    """The lr's share at optimiser step ``step`` (0-based) of ``total``: cosine from
    1/25 up to 1 over the first quarter, then cosine down to 1/1e5. Steps past ``total``
    (a batch halved after running out of memory makes epochs longer) stay at the end."""
    warm = max(1, round(total * ONE_CYCLE_WARM_SHARE))
    start, end = 1.0 / ONE_CYCLE_START_DIVISOR, 1.0 / ONE_CYCLE_END_DIVISOR
    if step < warm:
        return _cosine_between(start, 1.0, step / warm)
    rest = max(1, total - warm)
    return _cosine_between(1.0, end, min(1.0, (step - warm) / rest))


def _cosine_between(first: float, last: float, progress: float) -> float:
    return last + (first - last) * 0.5 * (1.0 + math.cos(math.pi * progress))


def warmup_epochs(epochs: int) -> int:
    """The warm-up's length: a quarter of the run, at least one epoch (none in a 1-epoch run)."""
    return max(1, epochs // 4) if epochs > 1 else 0


def cosine_factor(epoch: int, epochs: int) -> float:
    """The lr's share in ``epoch`` (0-based) of ``epochs``: 0.5 (1 + cos(pi epoch / epochs)),
    from 1 towards 0, and 0 from ``epochs`` on.

    Computed from the epoch, as warm-up cosine and one-cycle are, rather than torch's
    CosineAnnealingLR, which multiplies the previous lr by a ratio and keeps its length in
    its saved state: a run resumed with more epochs (``--epochs 8 --resume`` after 4) trained
    its fifth epoch at lr 0 and then climbed back towards the full lr. Here the schedule spans
    the resumed run's epochs: its fifth epoch of 8 trains at half the lr.
    """
    return 0.5 * (1.0 + math.cos(math.pi * min(epoch, epochs) / max(1, epochs)))


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
