"""Horizontal bar chart of images per class, train and val side by side."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics, QPalette
from PySide6.QtWidgets import QWidget

from workbench.core.file_names import shown_name

TRAIN_COLOUR = "#3b82c4"
VAL_COLOUR = "#e69b3a"
BAR_HEIGHT = 0.38
ROW_PIXELS = 22
MAX_LABEL_CHARS = 24


class ClassCountsChart(pg.PlotWidget):
    """One row per class (first class at the top): a train bar and a val bar under it.

    The bars are created once and updated with ``setOpts``; class names are the left axis's
    ticks. Mouse panning and zooming are off: it is a figure, not an explorer.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._class_names: list[str] = []
        self._setup_plot()
        self.train_bars = pg.BarGraphItem(
            x0=[], y=[], width=[], height=BAR_HEIGHT, brush=TRAIN_COLOUR, pen=None
        )
        self.val_bars = pg.BarGraphItem(
            x0=[], y=[], width=[], height=BAR_HEIGHT, brush=VAL_COLOUR, pen=None
        )
        self.addItem(self.train_bars)
        self.addItem(self.val_bars)
        legend = self.addLegend(offset=(-8, 8), labelTextColor=self._text_colour())
        legend.addItem(self.train_bars, "train")
        legend.addItem(self.val_bars, "val")
        self.setMinimumHeight(160)

    def _setup_plot(self) -> None:
        palette = self.palette()
        self.setBackground(palette.color(QPalette.ColorRole.Base))
        item = self.getPlotItem()
        item.setMouseEnabled(x=False, y=False)
        item.setMenuEnabled(False)
        item.hideButtons()
        item.invertY(True)
        item.showGrid(x=True, y=False, alpha=0.25)
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            axis.setPen(palette.color(QPalette.ColorRole.Mid))
            axis.setTextPen(self._text_colour())
        # After setPen, which recolours the axis label with the pen's colour.
        item.setLabel("bottom", "images", color=self._text_colour())
        item.getAxis("left").setStyle(tickLength=0)

    def _text_colour(self) -> str:
        return self.palette().color(QPalette.ColorRole.Text).name()

    def set_counts(
        self,
        class_names: Sequence[str],
        train_counts: Sequence[int],
        val_counts: Sequence[int] | None = None,
    ) -> None:
        """Show one row per class; ``val_counts`` may be None when there is no validation split."""
        if len(train_counts) != len(class_names):
            raise ValueError("train_counts needs one count per class")
        if val_counts is None:
            val_counts = [0] * len(class_names)
        if len(val_counts) != len(class_names):
            raise ValueError("val_counts needs one count per class")
        self._class_names = list(class_names)
        rows = np.arange(len(class_names), dtype=float)
        self.train_bars.setOpts(
            x0=np.zeros(len(rows)), y=rows - BAR_HEIGHT / 2, width=np.asarray(train_counts, float)
        )
        self.val_bars.setOpts(
            x0=np.zeros(len(rows)), y=rows + BAR_HEIGHT / 2, width=np.asarray(val_counts, float)
        )
        ticks = [(float(row), _short(name)) for row, name in enumerate(class_names)]
        left_axis = self.getPlotItem().getAxis("left")
        left_axis.setTicks([ticks])
        metrics = QFontMetrics(left_axis.style.get("tickFont") or self.font())
        label_width = max([metrics.horizontalAdvance(text) for _, text in ticks], default=0)
        left_axis.setWidth(label_width + 12)
        largest = max([*train_counts, *val_counts, 1])
        # Head room on the right keeps the legend clear of the longest bar.
        self.setXRange(0, largest * 1.3, padding=0)
        self.setYRange(-0.6, max(len(rows), 1) - 0.4, padding=0)
        self.setMinimumHeight(max(160, 60 + ROW_PIXELS * len(rows)))

    def clear_counts(self) -> None:
        """Show no classes."""
        self.set_counts([], [], [])

    def class_names(self) -> list[str]:
        """The classes shown, top to bottom."""
        return list(self._class_names)

    def bar_values(self) -> dict[str, list[int]]:
        """The lengths of the bars as drawn, per split: ``{"train": [...], "val": [...]}``."""
        return {
            "train": [int(v) for v in self.train_bars.opts["width"]],
            "val": [int(v) for v in self.val_bars.opts["width"]],
        }


def _short(name: str) -> str:
    """Class names on the axis are cut, so one long name does not squeeze the bars; a name
    with bytes that are not UTF-8 is shown escaped (Qt would drop them)."""
    name = shown_name(name)
    return name if len(name) <= MAX_LABEL_CHARS else name[: MAX_LABEL_CHARS - 1] + "…"
