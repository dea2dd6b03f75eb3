"""Validation accuracy and loss of several runs on two charts, one colour a run.

pyqtgraph is imported when the first comparison is drawn, not when the window opens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from workbench.core.runs.run_index import RunCurves

# Colour-blind-safe (Okabe-Ito), one a run; they repeat after eight.
RUN_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
               "#F0E442")


class RunComparisonPlot(QWidget):
    """Draws ``set_curves``; a hint until then."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hint = QLabel("Select runs to overlay their validation curves.", self)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.addWidget(self.hint)
        self._plots: list[Any] = []
        self._curves: list[RunCurves] = []

    def set_curves(self, curves: Sequence[RunCurves]) -> None:
        """Overlay ``curves``: accuracy on the first chart, loss on the second."""
        self._curves = list(curves)
        if not self._plots:
            self._build_plots()
        for plot in self._plots:
            plot.clear()
        for index, run in enumerate(self._curves):
            colour = RUN_COLOURS[index % len(RUN_COLOURS)]
            percent = tuple(100 * v for v in run.val_accuracy)
            for plot, values in zip(self._plots, (percent, run.val_loss), strict=True):
                points = [(e, v) for e, v in zip(run.epochs, values, strict=True)
                          if math.isfinite(v)]
                plot.plot([p[0] for p in points], [p[1] for p in points], name=run.name,
                          pen={"color": colour, "width": 2}, symbol="o", symbolSize=5,
                          symbolBrush=colour)
        self.hint.setText(f"{len(self._curves)} run(s); one colour a run." if self._curves
                          else "Select runs to overlay their validation curves.")

    def curves(self) -> list[RunCurves]:
        """The runs drawn."""
        return list(self._curves)

    def drawn_colours(self) -> list[str]:
        """The pen colour of each run's accuracy curve, in order (for tests and legends)."""
        if not self._plots:
            return []
        import pyqtgraph as pg

        return [pg.mkPen(item.opts["pen"]).color().name()
                for item in self._plots[0].listDataItems()]

    def _build_plots(self) -> None:
        import pyqtgraph as pg

        for title, label in (("Validation accuracy", "accuracy (%)"),
                             ("Validation loss", "loss")):
            plot = pg.PlotWidget(self, title=title)
            plot.setBackground("w")
            plot.addLegend(offset=(-10, 10))
            plot.setLabel("bottom", "epoch")
            plot.setLabel("left", label)
            plot.getAxis("left").enableAutoSIPrefix(False)  # no "x0.001" on small losses
            plot.showGrid(x=True, y=True, alpha=0.3)
            plot.setMinimumHeight(150)
            self._layout.addWidget(plot, 1)
            self._plots.append(plot.getPlotItem())
