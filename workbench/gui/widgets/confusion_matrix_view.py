"""A confusion matrix drawn as a heat map, with the count in every cell and the class names.

Rows are true classes, columns predicted classes; a cell's colour is its share of the row, so a
rare class's mistakes are as visible as a common one's. Clicking a cell emits ``cell_clicked``.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

_LOW = QColor("#f7fbff")
_HIGH = QColor("#08306b")


def _blend(share: float) -> QColor:
    share = max(0.0, min(1.0, share))
    return QColor(
        round(_LOW.red() + (_HIGH.red() - _LOW.red()) * share),
        round(_LOW.green() + (_HIGH.green() - _LOW.green()) * share),
        round(_LOW.blue() + (_HIGH.blue() - _LOW.blue()) * share),
    )


class ConfusionMatrixView(QWidget):
    """Paints ``set_matrix(confusion, class_names)``; empty until then.

    Signals:
        cell_clicked(int, int): the (true class, predicted class) indices of a clicked cell.
    """

    cell_clicked = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._matrix: tuple[tuple[int, ...], ...] = ()
        self._names: tuple[str, ...] = ()
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(220, 180)

    def set_matrix(self, confusion: Sequence[Sequence[int]], class_names: Sequence[str]) -> None:
        """Show ``confusion`` (rows = true class) labelled with ``class_names``."""
        self._matrix = tuple(tuple(int(v) for v in row) for row in confusion)
        names = [str(n) for n in class_names]
        names += [str(i) for i in range(len(names), len(self._matrix))]
        self._names = tuple(names[: len(self._matrix)])
        self.update()

    def clear(self) -> None:
        """Show nothing."""
        self._matrix, self._names = (), ()
        self.update()

    def matrix(self) -> tuple[tuple[int, ...], ...]:
        """The matrix shown."""
        return self._matrix

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(420, 360)

    def cell_rect(self, row: int, column: int) -> QRectF:
        """Where cell (true ``row``, predicted ``column``) is drawn; empty if there is none."""
        n = len(self._matrix)
        if not (0 <= row < n and 0 <= column < n):
            return QRectF()
        left, top, cell = self._grid()
        return QRectF(left + column * cell, top + row * cell, cell, cell)

    def cell_at(self, point: QPointF) -> tuple[int, int] | None:
        """The (true, predicted) indices of the cell under ``point``, or None."""
        n = len(self._matrix)
        if not n:
            return None
        left, top, cell = self._grid()
        column = int((point.x() - left) // cell)
        row = int((point.y() - top) // cell)
        return (row, column) if 0 <= row < n and 0 <= column < n else None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        hit = self.cell_at(event.position())
        if hit is not None and event.button() == Qt.MouseButton.LeftButton:
            self.cell_clicked.emit(*hit)
        super().mousePressEvent(event)

    def _label_width(self, metrics: QFontMetrics) -> float:
        return min(max(metrics.horizontalAdvance(name) for name in self._names) + 12,
                   self.width() // 3)

    def _grid(self) -> tuple[float, float, float]:
        """(left, top, cell size) of the matrix in this widget's current size."""
        metrics = QFontMetrics(self.font())
        n = len(self._matrix)
        top = metrics.height() * 2 + 8
        left = self._label_width(metrics) + metrics.height() + 8
        cell = max(4.0, min((self.width() - left - 8) / n, (self.height() - top - 8) / n))
        return left, top, cell

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        if not self._matrix:
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter,
                             "The confusion matrix appears after the first epoch.")
            return
        metrics = QFontMetrics(self.font())
        n = len(self._matrix)
        label_w = self._label_width(metrics)
        left, top, cell = self._grid()
        self._draw_titles(painter, metrics, left, top, cell * n)
        for i, row in enumerate(self._matrix):
            total = sum(row)
            y = top + i * cell
            painter.setPen(self.palette().windowText().color())
            painter.drawText(QRectF(metrics.height() + 4, y, label_w - 4, cell),
                             Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                             metrics.elidedText(self._names[i], Qt.TextElideMode.ElideRight,
                                                int(label_w - 6)))
            for j, count in enumerate(row):
                share = count / total if total else 0.0
                rect = QRectF(left + j * cell, y, cell, cell)
                painter.fillRect(rect, _blend(share))
                painter.setPen(QColor("white") if share > 0.5 else QColor("#222222"))
                if cell >= metrics.height():
                    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, str(count))
        painter.setPen(QColor("#999999"))
        painter.drawRect(QRectF(left, top, cell * n, cell * n))

    def _draw_titles(self, painter: QPainter, metrics: QFontMetrics, left: float, top: float,
                     size: float) -> None:
        painter.setPen(self.palette().windowText().color())
        height = metrics.height()
        n = len(self._names)
        for j, name in enumerate(self._names):
            rect = QRectF(left + j * size / n, top - height - 2, size / n, height)
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter,
                             metrics.elidedText(name, Qt.TextElideMode.ElideRight,
                                                int(size / n) - 2))
        painter.drawText(QRectF(left, 2, size, height), Qt.AlignmentFlag.AlignCenter,
                         "predicted class")
        painter.save()
        painter.translate(2, top + size / 2)
        painter.rotate(-90)
        painter.drawText(QRectF(-size / 2, 0, size, height), Qt.AlignmentFlag.AlignCenter,
                         "true class")
        painter.restore()
