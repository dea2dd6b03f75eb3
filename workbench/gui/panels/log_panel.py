"""The run log: the engine's messages, newest at the bottom, warnings and errors in colour."""

from __future__ import annotations

import html
import time

from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from workbench.core.runs.events import Message

LEVEL_COLOURS = {"info": "", "warning": "#b26a00", "error": "#c62828"}
MAX_BLOCKS = 5000


class LogPanel(QPlainTextEdit):
    """A read-only log that keeps the newest ``MAX_BLOCKS`` lines."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(MAX_BLOCKS)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.setFont(font)
        self.setPlaceholderText("Messages from the dataset scan and training appear here.")
        self._counts = {"info": 0, "warning": 0, "error": 0}

    def append_message(self, message: Message) -> None:
        """Add one engine message."""
        self.append_text(message.level, message.text)

    def append_text(self, level: str, text: str) -> None:
        """Add ``text`` at ``level`` ('info', 'warning' or 'error'), with the time of day."""
        level = level if level in LEVEL_COLOURS else "info"
        self._counts[level] += 1
        stamp = time.strftime("%H:%M:%S")
        prefix = "" if level == "info" else f"{level.upper()}: "
        body = html.escape(f"{stamp}  {prefix}{text}").replace("\n", "<br>")
        colour = f"color:{LEVEL_COLOURS[level]};" if LEVEL_COLOURS[level] else ""
        bar = self.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 2  # keep following unless the user scrolled up
        self.appendHtml(f'<span style="white-space:pre-wrap;{colour}">{body}</span>')
        if follow:
            bar.setValue(bar.maximum())

    def count(self, level: str) -> int:
        """How many messages of ``level`` were added since the last ``clear_log``."""
        return self._counts.get(level, 0)

    def clear_log(self) -> None:
        """Remove every line."""
        self.clear()
        self._counts = {key: 0 for key in self._counts}
