"""The accuracy rows of ``workbench bench``: how the seeds' results become a verdict."""

from __future__ import annotations

import pytest

from workbench.bench.reference.accuracy_benchmark import QUICK, accuracy_rows


def test_the_accuracy_target_is_one_less_the_spread_of_the_paired_differences():
    ours = [(0.80, 10.0), (0.70, 10.0), (0.75, 10.0)]
    plain = [(0.78, 12.0), (0.74, 12.0), (0.75, 12.0)]
    accuracy, wall = accuracy_rows(ours, plain, QUICK)

    assert accuracy.workbench == pytest.approx(0.75)
    assert accuracy.baseline == pytest.approx((0.78 + 0.74 + 0.75) / 3)
    # differences +0.02, -0.04, 0: stdev 0.0306, standard error 0.0176
    assert accuracy.details["spread_of_difference"] == pytest.approx(0.017638, abs=1e-5)
    assert accuracy.target == pytest.approx(1 - 0.017638 / accuracy.baseline, abs=1e-3)
    assert accuracy.met  # 0.991x is within the spread
    assert wall.ratio == pytest.approx(36.0 / 30.0) and wall.met


def test_a_clear_accuracy_loss_is_not_met():
    ours = [(0.60, 10.0), (0.61, 10.0), (0.59, 10.0)]
    plain = [(0.70, 10.0), (0.70, 10.0), (0.71, 10.0)]
    accuracy, _ = accuracy_rows(ours, plain, QUICK)
    assert accuracy.met is False
