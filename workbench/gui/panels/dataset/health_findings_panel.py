"""The data health check of the dataset panel: run it, read the findings, leave files out.

"Check health" runs ``check_health`` in the pool with a progress bar and Cancel. Each finding
is a row (title, count, why); selecting one shows its files as thumbnails, copies side by side.
"Leave out of training" writes the files of the chosen findings to an exclusion list in the
cache folder and hands its path to the settings (``exclude_file``); "Include all again" clears
it. The user's files are never touched.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QSize, Qt, Signal, Slot
from PySide6.QtGui import QColor, QImage, QPainter, QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListView,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.gui.widgets.elided_label import ElidedLabel
from workbench.gui.widgets.thumbnail_browser import decode_thumbnail
from workbench.gui.workers.health_check_runner import HealthCheckRunner
from workbench.gui.workers.pool_tasks import LatestRequestRunner

if TYPE_CHECKING:
    from workbench.core.data.health.findings import Finding, HealthReport

TILE_SIZE = 96
# Problems of one finding shown as thumbnails, and images of one problem side by side.
MAX_TILES = 40
MAX_SIDE_BY_SIDE = 3


def decode_finding_tiles(groups: list[tuple[str, ...]], size: int) -> list[list[np.ndarray | None]]:
    """Pool thread: thumbnails of each group's first images; None where a file cannot be
    decoded (an unreadable finding's tile is then drawn crossed out)."""
    tiles = []
    for files in groups:
        row: list[np.ndarray | None] = []
        for path in files[:MAX_SIDE_BY_SIDE]:
            try:
                row.append(decode_thumbnail(path, size))
            except Exception:  # noqa: BLE001 - any unreadable file is drawn as broken
                row.append(None)
        tiles.append(row)
    return tiles


def side_by_side(images: list[np.ndarray | None], size: int) -> QPixmap:
    """One pixmap with ``images`` next to each other, each in a ``size`` square."""
    pixmap = QPixmap(size * max(1, len(images)) + 4 * (len(images) - 1), size)
    pixmap.fill(QColor("#eef0f3"))
    painter = QPainter(pixmap)
    for index, array in enumerate(images):
        left = index * (size + 4)
        if array is None:
            painter.setPen(QColor("#c0392b"))
            painter.drawLine(left + size // 3, size // 3, left + 2 * size // 3, 2 * size // 3)
            painter.drawLine(left + 2 * size // 3, size // 3, left + size // 3, 2 * size // 3)
            continue
        array = np.ascontiguousarray(array)
        height, width = array.shape[:2]
        image = QImage(array.data, width, height, 3 * width, QImage.Format.Format_RGB888)
        painter.drawImage(left + (size - width) // 2, (size - height) // 2, image)
    painter.end()
    return pixmap


class HealthFindingsPanel(QWidget):
    """Runs the health check of one folder and shows what it found."""

    exclude_file_chosen = Signal(str)
    """The exclusion list to train with: its path, or "" to train on every image again."""
    report_ready = Signal(object)
    """A check finished: the ``HealthReport``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._root = ""
        self._options: tuple[float, int, str] = (0.2, 0, "")
        self._report: HealthReport | None = None
        self._model_report: HealthReport | None = None  # a finished run's, of this folder
        self._left_out: list[str] = []  # finding kinds, in the order chosen
        self._checker = HealthCheckRunner(self)
        self._tiles = LatestRequestRunner(self, priority=-1)
        self._build()

        self.check_button.clicked.connect(self.start_check)
        self.cancel_button.clicked.connect(self._checker.cancel)
        self.leave_out_button.clicked.connect(self._on_leave_out_clicked)
        self.include_button.clicked.connect(self._on_include_clicked)
        self.findings_tree.currentItemChanged.connect(self._on_finding_selected)
        self._checker.progressed.connect(self._on_progress)
        self._checker.report_ready.connect(self._on_report)
        self._checker.failed.connect(self._on_failed)
        self._checker.cancelled.connect(self._on_cancelled)
        self._tiles.result_ready.connect(self._on_tiles)

    # ---------------------------------------------------------------- construction
    def _build(self) -> None:
        self.check_button = QPushButton("Check health")
        self.check_button.setToolTip("Decode every image once and look for unreadable files, "
                                     "duplicates, train/val leakage, conflicting labels and "
                                     "odd images; your files are only read")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m images")
        self.progress.hide()
        self.status_label = ElidedLabel("Not checked yet.")
        self.findings_tree = QTreeWidget()
        self.findings_tree.setHeaderLabels(["Finding", "Count", "Why"])
        self.findings_tree.setRootIsDecorated(False)
        self.findings_tree.setColumnWidth(0, 145)
        self.findings_tree.setColumnWidth(1, 40)
        self.findings_tree.setWordWrap(True)  # a long reason wraps in its row, never cut
        self.findings_tree.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.tiles_list = QListWidget()
        self.tiles_list.setViewMode(QListView.ViewMode.IconMode)
        self.tiles_list.setResizeMode(QListView.ResizeMode.Adjust)
        self.tiles_list.setWordWrap(True)
        self.tiles_list.setIconSize(QSize(MAX_SIDE_BY_SIDE * (TILE_SIZE + 4), TILE_SIZE))
        self.leave_out_button = QPushButton("Leave out of training")
        self.leave_out_button.setEnabled(False)
        self.leave_out_button.setToolTip("List the files of this finding in the run's "
                                         "exclusion list; nothing on disk is moved or deleted")
        self.include_button = QPushButton("Include all again")
        self.include_button.setEnabled(False)
        self.model_label = ElidedLabel(max_lines=2)
        self.model_label.hide()
        self.excluded_label = ElidedLabel(max_lines=2)
        self.excluded_label.hide()
        self.excluded_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        # Buttons in one row, the two status lines below: the findings get the height.
        top = QHBoxLayout()
        for widget in (self.check_button, self.cancel_button):
            top.addWidget(widget)
        top.addStretch(1)
        top.addWidget(self.leave_out_button)
        top.addWidget(self.include_button)
        status = QHBoxLayout()
        status.addWidget(self.progress, 1)
        status.addWidget(self.status_label, 2)
        # Long folder names and report paths are clipped, never widen the panel.
        for label in (self.status_label, self.model_label, self.excluded_label):
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.findings_tree)
        body.addWidget(self.tiles_list)
        body.setStretchFactor(0, 2)
        body.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addLayout(status)
        layout.addWidget(self.model_label)
        layout.addWidget(body, 1)
        layout.addWidget(self.excluded_label)

    # ---------------------------------------------------------------- public API
    def set_folder(self, root: str) -> None:
        """Forget the findings of another folder; a running check is cancelled."""
        if root == self._root:
            return
        self._checker.cancel()
        self._root = root
        self._report = None
        self._model_report = None
        self.model_label.hide()
        self._left_out = []
        self.findings_tree.clear()
        self.tiles_list.clear()
        self.status_label.setText("Not checked yet." if root else "")
        self.excluded_label.hide()
        self.include_button.setEnabled(False)
        self.leave_out_button.setEnabled(False)

    def set_options(self, val_fraction: float, seed: int, cache_dir: str = "") -> None:
        """The split (for leakage in the automatic split) and where the results are kept."""
        self._options = (val_fraction, seed, cache_dir)

    def report(self) -> HealthReport | None:
        """The findings of the last finished check of the current folder."""
        return self._report

    def show_model_findings(self, report: HealthReport) -> bool:
        """Add what a finished run's model found among this folder's validation images
        (``feature_health.json``) below the folder's own findings; False, and nothing
        shown, when the run trained on another folder."""
        if not self._root or os.path.realpath(report.root) != os.path.realpath(self._root):
            return False
        self._model_report = report
        self._fill_tree()
        named = {"model_near_duplicate": "near-duplicate group(s)", "model_outlier": "outlier(s)"}
        counts = " and ".join(f"{f.count:,} {named.get(f.kind, f.title.lower())}"
                              for f in report.findings)
        withheld = getattr(report, "withheld", "")  # the model was too weak for findings
        self.model_label.setText(withheld or (
            f"After training, the best model's features of the {report.images:,} validation "
            f"images found {counts or 'nothing more'}, listed as (model) findings."))
        self.model_label.setToolTip(report.report_path)
        self.model_label.show()
        return True

    def findings(self) -> list[Finding]:
        """Everything shown: the folder check's findings, then the trained model's."""
        return [f for r in (self._report, self._model_report) if r is not None
                for f in r.findings]

    def wait_for_done(self, msecs: int = -1) -> bool:
        """Block until no check or thumbnail job runs (shutdown and tests)."""
        return self._checker.wait_for_done(msecs) and self._tiles.wait_for_done(msecs)

    @Slot()
    def start_check(self) -> None:
        """Check the current folder in the pool."""
        if not self._root:
            return
        val_fraction, seed, cache_dir = self._options
        self.check_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)
        self.progress.show()
        self.status_label.setText(f"Checking {os.path.basename(self._root)}…")
        self.status_label.setToolTip(self._root)
        self._checker.start(self._root, cache_dir, val_fraction, seed)

    # ---------------------------------------------------------------- slots
    @Slot(int, int)
    def _on_progress(self, done: int, total: int) -> None:
        if self.progress.maximum() != total:
            self.progress.setRange(0, total)
        if done * 100 // max(1, total) != self.progress.value() * 100 // max(1, total):
            self.progress.setValue(done)  # redrawn when the whole percent changes

    @Slot(object)
    def _on_report(self, report: HealthReport) -> None:
        self._end_check()
        self._report = report
        problems = report.problem_findings()
        reused = f" ({report.reused:,} unchanged since the last check)" if report.reused else ""
        self.status_label.setText(
            f"{report.images:,} images checked in {report.seconds:.1f} s{reused}: "
            f"{len(problems)} kind(s) of problem.")
        self.status_label.setToolTip(f"Report: {report.report_path}")
        self._fill_tree()
        self.report_ready.emit(report)

    def _fill_tree(self) -> None:
        self.findings_tree.clear()
        for finding in self.findings():
            why = finding.verdict or finding.explanation
            item = QTreeWidgetItem([finding.title, f"{finding.count:,}" if finding.items
                                    else "", why])
            item.setData(0, Qt.ItemDataRole.UserRole, finding.kind)
            for column in range(3):
                item.setToolTip(column, why)
            self.findings_tree.addTopLevelItem(item)
        if any(f.items for f in self.findings()):
            self.findings_tree.setCurrentItem(self.findings_tree.topLevelItem(0))

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._end_check()
        self.status_label.setText(f"Health check failed: {message}")

    @Slot()
    def _on_cancelled(self) -> None:
        self._end_check()
        self.status_label.setText("Health check cancelled; what was decoded is kept for the "
                                  "next check.")

    def _end_check(self) -> None:
        self.progress.hide()
        self.check_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    @Slot(QTreeWidgetItem, QTreeWidgetItem)
    def _on_finding_selected(self, current: QTreeWidgetItem | None, _previous: object) -> None:
        finding = self._selected_finding(current)
        self.tiles_list.clear()
        self.leave_out_button.setEnabled(bool(finding and finding.leave_out()))
        if finding is None or not finding.items:
            return
        shown = finding.items[:MAX_TILES]
        for item in shown:
            names = " | ".join(os.path.relpath(p, self._root) for p in item.files)
            tile = QListWidgetItem(item.reason)
            tile.setToolTip(f"{names}\n{item.reason}")
            tile.setSizeHint(QSize(MAX_SIDE_BY_SIDE * (TILE_SIZE + 4) + 8, TILE_SIZE + 48))
            self.tiles_list.addItem(tile)
        self._tiles.submit(decode_finding_tiles, [i.files for i in shown], TILE_SIZE)

    @Slot(object)
    def _on_tiles(self, tiles: list[list[np.ndarray | None]]) -> None:
        for row, images in enumerate(tiles[: self.tiles_list.count()]):
            self.tiles_list.item(row).setIcon(side_by_side(images, TILE_SIZE))

    @Slot()
    def _on_leave_out_clicked(self) -> None:
        finding = self._selected_finding(self.findings_tree.currentItem())
        if finding is None:
            return
        if finding.kind not in self._left_out:
            self._left_out.append(finding.kind)
        self._write_exclusions()

    @Slot()
    def _on_include_clicked(self) -> None:
        self._left_out = []
        self.excluded_label.setText("Every image is used for training.")
        self.excluded_label.show()
        self.include_button.setEnabled(False)
        self.exclude_file_chosen.emit("")

    def _write_exclusions(self) -> None:
        from workbench.core.data.cache_folder import EXCLUDE_FILE, health_folder
        from workbench.core.data.health.exclusion_list import write_exclusion_file

        findings = [f for f in self.findings() if f.kind in self._left_out]
        files = list(dict.fromkeys(p for f in findings for p in f.leave_out()))
        titles = ", ".join(f.title.lower() for f in findings)
        try:
            path = write_exclusion_file(health_folder(self._root, self._options[2]) / EXCLUDE_FILE,
                                        self._root, files, f"left out: {titles}")
        except (OSError, ValueError) as exc:
            self.excluded_label.setText(f"Cannot write the exclusion list: {exc}")
            return
        self.excluded_label.setText(f"{len(files):,} file(s) left out of training ({titles}), "
                                    "listed in the settings' exclude_file.")
        self.excluded_label.setToolTip(str(path))
        self.excluded_label.show()
        self.include_button.setEnabled(True)
        self.exclude_file_chosen.emit(str(path))

    def _selected_finding(self, item: QTreeWidgetItem | None) -> Finding | None:
        kind = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        return next((f for f in self.findings() if f.kind == kind), None)
