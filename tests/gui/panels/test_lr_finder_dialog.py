"""The learning-rate finder's plot reads as lrs: the tick labels drawn on its log axis are the
lr at their place, with no SI-prefix factor beside the axis title, and the suggestion's line
stands where its lr is written."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from PySide6.QtGui import QImage, QPainter

from workbench.core.training.tuning.lr_finder import LrFinderResult
from workbench.gui.panels.lr_finder_dialog import LrFinderDialog

SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def read_tick(text: str) -> float:
    """The number a tick label shows: '0.001', '1', '10⁻⁵' or '2·10⁻⁵'."""
    match = re.fullmatch(r"(?:(\d+(?:\.\d+)?)·)?10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", text)
    if match:
        return float(match.group(1) or 1) * 10 ** int(match.group(2).translate(SUPERSCRIPT))
    return float(text)


def drawn_ticks(dialog: LrFinderDialog) -> list[tuple[float, float]]:
    """(x on the axis, in log10(lr), lr its label reads) of every tick label as drawn."""
    axis = dialog.plot.getPlotItem().getAxis("bottom")
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    painter.end()
    low, high = axis.range
    ticks = []
    for rect, _flags, text in texts:
        x = low + (rect.center().x() / axis.width()) * (high - low)
        ticks.append((x, read_tick(text)))
    return ticks


def show_sweep(qtbot, lrs: np.ndarray, suggestion: float, stopped_early: bool
               ) -> LrFinderDialog:
    dialog = LrFinderDialog()
    qtbot.addWidget(dialog)
    dialog.resize(760, 560)
    dialog.show()
    qtbot.waitExposed(dialog)
    losses = 2.0 - np.tanh(np.log10(lrs) - math.log10(suggestion))  # steepest at suggestion
    dialog.show_result(LrFinderResult(list(lrs), list(losses), suggestion, stopped_early))
    qtbot.wait(50)  # the axis lays its ticks out on the next pass
    return dialog


@pytest.mark.parametrize(("last_lr", "stopped_early"), [(1.0, False), (1e-2, True)],
                         ids=["whole-sweep", "diverged-at-1e-2"])
def test_the_lr_axis_reads_real_lrs_and_the_marker_stands_at_the_suggestion(
        qtbot, last_lr, stopped_early):
    suggestion = 1e-3
    dialog = show_sweep(qtbot, np.logspace(-5, math.log10(last_lr), 60), suggestion,
                        stopped_early)
    axis = dialog.plot.getPlotItem().getAxis("bottom")

    assert "(x" not in axis.labelString(), axis.labelString()  # no "(x0.001)" factor
    ticks = drawn_ticks(dialog)
    assert len(ticks) >= 3, ticks
    for x, lr in ticks:  # each label is the lr at its place on the axis
        assert math.log10(lr) == pytest.approx(x, abs=0.02), (x, lr, ticks)
    assert 1e-5 in [pytest.approx(lr) for _, lr in ticks]

    assert dialog.marker.isVisible()
    assert 10 ** dialog.marker.value() == pytest.approx(suggestion, rel=1e-9)
    x_nearest, lr_nearest = min(ticks, key=lambda tick: abs(tick[0] - dialog.marker.value()))
    assert abs(x_nearest - dialog.marker.value()) < 0.02  # the line stands on a label,
    assert lr_nearest == pytest.approx(suggestion), ticks  # and the label reads 0.001
    assert dialog.apply_button.text() == "Use 1.0e-3"
