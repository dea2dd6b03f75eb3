"""The learning rate of each schedule, epoch by epoch (one-cycle step by step), against values
worked out by hand from the formulas the docstrings give."""

from __future__ import annotations

import math

import pytest
import torch

from workbench.core.runs.config import TrainConfig
from workbench.core.training.optimisers import (
    build_scheduler,
    one_cycle_factor,
    warmup_cosine_factor,
    warmup_epochs,
)


def _lrs(config: TrainConfig, count: int, **kwargs) -> list[float]:
    """The lr in force at each of ``count`` scheduler steps, starting at lr 1.0 (so the lr is
    the schedule's factor)."""
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=config.lr)
    scheduler = build_scheduler(config, optimizer, **kwargs)
    lrs = []
    for _ in range(count):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


def test_step_multiplies_by_gamma_every_step_size_epochs() -> None:
    config = TrainConfig(scheduler="step", lr=0.1, lr_step_size=2, lr_gamma=0.5, epochs=5)
    assert _lrs(config, 5) == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025], abs=1e-12)


def test_cosine_falls_over_the_runs_epochs() -> None:
    config = TrainConfig(scheduler="cosine", lr=1.0, epochs=4)
    # 0.5 (1 + cos(pi e / 4)) for e = 0..3
    assert _lrs(config, 4) == pytest.approx([1.0, 0.853553, 0.5, 0.146447], abs=1e-6)


def test_warmup_then_cosine() -> None:
    config = TrainConfig(scheduler="warmup_cosine", lr=1.0, epochs=8)
    # 8 epochs: 2 of warm-up at 1/3 and 2/3, then 0.5 (1 + cos(pi k / 6)) for k = 0..5.
    expected = [1 / 3, 2 / 3] + [0.5 * (1 + math.cos(math.pi * k / 6)) for k in range(6)]
    assert _lrs(config, 8) == pytest.approx(expected, abs=1e-9)
    assert [warmup_epochs(n) for n in (1, 2, 3, 7, 8, 9, 16)] == [0, 1, 1, 1, 2, 2, 4]
    assert warmup_cosine_factor(0, 1) == 1.0  # a one-epoch run has no warm-up


def test_one_cycle_climbs_a_quarter_then_falls_and_stays_at_the_end() -> None:
    # 2 epochs of 4 steps: 8 steps, 2 climbing from 1/25 (cosine), then 6 falling to 1/1e5.
    config = TrainConfig(scheduler="onecycle", lr=1.0, epochs=2)
    falling = [1e-5 + (1 - 1e-5) * 0.5 * (1 + math.cos(math.pi * k / 6)) for k in range(6)]
    assert _lrs(config, 8, steps_per_epoch=4) == pytest.approx([0.04, 0.52] + falling,
                                                               abs=1e-9)
    # Without steps_per_epoch the cycle is one step an epoch: 8 epochs give the same 8 values.
    assert _lrs(config.replace(epochs=8), 8) == pytest.approx([0.04, 0.52] + falling, abs=1e-9)
    # Steps past the end (a halved batch lengthens the epochs) stay at the end.
    assert one_cycle_factor(11, 8) == pytest.approx(1e-5)
    assert one_cycle_factor(2, 2) == pytest.approx(1e-5)
    # 4 steps: 1 climbing step, then 3 falling.
    assert [one_cycle_factor(s, 4) for s in range(4)] == pytest.approx(
        [0.04, 1.0, 0.75 + 0.25 * 1e-5, 0.25 + 0.75 * 1e-5], abs=1e-9)


def test_no_scheduler_is_none() -> None:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    assert build_scheduler(TrainConfig(scheduler="none"), optimizer) is None


def test_the_optimiser_gets_every_setting_of_the_config() -> None:
    from workbench.core.training.optimisers import build_optimizer, finetune_stage

    weights = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))]
    adamw = build_optimizer(TrainConfig(optimizer="adamw", lr=0.003, weight_decay=0.02), weights)
    assert type(adamw) is torch.optim.AdamW
    group = adamw.param_groups[0]
    assert (group["lr"], group["weight_decay"], group["fused"]) == (0.003, 0.02, True)
    # Parameter groups (head and backbone) keep their own lr; SGD's momentum and decay.
    groups = [{"params": [weights[0]], "lr": 0.01}, {"params": [weights[1]], "lr": 0.001}]
    sgd = build_optimizer(TrainConfig(optimizer="sgd", lr=0.5, momentum=0.8,
                                      weight_decay=0.03), groups)
    assert type(sgd) is torch.optim.SGD
    assert [(g["lr"], g["momentum"], g["weight_decay"], g["fused"])
            for g in sgd.param_groups] == [(0.01, 0.8, 0.03, True), (0.001, 0.8, 0.03, True)]
    # Fused SGD with momentum starts from zeroed buffers; without momentum it keeps none.
    assert torch.equal(sgd.state[weights[0]]["momentum_buffer"], torch.zeros(3))
    plain = build_optimizer(TrainConfig(optimizer="sgd", momentum=0.0), [weights[0]])
    assert plain.param_groups[0]["momentum"] == 0.0 and len(plain.state) == 0
    # head_then_full: the head alone for head_epochs epochs, then everything.
    staged = TrainConfig(finetune="head_then_full", head_epochs=2)
    assert [finetune_stage(staged, epoch) for epoch in range(4)] == [
        "head", "head", "full", "full"]
    assert finetune_stage(TrainConfig(finetune="full"), 0) is None
