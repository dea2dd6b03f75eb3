"""A line for the status bar while a run downloads something before it starts: what, how far,
and a Cancel button. Shown by the first ``Progress`` event, hidden when the run starts or ends."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from workbench.core.runs.events import Progress


class DownloadProgressBar(QWidget):
    """Label, progress bar and Cancel; the window connects ``cancel_requested`` to stopping."""

    cancel_requested = Signal()
    """Cancel was clicked: the download (and the run it belongs to) should stop."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel(self)
        self.bar = QProgressBar(self)
        self.bar.setRange(0, 100)
        self.bar.setMaximumWidth(220)
        self.cancel_button = QPushButton("Cancel download", self)
        self.cancel_button.setToolTip("Stop the download; nothing partial is kept, and the run "
                                      "does not start.")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.hide()
        self.cancel_button.clicked.connect(self._on_cancel_clicked)

    def show_progress(self, event: Progress) -> None:
        """Show ``event``; an unknown total makes the bar a busy indicator."""
        self.label.setText(event.describe())
        fraction = event.fraction
        if fraction is None:
            self.bar.setRange(0, 0)
        else:
            self.bar.setRange(0, 100)
            self.bar.setValue(round(100 * fraction))
        self.cancel_button.setEnabled(fraction is None or fraction < 1.0)
        self.show()

    def finish(self) -> None:
        """The download is over (done, cancelled or failed): hide the line."""
        self.hide()
        self.cancel_button.setEnabled(True)

    def _on_cancel_clicked(self) -> None:
        self.cancel_button.setEnabled(False)
        self.label.setText("Cancelling the download\u2026")
        self.cancel_requested.emit()
