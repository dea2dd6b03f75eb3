"""The data health check in the thread pool: progress as it goes, cancel on request.

One check at a time: starting another cancels the one running. A cancelled check emits
``cancelled`` and never a report; progress of a superseded check is dropped.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, Signal, Slot

from workbench.gui.workers.pool_tasks import FunctionTask, TasksInFlight


def run_health_check(root: str, cache_dir: str, val_fraction: float, seed: int,
                     cancel: threading.Event, progress: Any) -> object:
    """Pool thread: the core check (imported here: building the panel loads none of it)."""
    from workbench.core.data.health.health_check import check_health

    return check_health(root, cache_dir=cache_dir, val_fraction=val_fraction, seed=seed,
                        progress=progress, cancel=cancel)


class HealthCheckRunner(QObject):
    """Runs ``check_health`` for one folder at a time in the global pool."""

    progressed = Signal(int, int)
    """(images checked, images in the folder) of the running check."""
    report_ready = Signal(object)
    """The check finished: the ``HealthReport``."""
    failed = Signal(str)
    """The check could not run; the message names the folder and the reason."""
    cancelled = Signal()
    """The running check stopped on request; no report follows."""
    _pool_progress = Signal(int, int, int)  # request id, done, total; from the pool thread

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._request = 0
        self._cancel = threading.Event()
        self._in_flight = TasksInFlight()
        self._pool_progress.connect(self._on_pool_progress)

    def start(self, root: str, cache_dir: str = "", val_fraction: float = 0.2,
              seed: int = 0) -> None:
        """Check ``root``; a check still running is cancelled first."""
        self._cancel.set()
        self._request += 1
        request, cancel = self._request, threading.Event()
        self._cancel = cancel

        def progress(done: int, total: int) -> None:
            self._pool_progress.emit(request, done, total)

        task = FunctionTask(request, run_health_check,
                            (root, cache_dir, val_fraction, seed, cancel, progress),
                            on_done=self._in_flight.done)
        task.signals.succeeded.connect(self._on_succeeded)
        task.signals.failed.connect(self._on_failed)
        self._in_flight.started()
        QThreadPool.globalInstance().start(task)

    def cancel(self) -> None:
        """Ask the running check to stop; ``cancelled`` follows once it has."""
        self._cancel.set()

    def is_busy(self) -> bool:
        return self._in_flight.busy()

    def wait_for_done(self, msecs: int = -1) -> bool:
        """Block until no check is running (shutdown and tests); False on timeout."""
        return self._in_flight.wait(msecs)

    @Slot(int, int, int)
    def _on_pool_progress(self, request: int, done: int, total: int) -> None:
        if request == self._request and not self._cancel.is_set():
            self.progressed.emit(done, total)

    @Slot(int, object)
    def _on_succeeded(self, request: int, report: object) -> None:
        if request != self._request:
            return
        if self._cancel.is_set():
            self.cancelled.emit()  # it finished before it saw the request: still no report
        else:
            self.report_ready.emit(report)

    @Slot(int, str)
    def _on_failed(self, request: int, message: str) -> None:
        if request != self._request:
            return
        if self._cancel.is_set():
            self.cancelled.emit()
        else:
            self.failed.emit(message)
