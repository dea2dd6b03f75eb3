"""Choose an image folder and see what training will make of it.

The scan itself (``workbench.core.data.dataset_scan.scan_dataset``) runs in the thread pool; a newer
folder supersedes a scan still running. The panel shows the layout found, the per-class counts,
an imbalance warning with the two remedies, the files left out and the images: training or
validation, of every class or of one.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.core.file_names import shown_name
from workbench.gui.panels.dataset.health_findings_panel import HealthFindingsPanel
from workbench.gui.widgets.class_counts_chart import ClassCountsChart
from workbench.gui.widgets.thumbnail_browser import ALL_CLASSES, TRAIN, VAL, ThumbnailBrowser
from workbench.gui.widgets.vertical_scroll_area import VerticalScrollArea
from workbench.gui.workers.pool_tasks import LatestRequestRunner

if TYPE_CHECKING:
    from workbench.core.data.dataset_scan import DatasetScan

IMBALANCE_RATIO = 3.0
MAX_RECENT_FOLDERS = 10
# The sections' shares of the height: chart, scan or health findings, thumbnails.
SCAN_SHARES = (2, 2, 5)
HEALTH_SHARES = (2, 6, 3)
CHART_MINIMUM_HEIGHT = 60  # two rows of bars; more rows scroll (the chart keeps its own height)
WEIGHTED_LOSS = "weighted_loss"
WEIGHTED_SAMPLER = "weighted_sampler"


def run_scan(root: str, val_fraction: float, seed: int, cache_dir: str = "",
             exclude_file: str = "") -> DatasetScan:
    """Pool thread: scan ``root`` as training will (``scan_for_run``: every image's header
    opened, the health check's copies kept on one side, the exclusion list applied), so the
    tab's counts are the run's. Imported here so building the panel does not load torch."""
    from workbench.core.data.training_scan import scan_for_run

    return scan_for_run(root, val_fraction, seed, cache_dir=cache_dir, exclude_file=exclude_file)


def layout_text(scan: DatasetScan) -> str:
    """The layout found, in the words of the panel."""
    if scan.layout == "train_val":
        return "Layout: train/ and val/ folders"
    return (
        f"Layout: one folder per class, auto split {scan.val_fraction:.0%} for validation"
    )


def dropped_folder(event: QDragEnterEvent | QDropEvent) -> str | None:
    """The local folder being dragged, or None when the drag carries anything else."""
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return None
    for url in mime.urls():
        path = url.toLocalFile()
        if path and os.path.isdir(path):
            return path
    return None


class ImbalanceBox(QFrame):
    """The warning shown for an imbalanced dataset, with one button per remedy."""

    option_chosen = Signal(str)
    """The user picked a remedy: "weighted_loss" or "weighted_sampler"."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imbalanceBox")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.message_label = QLabel()
        self.message_label.setProperty("role", "warning")
        self.message_label.setWordWrap(True)
        self.weighted_loss_button = QPushButton("Use class-weighted loss")
        self.weighted_sampler_button = QPushButton("Use weighted sampler")
        buttons = QHBoxLayout()
        buttons.addWidget(self.weighted_loss_button)
        buttons.addWidget(self.weighted_sampler_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message_label)
        layout.addLayout(buttons)
        self.weighted_loss_button.clicked.connect(lambda: self.option_chosen.emit(WEIGHTED_LOSS))
        self.weighted_sampler_button.clicked.connect(
            lambda: self.option_chosen.emit(WEIGHTED_SAMPLER)
        )

    def show_for(self, scan: DatasetScan) -> None:
        """Visible with an explanation when the largest class dwarfs the smallest."""
        ratio = scan.imbalance_ratio
        self.setVisible(ratio >= IMBALANCE_RATIO)
        if ratio < IMBALANCE_RATIO:
            return
        counts = scan.train_counts()
        largest = max(range(len(counts)), key=counts.__getitem__)
        smallest = min(range(len(counts)), key=counts.__getitem__)
        shown = "a class has no training images" if math.isinf(ratio) else f"{ratio:.1f}x"
        self.message_label.setText(
            f"Classes are imbalanced ({shown}): {scan.class_names[largest]} has "
            f"{counts[largest]:,} training images, {scan.class_names[smallest]} "
            f"{counts[smallest]:,}. The model will favour the large classes unless "
            "training compensates:"
        )


class DatasetPanel(QWidget):
    """Folder chooser, scan summary, class chart, problems list and thumbnails of one dataset."""

    folder_changed = Signal(str)
    """A new folder was chosen (its scan has started)."""
    dataset_scanned = Signal(object)
    """The scan of the current folder finished: the ``DatasetScan``."""
    scan_failed = Signal(str)
    """The current folder cannot be used; the message says why."""
    image_selected = Signal(str)
    """The user picked this image in the thumbnails."""
    imbalance_option_chosen = Signal(str)
    """The user picked a remedy for imbalance: "weighted_loss" or "weighted_sampler"."""
    exclude_file_chosen = Signal(str)
    """The data health check's exclusion list to train with ("" to use every image)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._folder = ""
        self._shared = False  # the sections were given their shares of the height
        self._scan: DatasetScan | None = None
        self._recent: list[str] = []
        self._val_fraction = 0.2
        self._seed = 0
        self._cache_dir = ""
        self._exclude_file = ""
        self._runner = LatestRequestRunner(self, priority=1)
        self._build_widgets()
        self._build_layout()
        self.setAcceptDrops(True)

        self.choose_button.clicked.connect(self._on_choose_clicked)
        self.recent_combo.activated.connect(self._on_recent_activated)
        self._runner.result_ready.connect(self._on_scan_ready)
        self._runner.failed.connect(self._on_scan_failed)
        self.imbalance_box.option_chosen.connect(self.imbalance_option_chosen)
        self.health_panel.exclude_file_chosen.connect(self.exclude_file_chosen)
        self.health_panel.report_ready.connect(self._on_health_report)
        self.thumbnails.image_selected.connect(self.image_selected)
        self.split_combo.currentIndexChanged.connect(self._on_split_changed)
        self.class_filter_combo.currentIndexChanged.connect(self._on_class_filter_changed)

    # ---------------------------------------------------------------- construction
    def _build_widgets(self) -> None:
        self.choose_button = QPushButton("Choose folder…")
        self.recent_combo = QComboBox()
        self.recent_combo.setPlaceholderText("Recent folders")
        self.recent_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.recent_combo.setMinimumContentsLength(30)
        self.hint_label = QLabel(
            "Choose or drop a folder: train/ and val/ with one folder per class inside, "
            "or just one folder per class."
        )
        self.hint_label.setWordWrap(True)
        self.layout_label = QLabel()
        self.summary_label = QLabel()
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.layout_label.hide()
        self.summary_label.hide()
        self.error_label = QLabel()
        self.error_label.setProperty("role", "error")
        self.error_label.setStyleSheet("color: #c0392b;")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        self.chart = ClassCountsChart()
        self.imbalance_box = ImbalanceBox()
        self.imbalance_box.hide()
        self.issues_list = QListWidget()
        self.issues_list.setAlternatingRowColors(True)
        self.issues_list.setWordWrap(True)
        self.thumbnails = ThumbnailBrowser()
        self.health_panel = HealthFindingsPanel()
        self.split_combo = QComboBox()
        self.split_combo.addItem("Training images", TRAIN)
        self.split_combo.addItem("Validation images", VAL)
        self.split_combo.setToolTip("Which images the thumbnails show")
        self.class_filter_combo = QComboBox()
        self.class_filter_combo.setToolTip("Show the images of one class only")
        self.class_filter_combo.addItem("All classes", ALL_CLASSES)

    def _build_layout(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.choose_button)
        top.addWidget(self.recent_combo, 1)

        classes_group = QGroupBox("Images per class")
        classes_layout = QVBoxLayout(classes_group)
        # Many classes make the chart taller than the room: it scrolls, the window stays.
        chart_scroll = VerticalScrollArea(self.chart)
        chart_scroll.setMinimumHeight(CHART_MINIMUM_HEIGHT)
        classes_layout.addWidget(chart_scroll, 1)
        classes_layout.addWidget(self.imbalance_box)
        self.issues_group = QGroupBox("Files left out and other problems")
        issues_layout = QVBoxLayout(self.issues_group)
        issues_layout.addWidget(self.issues_list)
        # The scan's own problems and the data health check share one section.
        self.problem_tabs = QTabWidget()
        self.problem_tabs.addTab(self.issues_group, "Scan")
        self.problem_tabs.addTab(self.health_panel, "Data health")
        images_group = QGroupBox("Images")
        images_layout = QVBoxLayout(images_group)
        filter_row = QHBoxLayout()
        filter_row.addWidget(self.split_combo)
        filter_row.addWidget(self.class_filter_combo, 1)
        images_layout.addLayout(filter_row)
        images_layout.addWidget(self.thumbnails)
        # One column of full-width sections: the thumbnail grid gets the panel's whole width.
        self.body_splitter = body = QSplitter(Qt.Orientation.Vertical)
        for section, stretch in ((classes_group, 3), (self.problem_tabs, 2), (images_group, 4)):
            body.addWidget(section)
            body.setStretchFactor(body.count() - 1, stretch)
        self.problem_tabs.currentChanged.connect(self._on_problem_tab_changed)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        for label in (self.hint_label, self.layout_label, self.summary_label, self.error_label):
            layout.addWidget(label)
        layout.addWidget(body, 1)

    # ---------------------------------------------------------------- public API
    def set_folder(self, path: str) -> None:
        """Scan ``path`` in the pool; ``dataset_scanned`` or ``scan_failed`` tells the outcome."""
        self._folder = os.fspath(path)
        self._scan = None
        self._remember(self._folder)
        self.health_panel.set_folder(self._folder)
        self.hint_label.hide()
        self.error_label.hide()
        self.layout_label.hide()
        self.summary_label.setText(f"Scanning {self._folder}…")
        self.summary_label.show()
        self._submit_scan()
        self.folder_changed.emit(self._folder)

    def folder(self) -> str:
        """The folder chosen last ("" before the first)."""
        return self._folder

    def scan(self) -> DatasetScan | None:
        """The scan of the current folder; None while scanning or when it failed."""
        return self._scan

    def set_scan_options(self, val_fraction: float, seed: int, cache_dir: str = "",
                         exclude_file: str = "") -> None:
        """The settings the run's scan reads (split, health check's cache, the files left
        out); the current folder is scanned again if they change, so the counts stay the
        run's."""
        split_changed = (val_fraction, seed) != (self._val_fraction, self._seed)
        changed = (cache_dir, exclude_file) != (self._cache_dir, self._exclude_file)
        self._val_fraction, self._seed = val_fraction, seed
        self._cache_dir, self._exclude_file = cache_dir, exclude_file
        self.health_panel.set_options(val_fraction, seed, cache_dir)
        if split_changed and self._folder:
            self.set_folder(self._folder)
        elif changed and self._folder:
            self._submit_scan()  # the health findings shown stay: only the counts change

    def recent_folders(self) -> list[str]:
        """Folders chosen before, most recent first (the main window persists them)."""
        return list(self._recent)

    def set_recent_folders(self, folders: list[str]) -> None:
        """Replace the recent folders list, e.g. with the one saved in the settings."""
        unique = list(dict.fromkeys(os.fspath(f) for f in folders if f))
        self._recent = unique[:MAX_RECENT_FOLDERS]
        self._update_recent_combo()

    def wait_for_scan(self, msecs: int = -1) -> bool:
        """Block until the pool has finished scanning (shutdown and tests); False on timeout."""
        return self._runner.wait_for_done(msecs) and self.health_panel.wait_for_done(msecs)

    # ---------------------------------------------------------------- drag and drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if dropped_folder(event) is not None:
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        folder = dropped_folder(event)
        if folder is None:
            event.ignore()
            return
        event.acceptProposedAction()
        self.set_folder(folder)

    # ---------------------------------------------------------------- slots
    @Slot()
    def _on_choose_clicked(self) -> None:
        start = self._folder or (self._recent[0] if self._recent else str(Path.home()))
        folder = QFileDialog.getExistingDirectory(self, "Choose an image folder", start)
        if folder:
            self.set_folder(folder)

    @Slot(int)
    def _on_recent_activated(self, index: int) -> None:
        folder = self.recent_combo.itemData(index)
        if folder and folder != self._folder:
            self.set_folder(folder)

    @Slot(object)
    def _on_scan_ready(self, scan: DatasetScan) -> None:
        self._scan = scan
        self.layout_label.setText(layout_text(scan))
        self.layout_label.show()
        self.summary_label.setText(scan.describe())
        self.chart.set_counts(scan.class_names, scan.train_counts(), scan.val_counts())
        self.imbalance_box.show_for(scan)
        self._update_issues(scan)
        self.thumbnails.set_dataset(scan.train, scan.val)
        self._update_class_filter(scan, keep_choice=False)  # another dataset, other classes
        if not self._shared:  # the first folder; later the user's own split of the height
            self._shared = True
            self._share_height()
        self.dataset_scanned.emit(scan)

    @Slot(str)
    def _on_scan_failed(self, message: str) -> None:
        self._scan = None
        self.layout_label.hide()
        self.summary_label.hide()
        self.error_label.setText(message)
        self.error_label.show()
        self.chart.clear_counts()
        self.imbalance_box.hide()
        self.issues_list.clear()
        self.issues_group.setTitle("Files left out and other problems")
        self.thumbnails.set_dataset([], [])
        self._update_class_filter(None, keep_choice=False)
        self.scan_failed.emit(message)

    @Slot(object)
    def _on_health_report(self, _report: object) -> None:
        # The automatic split keeps the duplicate groups just found on one side: scan again
        # so the counts and thumbnails show the split training will use.
        if self._scan is not None and self._scan.layout == "flat":
            self._submit_scan()

    @Slot(int)
    def _on_problem_tab_changed(self, _index: int) -> None:
        self._share_height()

    def _share_height(self) -> None:
        """The sections' heights by their shares of the panel: the health findings and their
        thumbnails need most of it; the scan's list of skipped files does not, and then two
        rows of thumbnails fit on a 768 px screen."""
        shares = HEALTH_SHARES if self.problem_tabs.currentWidget() is self.health_panel \
            else SCAN_SHARES
        total = sum(self.body_splitter.sizes()) or self.body_splitter.height()
        self.body_splitter.setSizes([total * share // sum(shares) for share in shares])

    @Slot(int)
    def _on_split_changed(self, _index: int) -> None:
        self._update_class_filter(self._scan)

    @Slot(int)
    def _on_class_filter_changed(self, _index: int) -> None:
        self._update_thumbnail_filter()

    # ---------------------------------------------------------------- updates
    def _submit_scan(self) -> None:
        self._runner.submit(run_scan, self._folder, self._val_fraction, self._seed,
                            self._cache_dir, self._exclude_file)

    def _update_issues(self, scan: DatasetScan) -> None:
        self.issues_list.clear()
        for mismatch in [*scan.mismatches, *scan.split_notes]:
            self.issues_list.addItem(mismatch)
        root = scan.root
        for skipped in scan.skipped:
            shown = shown_name(os.path.relpath(skipped.path, root)
                               if skipped.path.startswith(root) else skipped.path)
            self.issues_list.addItem(f"{shown}: {skipped.reason}")
        if scan.left_out:
            self.issues_list.addItem(f"{len(scan.left_out):,} file(s) left out by the exclusion "
                                     f"list {self._exclude_file}")
        total = len(scan.mismatches) + len(scan.split_notes) + len(scan.skipped)
        self.issues_group.setTitle(
            f"Files left out and other problems ({total:,})" if total else "No files left out"
        )

    def _update_class_filter(self, scan: DatasetScan | None, keep_choice: bool = True) -> None:
        """One entry per class with its image count in the chosen split; with ``keep_choice``
        the class chosen before stays chosen, else every class is shown."""
        chosen = self.class_filter_combo.currentData() if keep_choice else ALL_CLASSES
        counts = []
        if scan is not None:
            counts = scan.train_counts() if self.split_combo.currentData() == TRAIN \
                else scan.val_counts()
        self.class_filter_combo.blockSignals(True)
        self.class_filter_combo.clear()
        self.class_filter_combo.addItem(f"All classes ({sum(counts):,})", ALL_CLASSES)
        for label, name in enumerate(scan.class_names if scan is not None else []):
            self.class_filter_combo.addItem(f"{shown_name(name)} ({counts[label]:,})", label)
        index = self.class_filter_combo.findData(chosen)
        self.class_filter_combo.setCurrentIndex(max(index, 0))
        self.class_filter_combo.blockSignals(False)
        self._update_thumbnail_filter()

    def _update_thumbnail_filter(self) -> None:
        label = self.class_filter_combo.currentData()
        self.thumbnails.set_filter(self.split_combo.currentData(),
                                   ALL_CLASSES if label is None else label)

    def _remember(self, folder: str) -> None:
        self._recent = [folder, *[f for f in self._recent if f != folder]][:MAX_RECENT_FOLDERS]
        self._update_recent_combo()

    def _update_recent_combo(self) -> None:
        self.recent_combo.blockSignals(True)
        self.recent_combo.clear()
        for folder in self._recent:
            self.recent_combo.addItem(folder, folder)
        self.recent_combo.setCurrentIndex(
            self._recent.index(self._folder) if self._folder in self._recent else -1
        )
        self.recent_combo.blockSignals(False)
