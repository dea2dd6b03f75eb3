"""Export a run's model in several formats, each measured on this machine, side by side.

The user ticks the formats (TorchScript, ONNX float32, ONNX INT8, ONNX float16) and a folder;
each export runs in a child process started from the thread pool, one after the other, through
``workbench.core.models.deployment.export_and_measure``, and adds a row: file size, validation
accuracy against float32's, top-1 agreement with float32, batch-1 latency, images/s, how the
file was made and checked against the trained model ("TorchScript, scripted; ..." or "ONNX
opset 18; ..."). Each row says its one verdict first, beside the file's name (VERIFIED, or
NOT VERIFIED with the reason: an INT8 file that lost more than a point); the columns after
it are the details. *Save report* writes the run's HTML report, which carries the same table.
"""

from __future__ import annotations

import math
from pathlib import Path

from PySide6.QtCore import QThreadPool, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from workbench.core.models.export_formats import DEFAULT_FILE_NAMES, EXPORT_FORMATS
from workbench.gui.workers.export_worker import export_and_measure_in_fresh_process
from workbench.gui.workers.pool_tasks import FunctionTask

COLUMNS = ("File", "Verdict", "Format", "Size", "Val accuracy", "Agreement with float32",
           "Batch-1 latency", "Images/s (batch 32)", "How it was made and checked")
VERDICT_COLUMN = COLUMNS.index("Verdict")
VERDICT_COLUMN_WIDTH = 260
HOW_COLUMN = COLUMNS.index("How it was made and checked")
HOW_COLUMN_WIDTH = 300
DIALOG_WIDTH = 1240  # every column in view on a 1366 px screen
DEFAULT_CHOICE = ("onnx", "onnx-int8")


def _export_and_measure(model_file: str, out_path: str, export_format: str) -> object:
    # In a child process: in this one, serialising and importing onnx would hold the
    # interpreter's lock for seconds and freeze the window.
    return export_and_measure_in_fresh_process(model_file, out_path, export_format)


def _write_report(run_dir: str) -> str:
    from workbench.core.data.cache_folder import health_report_of_run
    from workbench.core.runs.run_report import write_run_report

    return str(write_run_report(run_dir, health_file=health_report_of_run(run_dir)))


class ExportDialog(QDialog):
    """The export dialog of one model file (a run's best_model.pt).

    Signals:
        exported(DeploymentResult): one format was written and measured.
        all_done(): every ticked format has been tried.
        report_saved(str): the HTML report's path.
    """

    exported = Signal(object)
    all_done = Signal()
    report_saved = Signal(str)

    def __init__(self, model_file: str, run_dir: str, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export model")
        self.model_file, self.run_dir = model_file, run_dir
        self._queue: list[str] = []
        self._busy = False
        self.format_boxes = {name: QCheckBox(f"{name}: {text}", self)
                             for name, text in EXPORT_FORMATS.items()}
        for name, box in self.format_boxes.items():
            box.setChecked(name in DEFAULT_CHOICE)
        self.folder_edit = QLineEdit(run_dir, self)
        self.browse_button = QPushButton("Browse\u2026", self)
        self.export_button = QPushButton("Export and measure", self)
        self.report_button = QPushButton("Save report", self)
        self.close_button = QPushButton("Close", self)
        self.status_label = QLabel("Each file is measured here on the run's validation "
                                   "images against the float32 model.", self)
        self.status_label.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # The verdict and how each file was checked run to a sentence: wrapped in columns of
        # their own width, the verdict next to the file name so it is read first.
        header.setSectionResizeMode(VERDICT_COLUMN, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(VERDICT_COLUMN, VERDICT_COLUMN_WIDTH)
        header.setSectionResizeMode(HOW_COLUMN, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(HOW_COLUMN, HOW_COLUMN_WIDTH)
        self.table.setWordWrap(True)
        header.setStretchLastSection(True)
        self._build_layout()
        self.browse_button.clicked.connect(self._on_browse)
        self.export_button.clicked.connect(self.start_exports)
        self.report_button.clicked.connect(self.save_report)
        self.close_button.clicked.connect(self.close)
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        self.resize(min(DIALOG_WIDTH, screen.width() - 40) if screen else DIALOG_WIDTH, 500)

    def _build_layout(self) -> None:
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"Model: {self.model_file}", self))
        for box in self.format_boxes.values():
            layout.addWidget(box)
        folder = QHBoxLayout()
        folder.addWidget(QLabel("Folder:", self))
        folder.addWidget(self.folder_edit, 1)
        folder.addWidget(self.browse_button)
        layout.addLayout(folder)
        layout.addWidget(self.status_label)
        layout.addWidget(self.table, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.export_button)
        buttons.addWidget(self.report_button)
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)
        layout.addLayout(buttons)

    # ------------------------------------------------------------------ actions
    def is_busy(self) -> bool:
        return self._busy

    def start_exports(self) -> None:
        """Export every ticked format into the folder, one after the other, in the pool."""
        if self._busy:
            return
        self._queue = [name for name, box in self.format_boxes.items() if box.isChecked()]
        if not self._queue:
            self.status_label.setText("Tick at least one format.")
            return
        self._set_busy(True)
        self._next()

    def save_report(self) -> None:
        """Write the run's HTML report (with this table) in the pool."""
        if self._busy:
            return
        self._set_busy(True)
        self.status_label.setText("Writing the run report\u2026")
        self._start(_write_report, (self.run_dir,), self._on_report_written)

    # ------------------------------------------------------------------ the queue
    def _next(self) -> None:
        if not self._queue:
            self._set_busy(False)
            self.status_label.setText(f"Done; the figures are also in "
                                      f"{Path(self.folder_edit.text()) / 'export_report.json'}.")
            self.all_done.emit()
            return
        name = self._queue.pop(0)
        out_path = str(Path(self.folder_edit.text()) / DEFAULT_FILE_NAMES[name])
        self.status_label.setText(f"Exporting {name} to {out_path} and measuring it "
                                  "(accuracy, latency, images/s)\u2026")
        self._start(_export_and_measure, (self.model_file, out_path, name),
                    self._on_exported, name)

    def _start(self, fn, args: tuple, on_success, name: str = "") -> None:
        task = FunctionTask(0, fn, args)
        task.signals.succeeded.connect(lambda _id, result: on_success(result))
        task.signals.failed.connect(lambda _id, message: self._on_failed(name, message))
        QThreadPool.globalInstance().start(task)

    def _on_exported(self, result: object) -> None:
        self._add_row(result.figures, result.verification)
        self.exported.emit(result)
        self._next()

    def _on_failed(self, name: str, message: str) -> None:
        if name:
            row = self.table.rowCount()
            self.table.insertRow(row)
            self.table.setItem(row, 0, QTableWidgetItem(DEFAULT_FILE_NAMES[name]))
            self.table.setItem(row, COLUMNS.index("Format"), QTableWidgetItem(name))
            failed = QTableWidgetItem(f"NOT WRITTEN: {message}")
            failed.setForeground(QColor("#b00020"))
            failed.setToolTip(message)
            self.table.setItem(row, VERDICT_COLUMN, failed)
            self._next()
            return
        self._set_busy(False)
        self.status_label.setText(f"Report failed: {message}")

    def _on_report_written(self, path: str) -> None:
        self._set_busy(False)
        self.status_label.setText(f"Report written to {path}; it opens in any browser.")
        self.report_saved.emit(path)

    def _add_row(self, figures, verification: str) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        cells = (Path(figures.path).name, figures.verdict, figures.export_format,
                 f"{figures.size_bytes / 2**20:.2f} MiB", _percent(figures.val_accuracy, 1)
                 + ("" if figures.float32_val_accuracy is None else
                    f" (float32 {_percent(figures.float32_val_accuracy, 1)})"),
                 _percent(figures.top1_agreement, 1),
                 f"{figures.latency_ms_median:.2f} ms (p95 {figures.latency_ms_p95:.2f})",
                 f"{figures.images_per_second:,.0f}", verification)
        for column, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(text)
            if column == VERDICT_COLUMN:
                item.setForeground(QColor("#1b7a1b" if figures.verified else "#b00020"))
            self.table.setItem(row, column, item)
        self.table.resizeRowToContents(row)  # a NOT VERIFIED verdict runs to three lines

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        for widget in (self.export_button, self.report_button, self.browse_button,
                       *self.format_boxes.values()):
            widget.setEnabled(not busy)

    def _on_browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export into", self.folder_edit.text())
        if folder:
            self.folder_edit.setText(folder)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        self._queue.clear()  # a job already in the pool finishes and reports to this dialog
        super().closeEvent(event)


def _percent(value: float | None, digits: int) -> str:
    if value is None or not math.isfinite(value):
        return "\u2013"
    return f"{100 * value:.{digits}f}%"
