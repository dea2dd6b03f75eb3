"""A grid of validation images with their true class, predicted class and confidence.

Thumbnails are decoded in the thread pool (latest request wins); the grid shows grey tiles
until they arrive. Clicking a tile emits ``row_chosen``; double-clicking opens the image.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import QSize, Qt, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QIcon, QPixmap
from PySide6.QtWidgets import QListView, QListWidget, QListWidgetItem, QWidget

from workbench.core.runs.predictions_file import PredictionRow
from workbench.gui.widgets.image_conversion import numpy_to_qimage
from workbench.gui.widgets.thumbnail_browser import decode_thumbnail
from workbench.gui.workers.pool_tasks import LatestRequestRunner

TILE = 96
# Tiles a gallery shows at most; past that the list would only be scrolled past.
MAX_TILES = 60


def decode_thumbnails(paths: Sequence[str], size: int) -> list[np.ndarray | None]:
    """Pool thread: one RGB thumbnail per path, None for an image that cannot be read."""
    thumbnails: list[np.ndarray | None] = []
    for path in paths:
        try:
            thumbnails.append(decode_thumbnail(path, size))
        except Exception:  # noqa: BLE001 - a broken file shows as a plain tile
            thumbnails.append(None)
    return thumbnails


def caption(row: PredictionRow, extra: str = "") -> str:
    """Two short lines under a tile: the true class, and the prediction with its confidence."""
    text = f"true {row.true_class}\npred {row.predicted_class} {100 * row.confidence:.0f}%"
    return f"{text}\n{extra}" if extra else text


class PredictionGallery(QListWidget):
    """Tiles for prediction rows.

    Signals:
        row_chosen(PredictionRow): a tile was clicked.
        thumbnails_shown(): the pool's thumbnails for the current rows are on the tiles.
    """

    row_chosen = Signal(object)
    thumbnails_shown = Signal()

    def __init__(self, empty_text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setViewMode(QListView.ViewMode.IconMode)
        self.setIconSize(QSize(TILE, TILE))
        self.setGridSize(QSize(TILE + 40, TILE + 56))
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setMovement(QListView.Movement.Static)
        self.setWordWrap(True)
        self.setUniformItemSizes(True)
        self._empty_text = empty_text
        self._rows: list[PredictionRow] = []
        self._decoder = LatestRequestRunner(self)
        self._decoder.result_ready.connect(self._on_thumbnails_decoded)
        self.itemClicked.connect(self._on_item_clicked)
        self.itemDoubleClicked.connect(self._on_item_double_clicked)
        self.setToolTip(empty_text)

    def set_rows(self, rows: Sequence[PredictionRow], notes: Sequence[str] = ()) -> None:
        """Show ``rows`` (at most ``MAX_TILES``), ``notes[i]`` as a third caption line."""
        self._rows = list(rows)[:MAX_TILES]
        self.clear()
        placeholder = QPixmap(TILE, TILE)
        placeholder.fill(QColor("#d9dde3"))
        for index, row in enumerate(self._rows):
            note = notes[index] if index < len(notes) else ""
            item = QListWidgetItem(QIcon(placeholder), caption(row, note))
            item.setToolTip(f"{row.path}\nloss {row.loss:.3f}")
            item.setData(Qt.ItemDataRole.UserRole, index)
            self.addItem(item)
        if self._rows:
            self._decoder.submit(decode_thumbnails, [r.path for r in self._rows], TILE)
        else:
            self._decoder.cancel()

    def rows(self) -> list[PredictionRow]:
        """The rows shown, in tile order."""
        return list(self._rows)

    def is_decoding(self) -> bool:
        """True while thumbnails are being decoded."""
        return self._decoder.is_busy()

    def _on_thumbnails_decoded(self, thumbnails: list[np.ndarray | None]) -> None:
        for index, thumbnail in enumerate(thumbnails[: self.count()]):
            if thumbnail is not None:
                self.item(index).setIcon(QIcon(QPixmap.fromImage(numpy_to_qimage(thumbnail))))
        self.thumbnails_shown.emit()

    def _on_item_clicked(self, item: QListWidgetItem) -> None:
        self.row_chosen.emit(self._rows[int(item.data(Qt.ItemDataRole.UserRole))])

    def _on_item_double_clicked(self, item: QListWidgetItem) -> None:
        row = self._rows[int(item.data(Qt.ItemDataRole.UserRole))]
        QDesktopServices.openUrl(QUrl.fromLocalFile(row.path))
