"""A label that never widens its window: it shows one line (or up to ``max_lines``, wrapped),
long text is cut after a whole word with an ellipsis, and the whole text is in its tooltip.

A plain ``QLabel`` asks its layout for the width of its whole text, so a long error message
(thousands of characters) can make a window wider than the screen, with no way back.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import (
    QFontMetrics,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

MINIMUM_WIDTH = 40
PREFERRED_WIDTH = 400
ELLIPSIS = "\u2026"


def elide_at_word(text: str, metrics: QFontMetrics, width: int) -> str:
    """``text`` as it fits in ``width`` pixels on one line: whole, or cut after its last word
    that fits, with '…' ("choose an image folder" becomes "choose an…", never "choose an
    im…"). A first word too long for the line is cut where it must be."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    ends = [index for index in range(1, len(text)) if text[index] == " " and
            text[index - 1] != " "]
    low, high, best = 0, len(ends) - 1, ""
    while low <= high:  # the longest run of whole words that fits with the ellipsis
        middle = (low + high) // 2
        candidate = text[:ends[middle]].rstrip(" ,;:") + ELLIPSIS
        if metrics.horizontalAdvance(candidate) <= width:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best or metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)


class ElidedLabel(QLabel):
    """``text()`` is the whole text; the label shows as much as fits on one line, or with
    ``max_lines`` above 1 on that many lines, wrapped at words (anywhere in a word longer than
    the line) and only as high as the text needs.

    The tooltip holds the whole text when part of it is hidden (the first line of a multi-line
    text is shown on one line), unless ``setToolTip`` gave one of its own.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None, max_lines: int = 1
                 ) -> None:
        super().__init__(text, parent)
        self.max_lines = max_lines
        self.setWordWrap(max_lines > 1)
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
        """The text as drawn now (with '…' where it was cut), its lines joined by newlines."""
        return "\n".join(self.shown_lines(self.contentsRect().width()))

    def shown_lines(self, width: int) -> list[str]:
        """The lines drawn at ``width`` pixels: at most ``max_lines``, the last cut with '…'
        when the text goes on."""
        metrics, width = self.fontMetrics(), max(0, width)
        if self.max_lines <= 1:
            first_line = self.text().split("\n", 1)[0]
            return [elide_at_word(first_line, metrics, width)]
        text = self.text().replace("\n", "\u2028")  # Qt's line separator breaks a line
        layout = QTextLayout(text, self.font())
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        layout.setTextOption(option)
        lines: list[str] = []
        layout.beginLayout()
        while len(lines) < self.max_lines:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(width)
            start, length = line.textStart(), line.textLength()
            if len(lines) == self.max_lines - 1 and start + length < len(text):
                rest = text[start:].replace("\u2028", " ")
                lines.append(elide_at_word(rest, metrics, width))
            else:
                lines.append(text[start:start + length].rstrip("\u2028 "))
        layout.endLayout()
        return lines or [""]

    def is_elided(self) -> bool:
        """True when part of the text is hidden."""
        shown = self.shown_lines(self.contentsRect().width())
        if self.max_lines <= 1:
            return shown[0] != self.text()
        return "".join(shown).replace(" ", "") != self.text().replace("\n", "").replace(" ", "")

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        return self.max_lines > 1

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        lines = len(self.shown_lines(width - 2 * self.margin())) if self.max_lines > 1 else 1
        metrics = self.fontMetrics()
        return metrics.height() + (lines - 1) * metrics.lineSpacing() + 2 * self.margin() + 2

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(MINIMUM_WIDTH, self.heightForWidth(self.width()) if self.max_lines > 1
                     else super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        hint = super().sizeHint()
        return QSize(min(hint.width(), self.preferred_width), self.heightForWidth(self.width()))

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        alignment = self.alignment() | (Qt.AlignmentFlag.AlignVCenter if self.max_lines <= 1
                                        else Qt.AlignmentFlag.AlignTop)
        painter.drawText(self.contentsRect(), int(alignment), self.shown_text())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._update_tooltip()

    def _update_tooltip(self) -> None:
        tip = self._own_tooltip or (self.text() if self.is_elided() else "")
        QLabel.setToolTip(self, tip)
