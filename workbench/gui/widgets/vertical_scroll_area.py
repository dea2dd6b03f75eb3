"""A page that scrolls up and down rather than grow its window past the screen."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

MINIMUM_PAGE_HEIGHT = 60  # a scrolling page is never squeezed below this


class _WholeHeightLayout(QVBoxLayout):
    """Holds the content without passing on its height-for-width: a scroll area whose
    content has wrapped labels would otherwise make it as tall as it would like (its
    preferred height), and scroll where everything fits. The content is still laid out
    with its labels' wrapped heights."""

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        return False


class VerticalScrollArea(QScrollArea):
    """A frameless scroll area its content fills: as wide as the content needs at least (so
    the window keeps its minimum width), as high as the room there is, and scrolling up and
    down only where the content needs more height than that (so the content's minimum height
    no longer sets the window's)."""

    def __init__(self, content: QWidget) -> None:
        super().__init__()
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.content = content
        holder = QWidget()
        layout = _WholeHeightLayout(holder)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(content)
        self.setWidget(holder)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        content = self.widget().minimumSizeHint().width()
        bar = self.verticalScrollBar().sizeHint().width()
        return QSize(content + bar, MINIMUM_PAGE_HEIGHT)
