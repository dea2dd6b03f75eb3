"""The views that show a run as it goes: the plots, the status panel, the results panel and the
log, fed by a local run's events and a followed run's alike.

Kept apart from ``main_window`` so the window only creates this object and asks it to
``clear`` before a run, ``show_history`` of a run it resumes and to know when another image
folder is open; how a local run ends (results, errors, the smaller-batch offer) stays with the
window.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject

from workbench.core.runs.events import EpochEnd, RunEnd, RunStart, StepStats
from workbench.core.runs.run_history import read_run_history


class RunViews(QObject):
    """Connects ``window.controller`` and ``window.run_follow`` to the window's views."""

    def __init__(self, window: Any) -> None:
        """``window``: the MainWindow (not imported here: it imports this module)."""
        super().__init__(window)
        self._window = window
        for source in (window.controller, window.run_follow):
            source.run_started.connect(self._on_run_started)
            source.step_finished.connect(self._on_step_finished)
            source.epoch_ended.connect(self._on_epoch_ended)
            source.message_logged.connect(window.log_panel.append_message)
        window.run_follow.run_ended.connect(self._on_followed_run_ended)
        window.run_follow.restarted.connect(self.clear)
        self._folder = ""

    def clear(self) -> None:
        """Forget the previous run: empty plots, run status and results."""
        self._plots().reset()
        self._window.status_panel.clear()
        self._window.results_panel.clear()

    def folder_opened(self, folder: str) -> None:
        """Another image folder is open: the Training tab's figures were the previous run's,
        on other images, so they go; the Results tab keeps that run's results (they are on
        disk and can be exported) but says whose they are. A followed run is left alone."""
        previous, self._folder = self._folder, folder
        window = self._window
        if folder == previous or window.run_follow.is_following() \
                or window.controller.is_running():
            return
        self._plots().reset()
        window.run_follow.hide_banner()  # it named the run whose figures were just cleared
        window.status_panel.clear(f"Idle: {folder} is open; Start trains on it.")
        window.results_panel.mark_as_previous_run()

    def show_history(self, run_dir: Path) -> int:
        """Draw the finished epochs of ``run_dir`` (read from its metrics.jsonl); returns the
        last of them, 0 when there is none."""
        history = read_run_history(run_dir)
        plots = self._plots()
        if history.start is not None:
            plots.set_run_start(history.start)
        for event in history.events:
            if isinstance(event, StepStats):
                plots.add_step(event)
            else:
                plots.add_epoch(event)
        plots.flush()
        return history.epochs_done

    def _plots(self) -> Any:
        self._window.build_plot_panels()
        return self._window.plots

    def _on_run_started(self, event: RunStart) -> None:
        window = self._window
        window.download_bar.finish()
        window.status_panel.show_run_start(event)
        self._plots().set_run_start(event)
        window.results_panel.show_run_start(event)
        window.log_panel.append_text(
            "info", f"Run folder {event.run_dir}; {event.dataset_summary}; "
                    f"{event.steps_per_epoch} steps per epoch on {event.device} "
                    f"({event.device_name})")

    def _on_step_finished(self, event: StepStats) -> None:
        self._plots().add_step(event)
        self._window.status_panel.show_step(event)

    def _on_epoch_ended(self, event: EpochEnd) -> None:
        window = self._window
        self._plots().add_epoch(event)
        window.status_panel.show_epoch_end(event)
        window.results_panel.show_epoch_end(event)
        best = " (best so far)" if event.is_best else ""
        window.log_panel.append_text(
            "info", f"Epoch {event.epoch}/{event.epochs}: train loss {event.train_loss:.4f}, "
                    f"accuracy {100 * event.train_accuracy:.1f}%; val loss {event.val_loss:.4f}, "
                    f"accuracy {100 * event.val_accuracy:.1f}%{best}")

    def _on_followed_run_ended(self, event: RunEnd) -> None:
        window = self._window
        self._plots().flush()
        window.status_panel.show_run_end(event)
        window.results_panel.show_run_end(event)
        window.statusBar().showMessage(f"Followed run {event.status}", 10_000)
