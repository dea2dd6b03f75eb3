"""After (and during) training: the best epoch's per-class figures, confusion matrix and
predictions, with Grad-CAM, and export.

The table and matrix show the best epoch so far, the one ``best_model.pt`` holds; clicking a
matrix cell shows its images. predictions.csv is read in the thread pool whenever a new best
epoch wrote it. Export runs in a child process the pool waits on (see ``export_worker``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QThreadPool, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.core.models.export_formats import DEFAULT_FILE_NAMES
from workbench.core.runs.events import EpochEnd, RunEnd, RunStart
from workbench.core.runs.predictions_file import read_predictions
from workbench.core.runs.run_folder import BEST_MODEL
from workbench.core.runs.run_index import best_epoch_events
from workbench.gui.panels.export_dialog import ExportDialog
from workbench.gui.panels.results.class_metrics_table import ClassMetricsTable
from workbench.gui.panels.results.error_analysis_view import ErrorAnalysisView
from workbench.gui.widgets.confusion_matrix_view import ConfusionMatrixView
from workbench.gui.widgets.path_dialog import PathDialog, open_path
from workbench.gui.workers.export_worker import ExportJob, ExportSignals
from workbench.gui.workers.pool_tasks import LatestRequestRunner

# Pixels beside the galleries' tab names: the tab widget's frame.
TAB_BAR_SLACK = 8

if TYPE_CHECKING:  # the export module imports torch; the panel must not at import time
    from workbench.core.models.export import ExportResult

PREVIOUS_RUN_NOTE = "Previous run (trained before another image folder was opened):"


class ResultsPanel(QWidget):
    """Shows a run's results and exports its best model.

    Signals:
        export_finished(ExportResult): a verified TorchScript file was written.
        export_failed(str): the export could not be done; the message says why.
        predictions_loaded(int): predictions.csv of the best epoch is shown (its row count).
    """

    export_finished = Signal(object)
    export_failed = Signal(str)
    predictions_loaded = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._class_names: tuple[str, ...] = ()
        self._best: EpochEnd | None = None
        self._end: RunEnd | None = None
        self._run_dir = ""
        self._model_file = ""
        self._export_signals: ExportSignals | None = None
        self._previous_run = False  # see mark_as_previous_run
        self.path_dialog: PathDialog | None = None  # shown where no file manager answered
        self.summary_label = QLabel("No results yet: train a model first.", self)
        self.summary_label.setObjectName("resultsSummary")
        self.summary_label.setWordWrap(True)
        self.table = ClassMetricsTable(self)
        self.confusion_view = ConfusionMatrixView(self)
        self.analysis = ErrorAnalysisView(self)
        self._predictions_reader = LatestRequestRunner(self)
        self._run_reader = LatestRequestRunner(self)
        self.export_button = QPushButton("Export TorchScript\u2026", self)
        self.export_onnx_button = QPushButton("Export ONNX\u2026", self)
        self.export_measured_button = QPushButton("Export smaller && measure\u2026", self)
        self.export_measured_button.setToolTip(
            "Export TorchScript, ONNX float32, ONNX INT8 or ONNX float16, each measured here: "
            "size, accuracy against float32, latency and images/s; and save the run report")
        self.export_dialog: ExportDialog | None = None
        self.open_folder_button = QPushButton("Open run folder", self)
        self.export_label = QLabel("", self)
        self.export_label.setObjectName("exportResult")
        self.export_label.setWordWrap(True)
        self.export_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._build_layout()

        self.export_button.clicked.connect(self._on_export_clicked)
        self.export_onnx_button.clicked.connect(self._on_export_onnx_clicked)
        self.export_measured_button.clicked.connect(self.open_export_dialog)
        self.open_folder_button.clicked.connect(self._on_open_folder_clicked)
        self.confusion_view.cell_clicked.connect(self._on_cell_clicked)
        self._predictions_reader.result_ready.connect(self._on_predictions_read)
        self._predictions_reader.failed.connect(self._on_predictions_failed)
        self._run_reader.result_ready.connect(self._on_run_folder_read)
        self._run_reader.failed.connect(self._on_predictions_failed)

        self._update_buttons()

    # ------------------------------------------------------------------ public API
    def clear(self) -> None:
        """Forget the previous run's results; what is still being read for it is dropped."""
        self._best, self._end, self._run_dir, self._model_file = None, None, "", ""
        self._previous_run = False
        self.table.clear_figures()
        self.confusion_view.clear()
        self._predictions_reader.cancel()
        self._run_reader.cancel()
        self.analysis.clear()
        self.summary_label.setText("Training\u2026 results appear after each epoch.")
        self.export_label.clear()
        self._update_buttons()

    def mark_as_previous_run(self) -> None:
        """Say that the results shown are the previous run's (another image folder is open
        now); nothing to say when no results are shown."""
        if self._best is not None:
            self._previous_run = True
            self._update_summary()

    def show_run_start(self, event: RunStart) -> None:
        """Remember class names and the run folder."""
        self._class_names = event.class_names
        self._run_dir = event.run_dir
        self._update_buttons()

    def show_epoch_end(self, event: EpochEnd) -> None:
        """Show this epoch if it is the best so far."""
        if event.is_best or self._best is None:
            self._best = event
            self.table.set_confusion(event.confusion, self._class_names)
            self.confusion_view.set_matrix(event.confusion, self._class_names)
            self._load_predictions()
        self._update_summary()

    def show_run_end(self, event: RunEnd) -> None:
        """Enable export when the run left a best model."""
        self._run_dir = event.run_dir or self._run_dir
        self._model_file = event.best_model_path if Path(event.best_model_path or "").is_file() \
            else ""
        self.analysis.set_model_file(self._model_file)
        self._end = event
        self._update_summary()
        self._update_buttons()

    def show_run_folder(self, run_dir: str) -> None:
        """Show the results of a run on disk (its best epoch and predictions), read in the
        pool; a run training here meanwhile replaces them as usual."""
        self.clear()
        self.summary_label.setText(f"Reading {run_dir}\u2026")
        self._run_reader.submit(best_epoch_events, run_dir)

    def model_file(self) -> str:
        """The best_model.pt export would use ('' when there is none)."""
        return self._model_file

    def run_dir(self) -> str:
        """The folder of the run shown ('' before any run)."""
        return self._run_dir

    def is_loading_predictions(self) -> bool:
        """True while predictions.csv is being read."""
        return self._predictions_reader.is_busy()

    def is_reading(self) -> bool:
        """True while a run folder or predictions.csv is being read."""
        return self._run_reader.is_busy() or self._predictions_reader.is_busy()

    def is_exporting(self) -> bool:
        """True while an export job is running."""
        return self._export_signals is not None

    def export_to(self, out_path: str, model_file: str = "",
                  export_format: str = "torchscript") -> None:
        """Export ``model_file`` (default: this run's best model) to ``out_path`` in the pool,
        as TorchScript or ("onnx") ONNX."""
        model_file = model_file or self._model_file
        if self.is_exporting() or not model_file:
            return
        job = ExportJob(model_file, out_path, export_format)
        self._export_signals = job.signals
        job.signals.exported.connect(self._on_export_done)
        job.signals.errored.connect(self._on_export_errored)
        job.signals.finished.connect(self._on_export_finished)
        self.export_label.setText(f"Exporting to {out_path} and checking it in a fresh "
                                  "Python process\u2026")
        self._update_buttons()
        QThreadPool.globalInstance().start(job)

    def ask_export_path(self, export_format: str = "torchscript") -> str:
        """Ask where to write the export ('' when cancelled)."""
        onnx = export_format == "onnx"
        name = DEFAULT_FILE_NAMES["onnx" if onnx else "torchscript"]
        start = str(Path(self._run_dir) / name) if self._run_dir else ""
        path, _ = QFileDialog.getSaveFileName(
            self, "Export ONNX model" if onnx else "Export TorchScript model", start,
            "ONNX (*.onnx);;All files (*)" if onnx else "TorchScript (*.pt);;All files (*)")
        return path

    # ------------------------------------------------------------------ slots
    def _on_export_clicked(self) -> None:
        path = self.ask_export_path()
        if path:
            self.export_to(path)

    def open_export_dialog(self) -> ExportDialog | None:
        """The export dialog of this run's best model (None before there is one)."""
        if not self._model_file:
            return None
        if self.export_dialog is not None:
            self.export_dialog.close()
            self.export_dialog.deleteLater()
        self.export_dialog = ExportDialog(self._model_file, self._run_dir, self)
        self.export_dialog.show()
        return self.export_dialog

    def _on_export_onnx_clicked(self) -> None:
        path = self.ask_export_path("onnx")
        if path:
            self.export_to(path, export_format="onnx")

    def _on_open_folder_clicked(self) -> None:
        if self._run_dir:
            self.path_dialog = open_path(self._run_dir, "The run folder", self)

    def _on_export_done(self, result: ExportResult) -> None:
        self.export_label.setText(
            f"VERIFIED: exported {result.path}\n{result.verification}; "
            f"{len(result.class_names)} "
            f"classes, input {result.input_size} px, {result.seconds:.1f} s"
        )
        self.export_finished.emit(result)

    def _on_export_errored(self, message: str) -> None:
        self.export_label.setText(f"Export failed: {message}")
        self.export_failed.emit(message)

    def _on_export_finished(self) -> None:
        self._export_signals = None
        self._update_buttons()

    # ------------------------------------------------------------------ refreshes
    def _update_buttons(self) -> None:
        self.export_button.setEnabled(bool(self._model_file) and not self.is_exporting())
        self.export_onnx_button.setEnabled(bool(self._model_file) and not self.is_exporting())
        self.export_measured_button.setEnabled(bool(self._model_file))
        self.open_folder_button.setEnabled(bool(self._run_dir))

    def _update_summary(self) -> None:
        best, end = self._best, self._end
        if best is None:
            text = "No epoch finished, so there are no results."
        else:
            text = (f"Best epoch {best.epoch} of {best.epochs}: validation accuracy "
                    f"{100 * best.val_accuracy:.1f}% (loss {best.val_loss:.3f}).")
        if end is not None:
            text += f" Run {end.status}; folder {end.run_dir or '(none)'}."
        if self._previous_run:
            text = f"{PREVIOUS_RUN_NOTE} {text}"
        self.summary_label.setText(text)

    def _load_predictions(self) -> None:
        """Read the best epoch's predictions.csv in the pool (a newer best epoch wins)."""
        if self._run_dir:
            self._predictions_reader.submit(read_predictions, self._run_dir)

    def _best_model_file(self) -> str:
        if self._model_file:
            return self._model_file
        best = Path(self._run_dir) / BEST_MODEL if self._run_dir else None
        return str(best) if best is not None and best.is_file() else ""

    def _on_predictions_read(self, rows: list) -> None:
        self.analysis.set_predictions(rows, self._best_model_file())
        self.predictions_loaded.emit(len(rows))

    def _on_predictions_failed(self, message: str) -> None:
        self.analysis.hint.setText(f"No image predictions to show: {message}")

    def _on_run_folder_read(self, events: tuple) -> None:
        start, best, end = events
        if start is None or best is None:
            self.summary_label.setText("That run finished no epoch, so it has no results.")
            return
        self.show_run_start(start)
        self.show_epoch_end(best)
        if end is not None:
            self.show_run_end(end)

    def _on_cell_clicked(self, true_index: int, predicted_index: int) -> None:
        names = self._class_names
        if max(true_index, predicted_index) < len(names):
            self.analysis.show_cell(names[true_index], names[predicted_index])
            self._fit_analysis_tab_names()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        # After the splitter has shared out the new width (a hidden tab's panel gets its size
        # when shown, before its children get theirs).
        QTimer.singleShot(0, self, self._fit_analysis_tab_names)

    def _fit_analysis_tab_names(self) -> None:
        """Widen the galleries' pane to their tab names, taking what the figures can spare: on a
        1366-wide window the names show whole instead of behind scroll arrows."""
        figures_width, analysis_width = self._splitter.sizes()
        wanted = self.analysis.tabs.tabBar().sizeHint().width() + TAB_BAR_SLACK
        spare = figures_width - self._figures.minimumSizeHint().width()
        shift = min(wanted - analysis_width, spare)
        if shift > 0:
            self._splitter.setSizes([figures_width - shift, analysis_width + shift])

    def _build_layout(self) -> None:
        # Two rows: four buttons side by side made the window 1,137 px wide at least.
        buttons = QGridLayout()
        buttons.addWidget(self.export_button, 0, 0)
        buttons.addWidget(self.export_onnx_button, 0, 1)
        buttons.addWidget(self.export_measured_button, 1, 0)
        buttons.addWidget(self.open_folder_button, 1, 1)
        buttons.setColumnStretch(2, 1)
        figures = QSplitter(Qt.Orientation.Vertical, self)
        figures.addWidget(self.confusion_view)
        figures.addWidget(self.table)
        figures.setStretchFactor(0, 3)
        figures.setStretchFactor(1, 2)
        splitter = QSplitter(self)
        splitter.addWidget(figures)
        splitter.addWidget(self.analysis)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        self._splitter, self._figures = splitter, figures
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary_label)
        layout.addWidget(splitter, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.export_label)
