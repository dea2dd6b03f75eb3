"""Per-class precision, recall, F1 and support of the best epoch, read off its confusion matrix."""

from __future__ import annotations

import math
from collections.abc import Sequence

from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from workbench.core.runs.prediction_analysis import ClassFigures, class_figures

COLUMNS = ("Class", "Precision", "Recall", "F1", "Support")


class ClassMetricsTable(QTableWidget):
    """A read-only table, one row a class; recall is the class's accuracy."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setObjectName("classMetrics")
        self.setHorizontalHeaderLabels(list(COLUMNS))
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self._figures: list[ClassFigures] = []

    def set_confusion(self, confusion: Sequence[Sequence[int]],
                      class_names: Sequence[str]) -> None:
        """Show the figures of ``confusion`` (rows: true class)."""
        self._figures = class_figures(confusion, class_names)
        self.setRowCount(len(self._figures))
        for row, figures in enumerate(self._figures):
            cells = (figures.name, _percent(figures.precision), _percent(figures.recall),
                     _percent(figures.f1), str(figures.support))
            for column, text in enumerate(cells):
                self.setItem(row, column, QTableWidgetItem(text))

    def figures(self) -> list[ClassFigures]:
        """The figures shown, one per class."""
        return list(self._figures)

    def clear_figures(self) -> None:
        """Show no rows."""
        self._figures = []
        self.setRowCount(0)


def _percent(value: float) -> str:
    return "\u2013" if math.isnan(value) else f"{100 * value:.1f}%"
