"""Every run of the output folder in a table; select several to compare them.

The folder is read in the thread pool (latest request wins), as are the selected runs' curves.
Open, resume and export are requests the window carries out (``open_results_requested``,
``resume_requested``, ``export_requested``), so the panel itself trains and exports nothing.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.runs.run_index import (
    RUN_TABLE_COLUMNS,
    RunSummary,
    config_differences,
    list_runs,
    run_curves,
    run_table_rows,
    split_differences,
)
from workbench.gui.panels.runs.run_comparison_plot import RunComparisonPlot
from workbench.gui.workers.pool_tasks import LatestRequestRunner


def read_curves(run_dirs: list[str]) -> list:
    """Pool thread: the curves of each run folder, in order."""
    return [run_curves(folder) for folder in run_dirs]


class RunsPanel(QWidget):
    """The runs table, the overlay of the selected runs and the differences of their configs.

    Signals:
        runs_listed(int): the table shows this many runs.
        curves_shown(int): the overlay shows this many runs.
        open_results_requested(str): show this run folder's results.
        resume_requested(str): resume from this checkpoint (last.pt).
        export_requested(str): export this best_model.pt.
    """

    runs_listed = Signal(int)
    curves_shown = Signal(int)
    open_results_requested = Signal(str)
    resume_requested = Signal(str)
    export_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._output_dir = ""
        self._runs: list[RunSummary] = []
        self.folder_label = QLabel("", self)
        self.folder_label.setWordWrap(True)
        self.refresh_button = QPushButton("Refresh", self)
        self.table = QTableWidget(0, len(RUN_TABLE_COLUMNS), self)
        self.table.setObjectName("runsTable")
        self.table.setHorizontalHeaderLabels([c.capitalize() for c in RUN_TABLE_COLUMNS])
        self.table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.open_button = QPushButton("Open results", self)
        self.resume_button = QPushButton("Resume", self)
        self.export_button = QPushButton("Export\u2026", self)
        self.comparison = RunComparisonPlot(self)
        self.config_diff = QPlainTextEdit(self)
        self.config_diff.setObjectName("configDiff")
        self.config_diff.setReadOnly(True)
        self.config_diff.setPlaceholderText("Select two or more runs to see how their "
                                            "configs differ.")
        self._lister = LatestRequestRunner(self)
        self._curve_reader = LatestRequestRunner(self)
        self._build_layout()

        self.refresh_button.clicked.connect(self.refresh)
        self.table.itemSelectionChanged.connect(self._on_selection_changed)
        self.open_button.clicked.connect(self._on_open_clicked)
        self.resume_button.clicked.connect(self._on_resume_clicked)
        self.export_button.clicked.connect(self._on_export_clicked)
        self._lister.result_ready.connect(self._on_runs_listed)
        self._curve_reader.result_ready.connect(self._on_curves_read)

        self._update_buttons()

    # ------------------------------------------------------------------ public API
    def set_output_dir(self, output_dir: str) -> None:
        """List the runs of ``output_dir`` (again, if it changed)."""
        if output_dir != self._output_dir:
            self._output_dir = output_dir
            self.refresh()

    def refresh(self) -> None:
        """Read the output folder again in the pool."""
        self.folder_label.setText(f"Runs in {self._output_dir or '(no output folder)'}")
        if self._output_dir:
            self._lister.submit(list_runs, self._output_dir)

    def runs(self) -> list[RunSummary]:
        """The runs in the table, in row order."""
        return list(self._runs)

    def selected_runs(self) -> list[RunSummary]:
        """The selected runs, in row order."""
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        return [self._runs[row] for row in rows if row < len(self._runs)]

    def select_rows(self, rows: list[int]) -> None:
        """Select exactly ``rows`` (as a user's ctrl-clicks would)."""
        self.table.clearSelection()
        mode = self.table.selectionMode()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for row in rows:
            self.table.selectRow(row)
        self.table.setSelectionMode(mode)

    def is_busy(self) -> bool:
        """True while the folder or curves are being read."""
        return self._lister.is_busy() or self._curve_reader.is_busy()

    # ------------------------------------------------------------------ slots
    def _on_runs_listed(self, runs: list[RunSummary]) -> None:
        self._runs = list(runs)
        self.table.setRowCount(len(self._runs))
        for row, cells in enumerate(run_table_rows(self._runs)):
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(self._runs[row].run_dir)
                self.table.setItem(row, column, item)
        self._update_buttons()
        self.runs_listed.emit(len(self._runs))

    def _on_selection_changed(self) -> None:
        selected = self.selected_runs()
        self._update_buttons()
        self._update_config_diff(selected)
        if selected:
            self._curve_reader.submit(read_curves, [run.run_dir for run in selected])
        else:
            self._curve_reader.cancel()
            self.comparison.set_curves([])

    def _on_curves_read(self, curves: list) -> None:
        self.comparison.set_curves(curves)
        self.curves_shown.emit(len(curves))

    def _on_open_clicked(self) -> None:
        selected = self.selected_runs()
        if selected:
            self.open_results_requested.emit(selected[0].run_dir)

    def _on_resume_clicked(self) -> None:
        selected = self.selected_runs()
        if selected and selected[0].last_checkpoint_path:
            self.resume_requested.emit(selected[0].last_checkpoint_path)

    def _on_export_clicked(self) -> None:
        selected = self.selected_runs()
        if selected and selected[0].best_model_path:
            self.export_requested.emit(selected[0].best_model_path)

    # ------------------------------------------------------------------ refreshes
    def _update_buttons(self) -> None:
        selected = self.selected_runs()
        one = selected[0] if len(selected) == 1 else None
        self.open_button.setEnabled(one is not None)
        self.resume_button.setEnabled(one is not None and bool(one.last_checkpoint_path)
                                      and one.status != "running")
        self.export_button.setEnabled(one is not None and bool(one.best_model_path))

    def _update_config_diff(self, selected: list[RunSummary]) -> None:
        if len(selected) < 2:
            self.config_diff.clear()
            return
        differences = config_differences([run.config for run in selected])
        splits = split_differences(selected)
        if not differences:
            self.config_diff.setPlainText("\n\n".join(
                [*([splits] if splits else []), "The selected runs have the same config."]))
            return
        names = [run.name for run in selected]
        lines = [splits, ""] if splits else []
        for key, values in differences.items():
            lines.append(key)
            lines += [f"    {name}: {value!r}" for name, value in zip(names, values, strict=True)]
        self.config_diff.setPlainText("\n".join(lines))

    def _build_layout(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.folder_label, 1)
        top.addWidget(self.refresh_button)
        buttons = QHBoxLayout()
        for button in (self.open_button, self.resume_button, self.export_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        lower = QSplitter(self)
        lower.addWidget(self.comparison)
        lower.addWidget(self.config_diff)
        lower.setStretchFactor(0, 2)
        lower.setStretchFactor(1, 1)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.table)
        splitter.addWidget(lower)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        layout.addLayout(buttons)
