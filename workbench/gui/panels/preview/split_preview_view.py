"""One split of the preview (training or validation): the resized image with the crop boxes
drawn on it, what it shows, and each crop at model resolution in a tile of its box's colour.

The GUI thread only turns the finished arrays into pixmaps here; the crops are computed in the
pool (``augmentation_preview_panel``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPixmap, QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from workbench.gui.widgets.image_conversion import numpy_to_qimage

if TYPE_CHECKING:
    from workbench.core.data.five_crop_preview import CropPreview

BOX_COLOURS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4")
RESIZED_MAX_HEIGHT = 240
RESIZED_MAX_WIDTH = 640
TILE_SPACING = 6
# Crops narrower than this are shown enlarged by a whole factor.
MIN_CROP_DISPLAY = 48

def box_colour(index: int, label: str) -> QColor:
    """Colour of a crop: a mirrored crop shares the colour of the corner its pixels come from."""
    corners = ("top-left", "top-right", "bottom-left", "bottom-right", "center")
    base = label.replace(" (flipped)", "")
    position = corners.index(base) if base in corners else index
    return QColor(BOX_COLOURS[position % len(BOX_COLOURS)])


def draw_crop_boxes(resized: QPixmap, crops: CropPreview,
                    max_width: int = RESIZED_MAX_WIDTH) -> QPixmap:
    """The resized image scaled for display (at most ``max_width`` wide), with each crop's box
    outlined and numbered.

    Mirrored crops are dashed and numbered in their box's lower-right corner, so a ten-crop's
    two boxes on the same corner stay readable.
    """
    pixmap = resized
    height, width = resized.height(), resized.width()
    # Fit the display box both ways: small images (digits, thumbnails) are enlarged with
    # nearest-neighbour sampling so their pixels stay visible as pixels.
    scale = min(RESIZED_MAX_HEIGHT / height, min(RESIZED_MAX_WIDTH, max_width) / width)
    if scale != 1.0:
        mode = (Qt.TransformationMode.SmoothTransformation if scale < 1.0
                else Qt.TransformationMode.FastTransformation)
        pixmap = pixmap.scaled(round(width * scale), round(height * scale),
                               Qt.AspectRatioMode.IgnoreAspectRatio, mode)
    else:
        pixmap = pixmap.copy()  # the boxes are painted on a copy, never on the source
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
    """One split (train or val): the annotated resized image, what it shows, and the crop
    tiles.

    Everything fits the width the box is given (a laptop's half window): the image is scaled
    down to it and the tiles wrap onto as many rows as they need, so the only scrolling is
    vertical and no tile or caption is cut at the right.
    """

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(title, parent)
        self.resized_label = QLabel()
        self.resized_label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.note_label = QLabel()
        self.note_label.setWordWrap(True)
        self.note_label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.tiles: list[CropTile] = []
        self._crops: CropPreview | None = None
        self._resized = QPixmap()  # the resized image as it came, before scaling and boxes
        self._columns = 0
        self._grid = QGridLayout()
        self._grid.setSpacing(TILE_SPACING)
        self._grid.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self._layout = QVBoxLayout(self)
        self._layout.addWidget(self.resized_label)
        self._layout.addWidget(self.note_label)
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
        self._crops = crops
        self._resized = QPixmap.fromImage(numpy_to_qimage(crops.resized))
        self._draw_resized()
        self.note_label.setText(crop_note(crops))
        self._set_tile_count(len(crops.crops))
        for index, (tile, crop, label) in enumerate(
            zip(self.tiles, crops.crops, crops.labels, strict=False)
        ):
            pixmap = QPixmap.fromImage(numpy_to_qimage(crop))
            tile.show_crop(pixmap, f"{index + 1} · {label}", box_colour(index, label))
        self._place_tiles(force=True)

    def clear_preview(self) -> None:
        """Show nothing (e.g. after an unreadable image)."""
        self._crops, self._resized = None, QPixmap()
        self.resized_label.clear()
        self.note_label.clear()
        self._set_tile_count(0)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._place_tiles()
        if self._crops is not None and self.resized_label.pixmap().width() != min(
                self._resized_width(), self._available_width()):
            self._draw_resized()

    def _available_width(self) -> int:
        margins = self._layout.contentsMargins()
        return max(1, self.contentsRect().width() - margins.left() - margins.right())

    def _resized_width(self) -> int:
        """Width of the annotated image when nothing limits it but its own display box."""
        scale = min(RESIZED_MAX_HEIGHT / self._resized.height(),
                    RESIZED_MAX_WIDTH / self._resized.width())
        return round(self._resized.width() * scale)

    def _draw_resized(self) -> None:
        if self._crops is not None:
            self.resized_label.setPixmap(
                draw_crop_boxes(self._resized, self._crops, self._available_width()))

    def _place_tiles(self, force: bool = False) -> None:
        """Put the tiles in as many columns as the width holds (at least one)."""
        if not self.tiles:
            return
        tile_width = max(tile.sizeHint().width() for tile in self.tiles)
        columns = max(1, min(len(self.tiles), (self._available_width() + TILE_SPACING)
                             // (tile_width + TILE_SPACING)))
        if columns == self._columns and not force:
            return
        self._columns = columns
        for tile in self.tiles:
            self._grid.removeWidget(tile)
        for position, tile in enumerate(self.tiles):
            self._grid.addWidget(tile, position // columns, position % columns)

    def _set_tile_count(self, count: int) -> None:
        while len(self.tiles) > count:
            tile = self.tiles.pop()
            self._grid.removeWidget(tile)
            tile.deleteLater()
        while len(self.tiles) < count:
            self.tiles.append(CropTile())
        self._place_tiles(force=True)
