"""A one-line label that never widens its window: long text is cut with an ellipsis, and the
whole text is in its tooltip.

A plain ``QLabel`` asks its layout for the width of its whole text, so a long error message
(thousands of characters) can make a window wider than the screen, with no way back.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

MINIMUM_WIDTH = 40
PREFERRED_WIDTH = 400


class ElidedLabel(QLabel):
    """``text()`` is the whole text; the label shows as much as fits on one line.

    The tooltip holds the whole text when part of it is hidden (the first line of a multi-line
    text is shown), unless ``setToolTip`` gave one of its own.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self._own_tooltip = ""
        self.preferred_width = PREFERRED_WIDTH  # the most its size hint asks for
        # Preferred: it asks for its text's width (up to preferred_width) and may be given as
        # little as MINIMUM_WIDTH.
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self._update_tooltip()

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        self._update_tooltip()

    def setToolTip(self, text: str) -> None:  # noqa: N802 - Qt override
        self._own_tooltip = text
        self._update_tooltip()

    def shown_text(self) -> str:
        """The text as drawn now (with '…' where it was cut)."""
        first_line = self.text().split("\n", 1)[0]
        return self.fontMetrics().elidedText(first_line, Qt.TextElideMode.ElideRight,
                                             max(0, self.contentsRect().width()))

    def is_elided(self) -> bool:
        """True when part of the text is hidden."""
        return self.shown_text() != self.text()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(MINIMUM_WIDTH, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        hint = super().sizeHint()
        height = self.fontMetrics().height() + 2 * self.margin() + 2
        return QSize(min(hint.width(), self.preferred_width), height)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment() | Qt.AlignmentFlag.AlignVCenter),
                         self.shown_text())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._update_tooltip()

    def _update_tooltip(self) -> None:
        tip = self._own_tooltip or (self.text() if self.is_elided() else "")
        QLabel.setToolTip(self, tip)
