"""Downloading the ImageNet weights in the thread pool before any run needs them, with progress
(when the whole percent changes), a cooperative cancel and a plain reason when it fails.

The core download writes to a temp file and renames it into place, so a cancel or a dropped
connection leaves nothing where the next run looks. torch is imported when the job runs.
"""

from __future__ import annotations

from PySide6.QtCore import QRunnable, Signal

from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Progress
from workbench.gui.workers.pool_tasks import JobSignals, error_message

TASK = "Downloading ImageNet weights"


class WeightsDownloadSignals(JobSignals):
    """Signals of one download; the object lives in the UI thread, so slots run there."""

    progress = Signal(object)
    """A ``Progress`` event: before the first byte and at every whole percent."""
    succeeded = Signal(str)
    """The file is in place, at this path."""
    failed = Signal(str, str)
    """(the reason in a few words, the whole message naming the URL and where to copy the file)."""
    cancelled = Signal()
    """Stopped on request; nothing was kept."""
    finished = Signal()
    """Always the last signal."""


class WeightsDownloadJob(QRunnable):
    """One download; connect to ``job.signals`` before handing the job to a pool; the signals
    object deletes itself on the GUI thread after ``finished`` (see ``JobSignals``)."""

    def __init__(self, model: str) -> None:
        """``model``: whose ImageNet weights to download, e.g. 'convnext_tiny'."""
        super().__init__()
        self._model = model
        self.control = RunControl()
        self.signals = WeightsDownloadSignals.for_a_pool_job()
        self._shown_percent: int | None = None

    def cancel(self) -> None:
        """Stop before the next chunk; safe from any thread."""
        self.control.request_cancel()

    def run(self) -> None:
        """Runs in a pool thread."""
        try:
            from workbench.core.models.building import WeightsError, download_imagenet_weights
            from workbench.core.models.weights_download import DownloadCancelled

            path = download_imagenet_weights(self._on_progress,
                                             lambda: self.control.cancel_requested,
                                             self._model)
            self.signals.succeeded.emit(str(path))
        except DownloadCancelled:
            self.signals.cancelled.emit()
        except WeightsError as exc:
            self.signals.failed.emit(_reason(exc), error_message(exc))
        except Exception as exc:  # noqa: BLE001 - a job reports everything and never raises
            self.signals.failed.emit(error_message(exc), error_message(exc))
        finally:
            self.signals.finished.emit()
            self.signals.release()

    def _on_progress(self, received: int, total: int | None) -> None:
        percent = 100 * received // total if total else received // 1_000_000
        if percent != self._shown_percent:
            self._shown_percent = percent
            self.signals.progress.emit(Progress(TASK, received, total))


def _reason(exc: BaseException) -> str:
    """The download's own reason ('[Errno 111] Connection refused'), without the URL."""
    cause = exc.__cause__
    if cause is None:
        return error_message(exc)
    text = error_message(cause)
    url, separator, reason = text.partition(": ")
    return reason if separator and "://" in url else text
