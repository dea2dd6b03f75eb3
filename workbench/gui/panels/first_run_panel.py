"""What the Dataset tab shows while no data folder is open: open one, try the demo dataset, or
pick a folder opened before; and, while the default model's ImageNet weights are not on this
computer, download them now (their progress shows beside Start).

The demo images are written in the thread pool (a few seconds the first time; later the folder
is reused), so the button never freezes the window.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QCommandLinkButton,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from workbench.gui.workers.pool_tasks import LatestRequestRunner

MAX_RECENT_SHOWN = 6


def ensure_demo_dataset_folder() -> str:
    """Pool thread: the demo dataset's folder, written there first if it is not complete."""
    from workbench.core.data.generated.demo_data import ensure_demo_dataset

    return str(ensure_demo_dataset())


class FirstRunPanel(QWidget):
    """The window connects the signals and decides when the panel is shown."""

    open_folder_requested = Signal()
    """"Open folder…" was clicked."""
    recent_folder_chosen = Signal(str)
    """One of the recent folders was clicked."""
    demo_dataset_ready = Signal(str)
    """"Try the demo dataset" was clicked and the demo images are in this folder."""
    demo_dataset_failed = Signal(str)
    """The demo images could not be written; the message says why."""
    weights_download_requested = Signal()
    """"Download the weights" was clicked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("firstRunPanel")
        title = QLabel("<h2>Train an image classifier</h2>", self)
        intro = QLabel(
            "Open a folder of images: either one folder per class, or train/ and val/ folders "
            "with one folder per class inside. You can also drop a folder on this window.",
            self)
        intro.setWordWrap(True)
        self.open_button = QCommandLinkButton(
            "Open folder\u2026", "Choose a folder of images on this computer", self)
        self.demo_button = QCommandLinkButton(
            "Try the demo dataset",
            "Generate 320 small images of four shapes (no download) and the settings that "
            "learn them in a few minutes on a CPU", self)
        self.weights_button = QCommandLinkButton(self)
        self.weights_button.setObjectName("firstRunWeightsButton")
        self.status_label = QLabel("", self)
        self.status_label.setWordWrap(True)
        self.status_label.hide()
        self.recent_title = QLabel("<b>Recent folders</b>", self)
        self._recent_layout = QVBoxLayout()
        self._recent_layout.setSpacing(0)
        self.recent_buttons: list[QCommandLinkButton] = []
        self._demo_runner = LatestRequestRunner(self)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 24, 24, 24)
        layout.addWidget(title)
        layout.addWidget(intro)
        layout.addSpacing(8)
        layout.addWidget(self.open_button)
        layout.addWidget(self.demo_button)
        layout.addWidget(self.weights_button)
        layout.addWidget(self.status_label)
        layout.addSpacing(8)
        layout.addWidget(self.recent_title)
        layout.addLayout(self._recent_layout)
        layout.addStretch(1)
        layout.setAlignment(Qt.AlignmentFlag.AlignTop)

        self.open_button.clicked.connect(self.open_folder_requested)
        self.demo_button.clicked.connect(self._on_demo_clicked)
        self.weights_button.clicked.connect(self.weights_download_requested)
        self._demo_runner.result_ready.connect(self._on_demo_ready)
        self._demo_runner.failed.connect(self._on_demo_failed)
        self.set_recent_folders([])
        self.set_weights_download("")

    def set_weights_download(self, size_text: str, downloading: bool = False,
                             failure: str = "") -> None:
        """Offer the ImageNet weights (``size_text``, e.g. '46.8 MB'); '' hides the offer.

        Args:
            downloading: a download is going on (its progress shows beside Start).
            failure: why the last download failed, '' when none did.
        """
        self.weights_button.setVisible(bool(size_text) or downloading)
        self.weights_button.setEnabled(not downloading)
        if downloading:
            self.weights_button.setText("Downloading\u2026")
            self.weights_button.setDescription("The progress shows beside Start training.")
            return
        # A short title: the widest one sets the page's, and so the window's, minimum width.
        self.weights_button.setText("Download the weights")
        self.weights_button.setDescription(
            f"{size_text} of ImageNet weights: the last try failed ({failure}). Try again, or "
            "choose Train without downloading beside Start." if failure else
            f"{size_text} of ImageNet weights, which ResNet-18 starts from; downloaded once "
            "for this computer, now or at the first Start.")

    def set_recent_folders(self, folders: list[str]) -> None:
        """Show up to ``MAX_RECENT_SHOWN`` folders, newest first, each one click to open."""
        for button in self.recent_buttons:
            self._recent_layout.removeWidget(button)
            button.deleteLater()
        self.recent_buttons = []
        for folder in folders[:MAX_RECENT_SHOWN]:
            name = folder.rstrip("/\\").rsplit("/", 1)[-1] or folder
            button = QCommandLinkButton(name, folder, self)
            button.setToolTip(folder)
            button.clicked.connect(lambda _checked=False, f=folder:
                                   self.recent_folder_chosen.emit(f))
            self._recent_layout.addWidget(button)
            self.recent_buttons.append(button)
        self.recent_title.setVisible(bool(self.recent_buttons))

    @Slot()
    def _on_demo_clicked(self) -> None:
        self._update_demo_busy(True)
        self._demo_runner.submit(ensure_demo_dataset_folder)

    @Slot(object)
    def _on_demo_ready(self, folder: str) -> None:
        self._update_demo_busy(False)
        self.demo_dataset_ready.emit(folder)

    @Slot(str)
    def _on_demo_failed(self, message: str) -> None:
        self._update_demo_busy(False)
        self.demo_dataset_failed.emit(message)

    def _update_demo_busy(self, busy: bool) -> None:
        self.demo_button.setEnabled(not busy)
        self.status_label.setText("Writing the demo images\u2026" if busy else "")
        self.status_label.setVisible(busy)
