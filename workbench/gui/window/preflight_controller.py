"""The pre-flight check wired to the window: whenever the settings change (the data folder is
one of them), ``preflight(config)`` runs in the thread pool a moment later; Start stays
disabled, with "Checking…" beside it, until the check of the current settings has answered,
then shows its problems or its notes.

Edits in quick succession start one check (a short debounce), and a newer request supersedes
an older one (``LatestRequestRunner``): a result for settings that are no longer current is
dropped. It also runs the offer to download the ImageNet weights before Start, and the way out
when that download fails.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.config_fields import problem_text
from workbench.core.runs.events import Progress
from workbench.gui.panels.weights_download_offer import FALLBACK_CHANGES, FALLBACK_TEXT
from workbench.gui.workers.pool_tasks import LatestRequestRunner
from workbench.gui.workers.weights_download_worker import WeightsDownloadJob

if TYPE_CHECKING:  # importing the check loads torch; it is imported in the pool instead
    from workbench.core.training.tuning.preflight import PreflightResult

DEBOUNCE_MS = 250
WEIGHTS_MISSING_SHORT = "the ImageNet weights are not on this computer yet"
DOWNLOAD_FAILED_SHORT = "download failed"
DOWNLOADING = "downloading the ImageNet weights"
IMPORT_ATTEMPTS = 50
IMPORT_RETRY_S = 0.2


def run_preflight(config: TrainConfig) -> PreflightResult:
    """Pool thread: the check itself."""
    return import_preflight().preflight(config)


def import_preflight() -> ModuleType:
    """The check's module (it imports torch and torchvision), imported in a pool thread.

    Other pool jobs (the preview, the memory check) may be importing torchvision at the same
    moment; Python then hands one of the threads a partly initialised module and the import
    fails. Tried again once the other thread is done, it succeeds.
    """
    for attempt in range(IMPORT_ATTEMPTS):
        try:
            return importlib.import_module("workbench.core.training.tuning.preflight")
        except (ImportError, AttributeError):
            if attempt == IMPORT_ATTEMPTS - 1:
                raise
            time.sleep(IMPORT_RETRY_S)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class StartState:
    """What the line beside Start says about the current settings."""

    problems: list[str]
    checking: bool
    notes: list[str]
    busy: str
    short_texts: dict[str, str]
    """Shorter words for some problems or notes, where buttons beside them say the rest."""


class PreflightController(QObject):
    """Checks the form's config in the pool and keeps the answer for the current config.

    Args:
        window: the MainWindow (not imported here: it imports this module); it gives the
            form, the Start row and the log.
        start_now: False holds every check until ``start`` (the application calls it once
            the window is up: the check imports torch).
    """

    changed = Signal()
    """The start state changed (a check began or answered, a download moved on)."""

    def __init__(self, window: Any, start_now: bool = True) -> None:
        super().__init__(window)
        self._window = window
        self._started = start_now
        self._result: PreflightResult | None = None
        self._failed_check = ("", None)  # (message, the config it is about)
        self._runner = LatestRequestRunner(self)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._download: WeightsDownloadJob | None = None
        self._download_progress = ""
        self._download_failure = ""  # the problem a failed download left, '' when none
        self._download_reason = ""  # its reason in a few words
        self._offer = window.controls.weights_offer

        window.config_form.config_changed.connect(self._on_config_changed)
        self._timer.timeout.connect(self._submit)
        self._runner.result_ready.connect(self._on_checked)
        self._runner.failed.connect(self._on_check_failed)
        self._offer.download_requested.connect(self.start_download)
        self._offer.cancel_requested.connect(self._on_cancel_download)
        self._offer.fallback_requested.connect(self.train_without_download)
        window.first_run_panel.weights_download_requested.connect(self.start_download)
        self._on_config_changed()

    # ------------------------------------------------------------------ public API
    def start(self) -> None:
        """Let checks run (the first one for the current settings, now)."""
        if not self._started:
            self._started = True
            self._submit()

    def cancel(self) -> None:
        """Drop every check and stop a download (the window is closing)."""
        self._timer.stop()
        self._runner.cancel()
        if self._download is not None:
            self._download.cancel()

    def state(self) -> StartState:
        """The form's problems first, then the check's for the same settings (or checking)."""
        config = self._window.config_form.config()
        problems = self._window.config_form.problems()
        notes: list[str] = []
        short: dict[str, str] = {}
        result = self._result if self._result is not None and self._result.config == config \
            else None
        if result is not None:
            problems += [f.text for f in result.problems]
            notes = [f.text for f in result.notes]
            if self._download_failure and result.weights_download_bytes:
                problems.append(self._download_failure)
                short[self._download_failure] = DOWNLOAD_FAILED_SHORT
            weights = [f.text for f in result.notes if f.field == "weights"]
            if weights:  # the download button beside it gives the size
                short[weights[0]] = WEIGHTS_MISSING_SHORT
        failed_message, failed_config = self._failed_check
        if failed_config == config:
            problems.append(failed_message)
        checking = result is None and failed_config != config
        return StartState(list(dict.fromkeys(problems)), checking, notes,
                          self._download_progress, short)

    def blocks(self, config: TrainConfig) -> bool:
        """True when the check of ``config`` found something the run would refuse."""
        return self._result is not None and self._result.config == config \
            and not self._result.can_start

    # ------------------------------------------------------------------ checking
    def _on_config_changed(self, _config: object = None) -> None:
        self._timer.start()
        self.changed.emit()

    def _submit(self) -> None:
        self._timer.stop()
        if self._started:
            self._runner.submit(run_preflight, self._window.config_form.config())

    def _on_checked(self, result: PreflightResult) -> None:
        self._result = result
        if not result.weights_download_bytes:
            self._download_failure = self._download_reason = ""
        self._update_offer()
        self.changed.emit()

    def _on_check_failed(self, message: str) -> None:
        """The check itself broke: say so, and keep Start off for these settings."""
        self._failed_check = (f"the settings could not be checked ({message})",
                              self._window.config_form.config())
        self.changed.emit()

    def _update_offer(self) -> None:
        """The buttons beside Start and on the first-run page."""
        if self._download is not None:
            return
        size = self._result.weights_download_bytes if self._result is not None else 0
        # The module is imported by now: the check that answered imported it.
        size_text = import_preflight().megabytes(size) if size else ""
        self._window.first_run_panel.set_weights_download(size_text,
                                                          failure=self._download_reason)
        if not size:
            self._offer.hide_offer()
        elif self._download_failure:
            self._offer.show_failure()
        else:
            self._offer.offer(size_text)

    # ------------------------------------------------------------------ the download
    def start_download(self) -> None:
        """Download the ImageNet weights now, in the pool; Start waits for it."""
        if self._download is not None:
            return
        self._download = job = WeightsDownloadJob(self._window.config_form.config().model)
        self._download_failure = self._download_reason = ""
        self._window.first_run_panel.set_weights_download("", downloading=True)
        self._download_progress = DOWNLOADING
        job.signals.progress.connect(self._on_download_progress)
        job.signals.succeeded.connect(self._on_download_succeeded)
        job.signals.failed.connect(self._on_download_failed)
        job.signals.finished.connect(self._on_download_finished)
        self._offer.show_progress(Progress("Downloading ImageNet weights", 0, None))
        QThreadPool.globalInstance().start(job)
        self.changed.emit()

    def train_without_download(self) -> None:
        """Switch to weights that need no network: a random start, every layer trained, with
        the from-scratch recipe where the user has not set one (as choosing None does)."""
        form = self._window.config_form
        form.edit_field("weights", "none")
        if form.config().finetune != "full":  # a 'last_layer' the user had chosen
            form.edit_field("finetune", "full")
        self._window.log_panel.append_text("info", f"Training without downloading: "
                                                   f"{FALLBACK_CHANGES}")

    def _on_download_progress(self, event: Progress) -> None:
        self._offer.show_progress(event)

    def _on_download_succeeded(self, path: str) -> None:
        self._result = None  # it said the weights were missing: Start waits for a new check
        self._window.log_panel.append_text("info", f"Downloaded the ImageNet weights to {path}")

    def _on_download_failed(self, reason: str, message: str) -> None:
        self._download_reason = reason
        self._download_failure = problem_text(
            "weights", f"the ImageNet weights could not be downloaded ({reason}); is this "
                       f"computer offline? Try again, or {FALLBACK_TEXT.lower()}. {message}")
        self._window.log_panel.append_text("error", message)

    def _on_cancel_download(self) -> None:
        if self._download is not None:
            self._download.cancel()

    def _on_download_finished(self) -> None:
        self._download = None
        self._download_progress = ""
        self._update_offer()
        self._submit()  # the file is there now, or still missing: check again
        self.changed.emit()
