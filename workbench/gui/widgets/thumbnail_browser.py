"""A grid of image thumbnails that stays smooth with 100,000 files.

``ThumbnailModel`` decodes nothing when its paths are set. A thumbnail is decoded only when the
view asks for the row's decoration, which a ``QListView`` with uniform item sizes does for the
rows it paints. Requests wait in a bounded last-in-first-out queue, so after a fast scroll the
rows now on screen are decoded first and rows scrolled past are forgotten (the view asks again
if they come back). At most a few decodes are in the pool at once; results are kept in an LRU
cache of pixmaps.

A dataset's training and validation images are shown one split at a time, of every class or
of one: the model filters its own rows (a NumPy mask over the labels, then one reset), so the
view and its widgets stay as they are and thumbnails already decoded stay cached.
"""

from __future__ import annotations

import os
from collections import OrderedDict, deque
from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import (
    QAbstractListModel,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSize,
    Qt,
    QThreadPool,
    Signal,
    Slot,
)
from PySide6.QtGui import QColor, QPainter, QPen, QPixmap, QResizeEvent
from PySide6.QtWidgets import QListView, QWidget

from workbench.gui.widgets.image_conversion import numpy_to_qimage
from workbench.gui.workers.pool_tasks import FunctionTask

TRAIN = "train"
VAL = "val"
ALL_CLASSES = -1
THUMBNAIL_SIZE = 112
MINIMUM_ROWS = 2
MINIMUM_THUMBNAIL_SIZE = 64
CACHE_SIZE = 2000
MAX_QUEUED = 256
# Thumbnails give way to the preview the user is looking at.
THUMBNAIL_PRIORITY = -1

Index = QModelIndex | QPersistentModelIndex


def decode_thumbnail(path: str, size: int) -> np.ndarray:
    """Pool thread: an RGB uint8 array whose longer side is at most ``size``.

    Decoded as training decodes (orientation, transparency, bit depth, size limits), but with
    ``Image.draft`` letting the JPEG decoder scale down by up to 8x, so a 24-megapixel photo
    costs a fraction of a full decode.

    Raises:
        ImageDecodeError: the file cannot be decoded (the tile is then drawn crossed out).
    """
    from PIL import Image

    from workbench.core.data.image_decoding import (
        ImageDecodeError,
        check_regular_file,
        decode_failure_reason,
        prepare_image,
    )

    check_regular_file(path)
    try:
        with Image.open(path) as image:
            image = prepare_image(image, "RGB", (size, size))
            image.thumbnail((size, size), Image.Resampling.BILINEAR)
            return np.asarray(image, dtype=np.uint8)
    except ImageDecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - malformed files raise all kinds of errors
        raise ImageDecodeError(path, decode_failure_reason(exc)) from exc


def _placeholder(size: int, broken: bool) -> QPixmap:
    """A flat tile shown while decoding; a crossed one for a file that cannot be read."""
    pixmap = QPixmap(size, size)
    pixmap.fill(QColor("#d9dde3") if not broken else QColor("#f2d7d5"))
    if broken:
        painter = QPainter(pixmap)
        painter.setPen(QPen(QColor("#c0392b"), 3))
        margin = size // 3
        painter.drawLine(margin, margin, size - margin, size - margin)
        painter.drawLine(size - margin, margin, margin, size - margin)
        painter.end()
    return pixmap


class ThumbnailModel(QAbstractListModel):
    """Image paths as a list model: file name as text, a lazily decoded thumbnail as decoration.

    Args:
        parent: Usual QObject parent.
        thumbnail_size: Longest side of a thumbnail in pixels.
        cache_size: How many decoded thumbnails to keep.
        max_in_flight: Decodes in the pool at once; by default one thread fewer than the pool
            has, so a scan or a preview always finds a free thread.
    """

    decode_requested = Signal(int)
    """A decode of this row was handed to the pool."""
    thumbnail_ready = Signal(int)
    """This row's thumbnail (or its unreadable-file tile) is now in the cache."""

    def __init__(
        self,
        parent: QObject | None = None,
        thumbnail_size: int = THUMBNAIL_SIZE,
        cache_size: int = CACHE_SIZE,
        max_in_flight: int | None = None,
    ) -> None:
        super().__init__(parent)
        self._pool = QThreadPool.globalInstance()
        self._size = thumbnail_size
        self._cache_size = cache_size
        self._max_in_flight = max_in_flight or max(1, self._pool.maxThreadCount() - 1)
        self._paths: list[str] = []
        # The dataset's images per split: paths and labels (set_dataset), and the filter shown.
        self._splits: dict[str, tuple[list[str], np.ndarray]] = {}
        self._filter = (TRAIN, ALL_CLASSES)
        self._cache: OrderedDict[str, QPixmap] = OrderedDict()
        self._queued: deque[tuple[int, str]] = deque()
        self._queued_paths: set[str] = set()
        # request id -> (row, path) of the decodes handed to the pool (max_in_flight at most)
        self._in_flight: dict[int, tuple[int, str]] = {}
        self._last_request_id = 0
        # Answering SizeHintRole keeps the view from measuring a row through its decoration:
        # with uniform item sizes Qt measures the last row, which would decode it.
        self._item_size = QSize(thumbnail_size + 12, thumbnail_size + 28)
        self._loading = _placeholder(thumbnail_size, broken=False)
        self._broken = _placeholder(thumbnail_size, broken=True)

    # ---------------------------------------------------------------- public API
    def set_paths(self, paths: Sequence[str]) -> None:
        """Show these images; nothing is decoded until the view asks for a row."""
        self.beginResetModel()
        self._paths = list(paths)
        self._queued.clear()
        self._queued_paths.clear()
        self.endResetModel()

    def set_dataset(self, train: Sequence[tuple[str, int]],
                    val: Sequence[tuple[str, int]]) -> None:
        """A dataset's (path, class index) samples; the current filter picks what is shown."""
        self._splits = {
            split: ([path for path, _ in samples],
                    np.fromiter((label for _, label in samples), dtype=np.int64,
                                count=len(samples)))
            for split, samples in ((TRAIN, train), (VAL, val))
        }
        self._update_filtered_paths()

    def set_filter(self, split: str = TRAIN, label: int = ALL_CLASSES) -> None:
        """Show the ``split`` images ("train" or "val") of class ``label`` (-1: every class)."""
        if split not in (TRAIN, VAL):
            raise ValueError(f"split must be '{TRAIN}' or '{VAL}' (got {split!r})")
        self._filter = (split, label)
        self._update_filtered_paths()

    def current_filter(self) -> tuple[str, int]:
        """(split, class index or -1) shown."""
        return self._filter

    def _update_filtered_paths(self) -> None:
        split, label = self._filter
        paths, labels = self._splits.get(split, ([], np.zeros(0, dtype=np.int64)))
        if label == ALL_CLASSES:
            self.set_paths(paths)
        else:
            self.set_paths([paths[i] for i in np.flatnonzero(labels == label)])

    def paths(self) -> list[str]:
        """The images shown, in order."""
        return list(self._paths)

    def path_at(self, row: int) -> str:
        """Path of ``row``."""
        return self._paths[row]

    def set_item_size(self, size: QSize) -> None:
        """Size of one item (thumbnail and caption) reported to the view."""
        self._item_size = QSize(size)

    def cached_thumbnail(self, path: str) -> QPixmap | None:
        """The decoded thumbnail of ``path``, or None when it is not in the cache."""
        return self._cache.get(path)

    def pending_count(self) -> int:
        """Decodes waiting in the queue or running in the pool."""
        return len(self._queued) + len(self._in_flight)

    # ---------------------------------------------------------------- Qt model overrides
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._paths)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or index.row() >= len(self._paths):
            return None
        path = self._paths[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return os.path.basename(path)
        if role == Qt.ItemDataRole.ToolTipRole:
            return path
        if role == Qt.ItemDataRole.SizeHintRole:
            return self._item_size
        if role == Qt.ItemDataRole.DecorationRole:
            return self._thumbnail_for(index.row(), path)
        return None

    # ---------------------------------------------------------------- decoding
    def _thumbnail_for(self, row: int, path: str) -> QPixmap:
        pixmap = self._cache.get(path)
        if pixmap is not None:
            self._cache.move_to_end(path)
            return pixmap
        in_flight = any(path == p for _, p in self._in_flight.values())
        if not in_flight and path not in self._queued_paths:
            self._queued.append((row, path))
            self._queued_paths.add(path)
            if len(self._queued) > MAX_QUEUED:
                _, dropped = self._queued.popleft()
                self._queued_paths.discard(dropped)
            self._start_queued()
        return self._loading

    def _start_queued(self) -> None:
        """Hand the most recently requested rows to the pool, up to ``max_in_flight``."""
        while self._queued and len(self._in_flight) < self._max_in_flight:
            row, path = self._queued.pop()
            self._queued_paths.discard(path)
            self._last_request_id += 1
            task = FunctionTask(self._last_request_id, decode_thumbnail, (path, self._size))
            task.signals.succeeded.connect(self._on_decode_succeeded)
            task.signals.failed.connect(self._on_decode_failed)
            task.signals.finished.connect(self._on_decode_finished)
            self._in_flight[self._last_request_id] = (row, path)
            self._pool.start(task, THUMBNAIL_PRIORITY)
            self.decode_requested.emit(row)

    @Slot(int, object)
    def _on_decode_succeeded(self, request_id: int, array: np.ndarray) -> None:
        self._store(request_id, QPixmap.fromImage(numpy_to_qimage(array)))

    @Slot(int, str)
    def _on_decode_failed(self, request_id: int, _message: str) -> None:
        self._store(request_id, self._broken)

    @Slot(int)
    def _on_decode_finished(self, request_id: int) -> None:
        del self._in_flight[request_id]
        self._start_queued()

    def _store(self, request_id: int, pixmap: QPixmap) -> None:
        """GUI thread: cache the pixmap, repaint the row if it still shows this file."""
        row, path = self._in_flight[request_id]
        self._cache[path] = pixmap
        self._cache.move_to_end(path)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        if row < len(self._paths) and self._paths[row] == path:
            index = self.index(row)
            self.dataChanged.emit(index, index, [Qt.ItemDataRole.DecorationRole])
            self.thumbnail_ready.emit(row)


class ThumbnailBrowser(QListView):
    """A wrapping grid of thumbnails; emits ``image_selected`` when the current image changes."""

    image_selected = Signal(str)
    """The current thumbnail changed to this image path."""

    def __init__(self, parent: QWidget | None = None, thumbnail_size: int = THUMBNAIL_SIZE):
        super().__init__(parent)
        self.thumbnail_model = ThumbnailModel(self, thumbnail_size=thumbnail_size)
        self.setModel(self.thumbnail_model)
        self.setViewMode(QListView.ViewMode.IconMode)
        self.setMovement(QListView.Movement.Static)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setUniformItemSizes(True)
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(500)
        self.setWrapping(True)
        self._thumbnail_size = thumbnail_size
        self._set_cell_size(thumbnail_size)
        # Two rows where there is room: one row of a few images reads as a strip, not as a
        # browser. On a small screen the tiles shrink (down to MINIMUM_THUMBNAIL_SIZE) to keep
        # two rows; squeezed further (the health findings below a 768 px screen need the
        # height), one row of small tiles is the least it asks for.
        small = min(thumbnail_size, MINIMUM_THUMBNAIL_SIZE)
        self.setMinimumHeight(self._row_height(small) + 2 * self.frameWidth())
        self.setSpacing(0)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setSelectionMode(QListView.SelectionMode.SingleSelection)
        self.setEditTriggers(QListView.EditTrigger.NoEditTriggers)
        self.setDragEnabled(False)
        self.setVerticalScrollMode(QListView.ScrollMode.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(24)
        self.selectionModel().currentChanged.connect(self._on_current_changed)

    def thumbnail_size(self) -> int:
        """The side of the thumbnails as drawn now, in pixels."""
        return self.iconSize().width()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        text = self._row_height(0)  # caption and padding of a row
        fitting = self.viewport().height() // MINIMUM_ROWS - text
        size = max(min(self._thumbnail_size, MINIMUM_THUMBNAIL_SIZE),
                   min(self._thumbnail_size, fitting))
        if size != self.thumbnail_size():
            self._set_cell_size(size)

    def _row_height(self, thumbnail_size: int) -> int:
        return thumbnail_size + self.fontMetrics().height() + 16

    def _set_cell_size(self, thumbnail_size: int) -> None:
        """Draw the thumbnails ``thumbnail_size`` wide (they are decoded at the full size and
        scaled down, so no decode is repeated)."""
        self.setIconSize(QSize(thumbnail_size, thumbnail_size))
        item_height = self._row_height(thumbnail_size) - 6
        self.thumbnail_model.set_item_size(QSize(thumbnail_size + 12, item_height))
        self.setGridSize(QSize(thumbnail_size + 16, item_height + 6))

    def set_paths(self, paths: Sequence[str]) -> None:
        """Show these images (nothing is decoded until a row is painted)."""
        self.thumbnail_model.set_paths(paths)

    def set_dataset(self, train: Sequence[tuple[str, int]],
                    val: Sequence[tuple[str, int]]) -> None:
        """Show a dataset's images through ``set_filter`` (the training split of every class
        until it is changed)."""
        self.thumbnail_model.set_dataset(train, val)
        self.scrollToTop()

    def set_filter(self, split: str = TRAIN, label: int = ALL_CLASSES) -> None:
        """Show one split ("train" or "val") of one class (-1: every class); see the model."""
        self.thumbnail_model.set_filter(split, label)
        self.scrollToTop()

    def select_row(self, row: int) -> None:
        """Make ``row`` the current, selected image and scroll to it."""
        index = self.thumbnail_model.index(row)
        self.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect
        )
        self.scrollTo(index)

    @Slot(QModelIndex, QModelIndex)
    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.image_selected.emit(self.thumbnail_model.path_at(current.row()))
