"""What the model sees of one image: the resized picture with its crop boxes, and the crops.

``five_crop_preview`` (core) runs in the thread pool, latest request wins: changing the settings
five times while a 24-megapixel JPEG decodes starts at most one more decode, and results of
superseded requests are dropped before any pixmap is made. The GUI thread only turns the
arrays into pixmaps and paints the boxes.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QPoint, QRect, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.runs.config import TrainConfig
from workbench.gui.widgets.image_conversion import numpy_to_qimage
from workbench.gui.workers.pool_tasks import LatestRequestRunner

if TYPE_CHECKING:
    from workbench.core.data.five_crop_preview import AugmentationPreview, CropPreview

BOX_COLOURS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4")
RESIZED_MAX_HEIGHT = 240
RESIZED_MAX_WIDTH = 640
CROP_COLUMNS = 5
# Crops narrower than this are shown enlarged by a whole factor.
MIN_CROP_DISPLAY = 48
# Settings often change in bursts (a spin box held down); one request per burst is enough.
DEBOUNCE_MS = 30
# The settings a preview depends on; changing any other (lr, epochs...) keeps the preview.
PREVIEW_FIELDS = ("crop_mode", "resize_size", "crop_size", "train_hflip", "model",
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


def box_colour(index: int, label: str) -> QColor:
    """Colour of a crop: a mirrored crop shares the colour of the corner its pixels come from."""
    corners = ("top-left", "top-right", "bottom-left", "bottom-right", "center")
    base = label.replace(" (flipped)", "")
    position = corners.index(base) if base in corners else index
    return QColor(BOX_COLOURS[position % len(BOX_COLOURS)])


def draw_crop_boxes(resized: np.ndarray, crops: CropPreview) -> QPixmap:
    """The resized image scaled for display, with each crop's box outlined and numbered.

    Mirrored crops are dashed and numbered in their box's lower-right corner, so a ten-crop's
    two boxes on the same corner stay readable.
    """
    pixmap = QPixmap.fromImage(numpy_to_qimage(resized))
    height, width = resized.shape[:2]
    # Fit the display box both ways: small images (digits, thumbnails) are enlarged with
    # nearest-neighbour sampling so their pixels stay visible as pixels.
    scale = min(RESIZED_MAX_HEIGHT / height, RESIZED_MAX_WIDTH / width)
    if scale != 1.0:
        mode = (Qt.TransformationMode.SmoothTransformation if scale < 1.0
                else Qt.TransformationMode.FastTransformation)
        pixmap = pixmap.scaled(round(width * scale), round(height * scale),
                               Qt.AspectRatioMode.IgnoreAspectRatio, mode)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    font = QFont(painter.font())
    font.setPixelSize(12)
    font.setBold(True)
    painter.setFont(font)
    for index, ((left, top, box_w, box_h), label) in enumerate(
        zip(crops.boxes, crops.labels, strict=False)
    ):
        colour = box_colour(index, label)
        flipped = "(flipped)" in label
        rect = QRect(round(left * scale), round(top * scale),
                     round(box_w * scale) - 1, round(box_h * scale) - 1)
        pen = QPen(colour, 2, Qt.PenStyle.DashLine if flipped else Qt.PenStyle.SolidLine)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(rect.adjusted(1, 1, -1, -1))
        tag = QRect(0, 0, 22, 16)
        if flipped:
            tag.moveBottomRight(rect.bottomRight() - QPoint(2, 2))
        else:
            tag.moveTopLeft(rect.topLeft() + QPoint(2, 2))
        painter.fillRect(tag, colour)
        painter.setPen(QColor("white"))
        painter.drawText(tag, Qt.AlignmentFlag.AlignCenter, str(index + 1))
    painter.end()
    return pixmap


def describe_preview(preview: AugmentationPreview, config: TrainConfig, seconds: float) -> str:
    """The status line, e.g. '5 crops of 224x224 from a 6000x4000 image resized to ...'."""
    count = len(preview.train.boxes)  # a mixed tile is no further crop
    crops = f"{count} crop{'s' if count != 1 else ''} of {config.crop_size}x{config.crop_size}"
    width, height = preview.original_size
    resized_h, resized_w = preview.train.resized.shape[:2]
    return (
        f"{crops} from a {width}x{height} image resized to {config.resize_size} on the short "
        f"side ({resized_w}x{resized_h}), {seconds * 1000:.0f} ms"
    )


def crop_note(crops: CropPreview) -> str:
    """What the annotated image shows, next to it."""
    height, width = crops.resized.shape[:2]
    text = (
        f"The image resized to {width}x{height}. Each box is where a crop is cut; "
        "the crops below are exactly what the model receives, at model resolution."
    )
    if any("(flipped)" in label for label in crops.labels):
        text += " Dashed boxes are cut from the mirrored image."
    return text


def _preview_settings(config: TrainConfig) -> tuple[object, ...]:
    return tuple(getattr(config, name) for name in PREVIEW_FIELDS)


class CropTile(QFrame):
    """One crop at model resolution, framed in its box's colour, with a caption."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image_label = QLabel()
        self.image_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.caption_label = QLabel()
        self.caption_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(3, 3, 3, 3)
        layout.setSpacing(2)
        layout.addWidget(self.image_label)
        layout.addWidget(self.caption_label)

    def show_crop(self, pixmap: QPixmap, caption: str, colour: QColor) -> None:
        """Show the pixels the model receives: as they are, or, for crops too small to see
        (28x28 digits), enlarged by a whole factor so every pixel stays one square."""
        factor = max(1, math.ceil(MIN_CROP_DISPLAY / max(1, pixmap.width())))
        if factor > 1:
            pixmap = pixmap.scaled(pixmap.width() * factor, pixmap.height() * factor,
                                   Qt.AspectRatioMode.IgnoreAspectRatio,
                                   Qt.TransformationMode.FastTransformation)
            first, *rest = caption.split("\n")  # the enlargement belongs to the crop's line
            caption = "\n".join([f"{first} (\u00d7{factor})", *rest])
        self.image_label.setPixmap(pixmap)
        self.caption_label.setText(caption)
        self.setStyleSheet(
            f"CropTile {{ border: 3px solid {colour.name()}; border-radius: 3px; }}"
        )


class SplitPreviewView(QGroupBox):
    """One split (train or val): the annotated resized image above a grid of crop tiles."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(title, parent)
        self.resized_label = QLabel()
        self.resized_label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.note_label = QLabel()
        self.note_label.setWordWrap(True)
        self.note_label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.tiles: list[CropTile] = []
        self._grid = QGridLayout()
        self._grid.setSpacing(6)
        self._grid.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        top = QHBoxLayout()
        top.addWidget(self.resized_label)
        top.addWidget(self.note_label, 1)
        self._layout = QVBoxLayout(self)
        self._layout.addLayout(top)
        self._layout.addLayout(self._grid)
        self._layout.addStretch(1)

    def add_action(self, button: QPushButton) -> None:
        """A button on its own row at the top of the box."""
        row = QHBoxLayout()
        row.addWidget(button)
        row.addStretch(1)
        self._layout.insertLayout(0, row)

    def show_preview(self, crops: CropPreview) -> None:
        """Draw the boxes on the resized image and one tile per crop."""
        self.resized_label.setPixmap(draw_crop_boxes(crops.resized, crops))
        self.note_label.setText(crop_note(crops))
        self._set_tile_count(len(crops.crops))
        for index, (tile, crop, label) in enumerate(
            zip(self.tiles, crops.crops, crops.labels, strict=False)
        ):
            pixmap = QPixmap.fromImage(numpy_to_qimage(crop))
            tile.show_crop(pixmap, f"{index + 1} · {label}", box_colour(index, label))

    def clear_preview(self) -> None:
        """Show nothing (e.g. after an unreadable image)."""
        self.resized_label.clear()
        self.note_label.clear()
        self._set_tile_count(0)

    def _set_tile_count(self, count: int) -> None:
        while len(self.tiles) > count:
            tile = self.tiles.pop()
            self._grid.removeWidget(tile)
            tile.deleteLater()
        while len(self.tiles) < count:
            tile = CropTile()
            position = len(self.tiles)
            self._grid.addWidget(tile, position // CROP_COLUMNS, position % CROP_COLUMNS)
            self.tiles.append(tile)


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
