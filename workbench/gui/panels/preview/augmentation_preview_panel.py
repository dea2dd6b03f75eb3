"""What the model sees of one image: the resized picture with its crop boxes, and the crops.

``five_crop_preview`` (core) runs in the thread pool, latest request wins: changing the settings
five times while a 24-megapixel JPEG decodes starts at most one more decode, and results of
superseded requests are dropped before any pixmap is made. The GUI thread only turns the
arrays into pixmaps and paints the boxes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.preview.split_preview_view import SplitPreviewView
from workbench.gui.workers.pool_tasks import LatestRequestRunner

if TYPE_CHECKING:
    from workbench.core.data.five_crop_preview import AugmentationPreview

# Settings often change in bursts (a spin box held down); one request per burst is enough.
DEBOUNCE_MS = 30
# The settings a preview depends on; changing any other (lr, epochs...) keeps the preview.
PREVIEW_FIELDS = ("crop_mode", "resize_size", "interpolation", "crop_size", "train_hflip", "model",
                  "crop_scale_min", "crop_scale_max", "crop_ratio_min", "crop_ratio_max",
                  "color_jitter_brightness", "color_jitter_contrast", "color_jitter_saturation",
                  "color_jitter_hue", "rotation_degrees", "auto_augment", "rand_augment_num_ops",
                  "rand_augment_magnitude", "mixup_alpha", "cutmix_alpha")


def timed_preview(path: str, config: TrainConfig, seed: int = 0
                  ) -> tuple[AugmentationPreview, float]:
    """Pool thread: the preview with the random draws of ``seed`` and the seconds it took
    (import kept out of panel start-up). With mixup or cutmix on, an image of another class
    (``mixing_partner``, also drawn by ``seed``) shows one draw of the mixing."""
    from workbench.core.data.five_crop_preview import five_crop_preview, mixing_on, mixing_partner

    start = time.perf_counter()
    partner = mixing_partner(path, seed) if mixing_on(config) else None
    preview = five_crop_preview(path, config, seed, partner)
    return preview, time.perf_counter() - start


def describe_preview(preview: AugmentationPreview, config: TrainConfig, seconds: float) -> str:
    """The status line, saying which image each split cuts its crops from, e.g. '5 crops of
    224x224 from the 640x480 image resized to 341x256 (256 on the short side), 12 ms'.

    Training's random resized crop cuts the original image (or a copy reduced no further
    than its smallest crop needs), not the image validation resizes; each size is the one
    that split really uses.
    """
    count = len(preview.train.boxes)  # a mixed tile is no further crop
    crop = f"{config.crop_size}x{config.crop_size}"
    width, height = preview.original_size
    val_h, val_w = preview.val.resized.shape[:2]
    resized = f"resized to {val_w}x{val_h} ({config.resize_size} on the short side)"
    took = f"{seconds * 1000:.0f} ms"
    if config.crop_mode != "standard":
        return f"{count} crops of {crop} from the {width}x{height} image {resized}, {took}"
    source_h, source_w = preview.train.resized.shape[:2]
    source = f"the {width}x{height} image" if (source_w, source_h) == (width, height) else \
        f"the {width}x{height} image reduced to {source_w}x{source_h}"
    crops = f"{count} random crop{'s' if count != 1 else ''}"
    return (f"{crops} of {crop} cut from {source} for training; validation: the centre {crop} "
            f"of the image {resized}, {took}")


def _preview_settings(config: TrainConfig) -> tuple[object, ...]:
    return tuple(getattr(config, name) for name in PREVIEW_FIELDS)


class AugmentationPreviewPanel(QWidget):
    """Train and val crops of one image under the current settings."""

    preview_ready = Signal(object)
    """A preview of the current image and settings was drawn: the ``AugmentationPreview``."""
    preview_failed = Signal(str)
    """The current image could not be previewed; the message says why."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._config = TrainConfig()
        self._path = ""
        self._seed = 0  # of the training crop's random draws; "New draw" moves it on
        self._preview: AugmentationPreview | None = None
        self._requested_config = self._config
        self._runner = LatestRequestRunner(self, priority=1)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._build_widgets()
        self._build_layout()
        self._update_new_draw_button()

        self._debounce.timeout.connect(self._request_preview)
        self._runner.result_ready.connect(self._on_preview_ready)
        self._runner.failed.connect(self._on_preview_failed)
        self._show_group.idToggled.connect(self._on_show_toggled)
        self.new_draw_button.clicked.connect(self._on_new_draw_clicked)

    def _build_widgets(self) -> None:
        self.status_label = QLabel("Pick an image to see what the model receives.")
        self.status_label.setWordWrap(True)
        self.error_label = QLabel()
        self.error_label.setProperty("role", "error")
        self.error_label.setStyleSheet("color: #c0392b;")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        self.new_draw_button = QPushButton("New draw")
        self.mixing_label = QLabel()
        self.mixing_label.setObjectName("mixingNote")
        self.mixing_label.setWordWrap(True)
        self.mixing_label.hide()
        self.train_view = SplitPreviewView("Training: what each step learns from")
        self.val_view = SplitPreviewView("Validation: what accuracy is measured on")
        self._show_group = QButtonGroup(self)
        self.show_buttons: dict[str, QToolButton] = {}
        for button_id, (key, text) in enumerate(
            (("train", "Train"), ("val", "Validation"), ("both", "Both"))
        ):
            button = QToolButton()
            button.setText(text)
            button.setCheckable(True)
            self._show_group.addButton(button, button_id)
            self.show_buttons[key] = button
        self.show_buttons["both"].setChecked(True)

    def _build_layout(self) -> None:
        header = QHBoxLayout()
        header.addWidget(self.status_label, 1)
        header.addWidget(QLabel("Show:"))
        for button in self.show_buttons.values():
            header.addWidget(button)
        # In the training box, whose crops it redraws (in the header row it would make the
        # window wider than a small laptop screen allows).
        self.train_view.add_action(self.new_draw_button)
        content = QWidget()
        content_layout = QVBoxLayout(content)
        content_layout.addWidget(self.train_view)
        content_layout.addWidget(self.mixing_label)
        content_layout.addWidget(self.val_view)
        content_layout.addStretch(1)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setWidget(content)
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.error_label)
        layout.addWidget(self.scroll_area, 1)

    # ---------------------------------------------------------------- public API
    def set_config(self, config: TrainConfig) -> None:
        """Preview with these settings; only the crop and augmentation settings and the model
        matter."""
        relevant_change = _preview_settings(config) != _preview_settings(self._config)
        self._config = config
        self._update_new_draw_button()
        if relevant_change or self._preview is None:
            self._schedule()

    def set_image(self, path: str) -> None:
        """Preview this image file."""
        self._path = str(path)
        self._schedule()

    def config(self) -> TrainConfig:
        """The settings previewed."""
        return self._config

    def image_path(self) -> str:
        """The image previewed ("" before the first)."""
        return self._path

    def preview(self) -> AugmentationPreview | None:
        """The preview on screen; None before the first, while superseded, or after an error."""
        return self._preview

    def draw_seed(self) -> int:
        """The seed of the training crop's random draws on screen (moved on by New draw)."""
        return self._seed

    def wait_for_preview(self, msecs: int = -1) -> bool:
        """Block until the pool has finished previewing (shutdown and tests); False on timeout."""
        return self._runner.wait_for_done(msecs)

    # ---------------------------------------------------------------- requests
    def _schedule(self) -> None:
        if not self._path:
            return
        self._runner.cancel()  # whatever is in flight is already out of date
        self.status_label.setText("Decoding…")
        self._debounce.start()

    @Slot()
    def _request_preview(self) -> None:
        self._requested_config = self._config
        self._runner.submit(timed_preview, self._path, self._config, self._seed)

    @Slot(object)
    def _on_preview_ready(self, outcome: tuple[AugmentationPreview, float]) -> None:
        preview, seconds = outcome
        self._preview = preview
        self.error_label.hide()
        self.train_view.show_preview(preview.train)
        self.val_view.show_preview(preview.val)
        self.mixing_label.setText(preview.mixing_note)
        self.mixing_label.setVisible(bool(preview.mixing_note))
        self.status_label.setText(describe_preview(preview, self._requested_config, seconds))
        self.preview_ready.emit(preview)

    @Slot(str)
    def _on_preview_failed(self, message: str) -> None:
        self._preview = None
        self.mixing_label.hide()
        self.train_view.clear_preview()
        self.val_view.clear_preview()
        self.status_label.setText("No preview.")
        self.error_label.setText(f"No preview: {message}")
        self.error_label.show()
        self.preview_failed.emit(message)

    def _update_new_draw_button(self) -> None:
        """Only the standard mode's training crop is random; five and ten crops are fixed."""
        standard = self._config.crop_mode == "standard"
        self.new_draw_button.setEnabled(standard)
        self.new_draw_button.setToolTip(
            "Draw new random values for the training crop: its box, flip and augmentations, "
            "exactly as training draws them." if standard else
            "Five and ten crops are the same every time: there is nothing random to draw.")

    @Slot()
    def _on_new_draw_clicked(self) -> None:
        self._seed += 1
        self._schedule()

    @Slot(int, bool)
    def _on_show_toggled(self, _button_id: int, checked: bool) -> None:
        if not checked:
            return
        self.train_view.setVisible(not self.show_buttons["val"].isChecked())
        self.val_view.setVisible(not self.show_buttons["train"].isChecked())
