"""The warm-up-then-cosine schedule: the lr each epoch trains at, against the closed form."""

from __future__ import annotations

import math

import pytest
import torch

from workbench.core.runs.config import TrainConfig
from workbench.core.training.optimisers import build_optimizer, build_scheduler


def _epoch_lrs(epochs: int, lr: float) -> list[float]:
    """The lr of each epoch as a run steps the schedule: once after every epoch."""
    config = TrainConfig(model="small_cnn", weights="none", finetune="full", optimizer="sgd",
                         lr=lr, epochs=epochs, scheduler="warmup_cosine")
    optimizer = build_optimizer(config, [torch.nn.Parameter(torch.zeros(3))])
    scheduler = build_scheduler(config, optimizer)
    seen = []
    for _ in range(epochs):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return seen


def test_eight_epochs_warm_up_over_two_then_follow_the_cosine_to_near_zero():
    # A quarter of 8 epochs is 2 warm-up epochs at 1/3 and 2/3 of the lr; the six after
    # follow 0.5 * (1 + cos(pi * k / 6)), k = 0..5, written out by hand.
    expected = [0.1 / 3, 0.2 / 3, 0.1, 0.1 * (1 + math.sqrt(3) / 2) / 2, 0.1 * 0.75, 0.05,
                0.1 * 0.25, 0.1 * (1 - math.sqrt(3) / 2) / 2]
    assert _epoch_lrs(8, 0.1) == pytest.approx(expected, rel=1e-9)


def test_a_short_run_warms_up_for_one_epoch_and_a_single_epoch_trains_at_the_full_lr():
    # 3 epochs: one warm-up epoch at half the lr, then cos(0) and cos(pi/2).
    assert _epoch_lrs(3, 0.2) == pytest.approx([0.1, 0.2, 0.1], rel=1e-9)
    assert _epoch_lrs(1, 0.2) == pytest.approx([0.2], rel=1e-9)


def test_the_schedule_is_a_choice_the_config_accepts():
    config = TrainConfig(data_root=".", scheduler="warmup_cosine")
    assert not [p for p in config.validate(check_paths=False) if "scheduler" in p]
