"""The tabs for after training (Predict, Runs), added to the window's right-hand tabs and
wired to it.

Kept apart from ``main_window`` so the window only creates this object: the tabs ask for
results, a resume or an export, and this carries them out with the window's own methods.
Images or folders dropped anywhere on the window go to the Predict tab.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject

from workbench.core.data.health.model_features import read_feature_findings
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import RunEnd
from workbench.gui.panels.predict_panel import PredictPanel, dropped_paths
from workbench.gui.panels.runs.runs_panel import RunsPanel


class AfterTrainingTabs(QObject):
    """Owns the Predict and Runs panels: Predict uses the last run's best model; Runs lists
    the form's output folder, refreshed after every run."""

    def __init__(self, window: Any) -> None:
        """``window``: the MainWindow (not imported here: it imports this module)."""
        super().__init__(window)
        self._window = window
        self.predict_panel = PredictPanel()
        self.runs_panel = RunsPanel()
        window.right_tabs.addTab(self.predict_panel, "Predict")
        window.right_tabs.addTab(self.runs_panel, "Runs")
        window.setAcceptDrops(True)
        window.installEventFilter(self)

        window.config_form.config_changed.connect(self._on_config_changed)
        window.controller.run_ended.connect(self._on_run_ended)
        self.runs_panel.open_results_requested.connect(self._on_open_results_requested)
        self.runs_panel.resume_requested.connect(self._on_resume_requested)
        self.runs_panel.export_requested.connect(self._on_export_requested)

        self.runs_panel.set_output_dir(window.config_form.config().output_dir)

    def _on_config_changed(self, config: TrainConfig) -> None:
        self.runs_panel.set_output_dir(config.output_dir)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        """Images or folders dropped on the window are classified in the Predict tab."""
        # While the window is torn down, Qt can still call this filter after Python has
        # cleared this object's attributes; it then only lets the event pass.
        window = self.__dict__.get("_window")
        if window is None or watched is not window:
            return False
        if event.type() in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            if dropped_paths(event):
                event.acceptProposedAction()
                return True
        elif event.type() == QEvent.Type.Drop:
            paths = dropped_paths(event)
            if paths:
                event.acceptProposedAction()
                window.right_tabs.setCurrentWidget(self.predict_panel)
                self.predict_panel.predict(paths)
                return True
        return False

    def _on_run_ended(self, event: RunEnd) -> None:
        self.runs_panel.refresh()
        if event.best_model_path and Path(event.best_model_path).is_file():
            self.predict_panel.set_model_file(event.best_model_path)
        # What the model's features found joins the folder's own findings (Data health).
        findings = read_feature_findings(event.run_dir) if event.run_dir else None
        if findings is not None:
            self._window.dataset_panel.health_panel.show_model_findings(findings)

    def _on_open_results_requested(self, run_dir: str) -> None:
        results = self._window.results_panel
        results.show_run_folder(run_dir)
        self._window.right_tabs.setCurrentWidget(results)

    def _on_resume_requested(self, checkpoint: str) -> None:
        if self._window.resume_from(checkpoint):
            self._window.right_tabs.setCurrentIndex(0)  # Settings, where Start is

    def _on_export_requested(self, model_file: str) -> None:
        results = self._window.results_panel
        path = results.ask_export_path()
        if path:
            results.export_to(path, model_file)
