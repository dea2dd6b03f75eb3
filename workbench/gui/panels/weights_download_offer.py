"""The buttons beside Start while a run would have to download the ImageNet weights first:
download them now (with progress and Cancel), or, once a download has failed, train without
them. The words go in the line beside Start; this widget holds only the buttons and the bar."""

from __future__ import annotations

from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

from workbench.core.runs.events import Progress
from workbench.core.runs.model_catalog import scratch_recipe_values

FALLBACK_TEXT = "Train without downloading"
FALLBACK_CHANGES = ("Starting weights become None (a random start), Fine-tune becomes Whole "
                    f"network and, for a {' or '.join(scratch_recipe_values('lr'))} model "
                    "whose recipe you have not set, the optimiser and "
                    "learning rate become the recipe for training from scratch: nothing to "
                    "download, but the model learns more slowly and needs more images than one "
                    "starting from ImageNet.")


class WeightsDownloadOffer(QWidget):
    """Hidden until ``offer``; the window's pre-flight controller drives it."""

    download_requested = Signal()
    """"Download" (or "Try again") was clicked."""
    cancel_requested = Signal()
    """Cancel was clicked during the download."""
    fallback_requested = Signal()
    """"Train without downloading" was clicked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("weightsDownloadOffer")
        self.download_button = QPushButton(self)
        self.download_button.setObjectName("downloadWeightsButton")
        self.bar = QProgressBar(self)
        self.bar.setMaximumWidth(150)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setToolTip("Stop the download; nothing partial is kept.")
        self.fallback_button = QPushButton(FALLBACK_TEXT, self)
        self.fallback_button.setObjectName("trainWithoutDownloadingButton")
        self.fallback_button.setToolTip(FALLBACK_CHANGES)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 0, 0)  # the gap to the line beside Start
        for widget in (self.download_button, self.bar, self.cancel_button, self.fallback_button):
            layout.addWidget(widget)
        self.download_button.clicked.connect(self.download_requested)
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        self.fallback_button.clicked.connect(self.fallback_requested)
        self.hide_offer()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        # Appearing must not widen the window (its minimum is the row's): on a screen too
        # narrow for the buttons they are cut off; from 1280 px wide they fit.
        return QSize(0, super().minimumSizeHint().height())

    def offer(self, size_text: str) -> None:
        """Offer to download ``size_text`` ('46.8 MB') now rather than at Start."""
        self.download_button.setText(f"Download {size_text}")
        self.download_button.setToolTip(
            f"Download the ImageNet weights ({size_text}) now, once for this computer, so Start "
            "trains at once")
        self._show(self.download_button)

    def show_progress(self, event: Progress) -> None:
        """The download's progress; an unknown total makes the bar a busy indicator."""
        fraction = event.fraction
        if fraction is None:
            self.bar.setRange(0, 0)
        else:
            self.bar.setRange(0, 100)
            self.bar.setValue(round(100 * fraction))
            self.bar.setFormat(f"{event.done / 1e6:.1f} of {event.total / 1e6:.1f} MB")
        self.bar.setToolTip(event.describe())
        self._show(self.bar, self.cancel_button)
        self.cancel_button.setEnabled(True)

    def show_failure(self) -> None:
        """The download failed: offer it again, and training without it."""
        self.download_button.setText("Try again")
        self._show(self.download_button, self.fallback_button)

    def hide_offer(self) -> None:
        self._show()
        self.bar.reset()

    def _show(self, *widgets: QWidget) -> None:
        for widget in (self.download_button, self.bar, self.cancel_button, self.fallback_button):
            widget.setVisible(widget in widgets)
        self.setVisible(bool(widgets))

    def _on_cancel_clicked(self) -> None:
        self.cancel_button.setEnabled(False)
        self.cancel_requested.emit()
