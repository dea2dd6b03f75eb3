"""Short jobs in a thread pool, with results delivered to the GUI thread as signals.

``FunctionTask`` runs one plain function in a ``QThreadPool`` and reports through a
``TaskSignals`` object that lives on the GUI thread, so slots connected to it run there.
``LatestRequestRunner`` is the "latest request wins" policy on top: every submission gets an id,
a queued task whose id is no longer the latest is skipped without running, and only the latest
request's outcome is emitted; everything older is dropped before it reaches a widget.

Pool tasks never touch widgets: they return plain data (numbers, numpy arrays, dataclasses) and
the GUI thread turns it into pixmaps.

Every pool job reports through a :class:`JobSignals` object made by ``for_a_pool_job``: owned by
the application and deleted on the GUI thread once all it emitted has been delivered. A job
holds no other reference to a QObject. The pool deletes a finished job in its own thread, when
it likes; a QObject whose last Python reference went with the job was destroyed there, in the
middle of the GUI thread delivering its queued signals (a test session crashed with a
segmentation fault in the event loop).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from PySide6.QtCore import (
    QCoreApplication,
    QDeadlineTimer,
    QObject,
    QRunnable,
    QThreadPool,
    Signal,
    Slot,
)

SignalsType = TypeVar("SignalsType", bound="JobSignals")


class JobSignals(QObject):
    """The signals of one pool job; subclasses declare what the job reports.

    Made with ``for_a_pool_job`` on the GUI thread, so slots connected to them run there. The
    job calls ``release`` last, in its pool thread, whatever happened: its queued delivery,
    after everything the job emitted, deletes the object on the GUI thread.
    """

    _released = Signal()

    @classmethod
    def for_a_pool_job(cls: type[SignalsType]) -> SignalsType:
        """A signals object owned by the application (not by Python, so the pool dropping
        the job's references in its thread deletes nothing) that deletes itself on release."""
        signals = cls(QCoreApplication.instance())
        signals._released.connect(signals.deleteLater)
        return signals

    def release(self) -> None:
        """The job's last call: nothing more will be emitted."""
        self._released.emit()


class TaskSignals(JobSignals):
    """What a ``FunctionTask`` reports."""

    succeeded = Signal(int, object)
    """The function returned: ``(request_id, result)``."""
    failed = Signal(int, str)
    """The function raised: ``(request_id, message)``."""
    finished = Signal(int)
    """The task is over, whether it succeeded, failed or was skipped as stale."""


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
        self.signals = TaskSignals.for_a_pool_job()
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
            self.signals.release()


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


class LatestRequest:
    """The id of a runner's latest request, readable from any thread; a plain object, so a
    task may hold it (a task must not hold the runner, a QObject: see the module's note)."""

    def __init__(self) -> None:
        self.latest_id = 0

    def next_id(self) -> int:
        """GUI thread: a new request, now the latest; its id."""
        self.latest_id += 1
        return self.latest_id

    def is_stale(self, request_id: int) -> bool:
        """True when a newer request (or a cancel) has superseded ``request_id``."""
        return request_id != self.latest_id


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
        self._latest = LatestRequest()
        self._in_flight = TasksInFlight()

    def latest_request_id(self) -> int:
        """Id of the most recent submission (0 before the first)."""
        return self._latest.latest_id

    def is_busy(self) -> bool:
        """True while a task of this runner is queued or running."""
        return self._in_flight.busy()

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        """Queue ``fn(*args)`` in the pool; returns the new request id, which is now the latest."""
        request_id = self._latest.next_id()
        task = FunctionTask(request_id, fn, args, self._latest.is_stale, self._in_flight.done)
        task.signals.succeeded.connect(self._on_task_succeeded)
        task.signals.failed.connect(self._on_task_failed)
        self._in_flight.started()
        self._pool.start(task, self._priority)
        return request_id

    def cancel(self) -> None:
        """Make every request stale: queued tasks are skipped and no outcome is emitted."""
        self._latest.next_id()

    def is_stale(self, request_id: int) -> bool:
        """True when a newer request (or ``cancel``) has superseded ``request_id``."""
        return self._latest.is_stale(request_id)

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
