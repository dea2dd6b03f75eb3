"""The lr finder's suggestion on loss records whose steepest fall is known: the suggestion is
the lr of the point at the centre of the steepest stretch (to 1e-9: one lr step is 26%), not a
neighbour of it."""

from __future__ import annotations

import math

import pytest

from workbench.core.training.tuning.lr_finder import suggest_lr

# 61 lrs, ten a decade, from 1e-7 to 1e-1.
LRS = [10 ** (-7 + 0.1 * step) for step in range(61)]
STEEPEST = 30  # lr 1e-4
LOWEST = 52


def _losses() -> list[float]:
    """A loss falling as 2 - tanh(1.5 (log10 lr + 4)): steepest at 1e-4 (step 30), where the
    fall over any stretch of equal width centred there is the largest; lowest at step 52,
    then rising 0.5 a step. A small slope over the whole range makes the losses on either
    side of step 30 unequal (it changes every stretch's fall alike, not where it is steepest)."""
    losses = []
    for step, lr in enumerate(LRS):
        decade = math.log10(lr)
        losses.append(2.0 - math.tanh(1.5 * (decade + 4.0)) - 0.02 * decade)
        if step > LOWEST:
            losses[-1] = losses[LOWEST] + 0.5 * (step - LOWEST)
    return losses


def test_the_suggestion_is_the_lr_at_the_steepest_fall_exactly() -> None:
    losses = _losses()
    assert min(range(61), key=losses.__getitem__) == LOWEST
    assert suggest_lr(LRS, losses) == pytest.approx(LRS[STEEPEST], rel=1e-9)


def test_the_suggestion_follows_the_steepest_fall_when_it_moves_by_one_step() -> None:
    # The same curve one step later: the suggestion moves with it, by one lr step.
    losses = _losses()
    later = [losses[0], *losses[:-1]]
    assert suggest_lr(LRS, later) == pytest.approx(LRS[STEEPEST + 1], rel=1e-9)


def test_non_finite_losses_are_left_out_and_the_suggestion_stays() -> None:
    losses = _losses()
    losses[12] = math.nan  # a step whose loss could not be read
    losses[58:] = [math.inf] * 3  # divergence
    assert suggest_lr(LRS, losses) == pytest.approx(LRS[STEEPEST], rel=1e-9)


def test_too_few_finite_losses_give_no_suggestion() -> None:
    losses = [math.nan] * 61
    losses[20], losses[21] = 2.0, 1.0
    assert suggest_lr(LRS, losses) is None
    assert suggest_lr(LRS[:3], [2.0, 1.5, 1.0], skip_start=0, skip_end=0) == pytest.approx(
        LRS[1])
    assert suggest_lr(LRS[:2], [2.0, 1.0], skip_start=0, skip_end=0) is None


def test_a_loss_that_only_rises_gives_no_suggestion() -> None:
    assert suggest_lr(LRS, [1.0 + 0.01 * step for step in range(61)]) is None
