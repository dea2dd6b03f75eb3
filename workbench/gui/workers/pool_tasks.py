"""Short jobs in a thread pool, with results delivered to the GUI thread as signals.

``FunctionTask`` runs one plain function in a ``QThreadPool`` and reports through a
``TaskSignals`` object that lives on the GUI thread, so slots connected to it run there.
``LatestRequestRunner`` is the "latest request wins" policy on top: every submission gets an id,
a queued task whose id is no longer the latest is skipped without running, and only the latest
request's outcome is emitted; everything older is dropped before it reaches a widget.

Pool tasks never touch widgets: they return plain data (numbers, numpy arrays, dataclasses) and
the GUI thread turns it into pixmaps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QCoreApplication,
    QDeadlineTimer,
    QObject,
    QRunnable,
    QThreadPool,
    Signal,
    Slot,
)


class TaskSignals(QObject):
    """What a ``FunctionTask`` reports; created on the GUI thread so slots run there."""

    succeeded = Signal(int, object)
    """The function returned: ``(request_id, result)``."""
    failed = Signal(int, str)
    """The function raised: ``(request_id, message)``."""
    finished = Signal(int)
    """The task is over, whether it succeeded, failed or was skipped as stale."""
    _released = Signal()
    """Emitted last; its queued delivery deletes this object on the GUI thread."""


def error_message(exc: BaseException) -> str:
    """A one-line message for the user; the exception type stands in for an empty message."""
    text = str(exc).strip()
    return text if text else type(exc).__name__


class FunctionTask(QRunnable):
    """Runs ``fn(*args)`` in a pool thread and reports the outcome through ``signals``.

    Args:
        request_id: Carried back with every signal, so the receiver can drop stale results.
        fn: A function that does not touch widgets.
        args: Positional arguments for ``fn``.
        is_stale: Called in the pool thread just before ``fn``; when it returns True the task
            does nothing but emit ``finished`` (a newer request superseded it while queued).
        on_done: Called in the pool thread after the task is over, whatever happened.
    """

    def __init__(
        self,
        request_id: int,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        is_stale: Callable[[int], bool] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.request_id = request_id
        # Owned by the application object, not by Python: the pool thread drops this task (and
        # its Python references) whenever it likes, while the signals object must outlive the
        # delivery of its queued signals and be deleted on its own thread. It deletes itself
        # when ``_released``, emitted after everything else, reaches the GUI thread.
        self.signals = TaskSignals(QCoreApplication.instance())
        self.signals._released.connect(self.signals.deleteLater)
        self._fn = fn
        self._args = args
        self._is_stale = is_stale
        self._on_done = on_done
        self.setAutoDelete(True)

    def run(self) -> None:  # noqa: D102 - QRunnable override
        try:
            if self._is_stale is not None and self._is_stale(self.request_id):
                return
            try:
                result = self._fn(*self._args)
            except Exception as exc:  # noqa: BLE001 - every error becomes a signal
                self.signals.failed.emit(self.request_id, error_message(exc))
            else:
                self.signals.succeeded.emit(self.request_id, result)
        finally:
            self.signals.finished.emit(self.request_id)
            if self._on_done is not None:
                self._on_done()
            self.signals._released.emit()


class TasksInFlight:
    """How many of one runner's pool tasks are queued or running; any thread may wait for
    them to be over."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def started(self) -> None:
        with self._changed:
            self._count += 1

    def done(self) -> None:
        """Pool thread: one task fewer in flight."""
        with self._changed:
            self._count -= 1
            self._changed.notify_all()

    def busy(self) -> bool:
        with self._changed:
            return self._count > 0

    def wait(self, msecs: int = -1) -> bool:
        """Block until none is left (``msecs`` < 0: no limit); False on timeout."""
        deadline = QDeadlineTimer(msecs)
        with self._changed:
            while self._count > 0:
                remaining = deadline.remainingTime()
                if remaining == 0:
                    return False
                self._changed.wait(None if remaining < 0 else remaining / 1000)
        return True


class LatestRequestRunner(QObject):
    """Runs one kind of job in a pool where each new request supersedes the previous ones.

    Args:
        parent: Usual QObject parent.
        pool: The pool to run in; ``QThreadPool.globalInstance()`` when None.
        priority: Queue priority in the pool (higher starts first), e.g. a preview the user is
            looking at ahead of thumbnails.
    """

    result_ready = Signal(object)
    """The latest request's function returned this value."""
    failed = Signal(str)
    """The latest request's function raised; the message is meant for the user."""

    def __init__(
        self,
        parent: QObject | None = None,
        pool: QThreadPool | None = None,
        priority: int = 0,
    ) -> None:
        super().__init__(parent)
        self._pool = pool if pool is not None else QThreadPool.globalInstance()
        self._priority = priority
        self._latest_id = 0
        self._in_flight = TasksInFlight()

    def latest_request_id(self) -> int:
        """Id of the most recent submission (0 before the first)."""
        return self._latest_id

    def is_busy(self) -> bool:
        """True while a task of this runner is queued or running."""
        return self._in_flight.busy()

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        """Queue ``fn(*args)`` in the pool; returns the new request id, which is now the latest."""
        self._latest_id += 1
        request_id = self._latest_id
        task = FunctionTask(request_id, fn, args, self.is_stale, self._in_flight.done)
        task.signals.succeeded.connect(self._on_task_succeeded)
        task.signals.failed.connect(self._on_task_failed)
        self._in_flight.started()
        self._pool.start(task, self._priority)
        return request_id

    def cancel(self) -> None:
        """Make every request stale: queued tasks are skipped and no outcome is emitted."""
        self._latest_id += 1

    def is_stale(self, request_id: int) -> bool:
        """True when a newer request (or ``cancel``) has superseded ``request_id``."""
        return request_id != self._latest_id

    def wait_for_done(self, msecs: int = -1) -> bool:
        """Block until this runner's tasks are over (not the whole pool's); False on timeout.

        Outcomes are delivered by queued signals, so they arrive once the event loop runs again.
        """
        return self._in_flight.wait(msecs)

    @Slot(int, object)
    def _on_task_succeeded(self, request_id: int, result: object) -> None:
        if not self.is_stale(request_id):
            self.result_ready.emit(result)

    @Slot(int, str)
    def _on_task_failed(self, request_id: int, message: str) -> None:
        if not self.is_stale(request_id):
            self.failed.emit(message)
