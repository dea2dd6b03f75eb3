"""Training in one QThread: the engine's callback events become Qt signals.

The wiring is superqt's: ``worker.moveToThread(thread)``, ``thread.started -> worker.run``,
``worker.finished -> thread.quit``; the thread deletes itself once finished and the worker is
deleted on the GUI thread after that (see ``thread_for``). The worker never touches a
widget; stop and pause go through :class:`~workbench.core.runs.control.RunControl`, so the thread is
asked to stop and always finishes on its own (it is never terminated).

This module must not import torch at import time: the engine is imported inside ``run`` so the
window can appear before torch loads.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import traceback

import shiboken6
from PySide6.QtCore import QObject, QThread, Signal, Slot

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import (
    Callback,
    EpochEnd,
    Message,
    Progress,
    RunEnd,
    RunStart,
    StepStats,
)
from workbench.gui.workers.long_lived_objects import freeze_long_lived_objects
from workbench.gui.workers.worker_threads import thread_for, wait_until_finished


class _SignalCallback(Callback):
    """Forwards each engine hook to the matching worker signal (emitted in the training thread)."""

    def __init__(self, worker: TrainingWorker) -> None:
        self._worker = worker

    def on_run_start(self, event: RunStart) -> None:
        self._worker.run_started.emit(event)

    def on_step(self, event: StepStats) -> None:
        self._worker.step_finished.emit(event)

    def on_epoch_end(self, event: EpochEnd) -> None:
        self._worker.epoch_ended.emit(event)

    def on_message(self, event: Message) -> None:
        self._worker.message_logged.emit(event)

    def on_progress(self, event: Progress) -> None:
        self._worker.progress_reported.emit(event)

    def on_run_end(self, event: RunEnd) -> None:
        self._worker.emit_run_end(event)


class RunEventSignals(QObject):
    """The engine's events of one run as signals: a local run's and a followed run's alike."""

    run_started = Signal(object)
    step_finished = Signal(object)
    epoch_ended = Signal(object)
    message_logged = Signal(object)
    run_ended = Signal(object)


class RunSignals(RunEventSignals):
    """A local run's signals, declared once for the worker and the controller."""

    progress_reported = Signal(object)
    """A ``Progress`` of slow work before the first step (the ImageNet weights download)."""
    errored = Signal(str)
    finished = Signal()


# The run's own events, forwarded from the worker to the controller; ``finished`` is not
# forwarded: the controller emits it when the thread itself has finished.
FORWARDED_SIGNALS = ("run_started", "step_finished", "epoch_ended", "message_logged",
                     "progress_reported", "run_ended", "errored")


class TrainingWorker(RunSignals):
    """Runs ``engine.train(config)`` once, in whatever thread it has been moved to.

    Signals carry the engine's frozen event dataclasses. ``errored`` is emitted for anything the
    engine raised (it should report problems itself, so this is a last resort), and ``finished``
    is always the last signal.
    """

    def __init__(self, config: TrainConfig, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._config = config
        self._control = RunControl()
        self._run_end_emitted = False

    @property
    def config(self) -> TrainConfig:
        """The config this worker trains."""
        return self._config

    @property
    def stop_requested(self) -> bool:
        """True once ``request_stop`` has been called."""
        return self._control.cancel_requested

    @property
    def stop_keep_best_requested(self) -> bool:
        """True once ``request_stop_keep_best`` has been called."""
        return self._control.stop_after_epoch_requested

    @property
    def paused(self) -> bool:
        """True while the run is paused."""
        return self._control.paused

    def request_stop(self) -> None:
        """Ask the run to stop at the next step boundary; safe from any thread."""
        self._control.request_cancel()

    def request_stop_keep_best(self) -> None:
        """Ask the run to end after the current epoch, its best epoch being its result; safe
        from any thread."""
        self._control.request_stop_after_epoch()

    def pause(self) -> None:
        """Hold the run before its next step; safe from any thread."""
        self._control.pause()

    def resume(self) -> None:
        """Let a paused run go on; safe from any thread."""
        self._control.resume()

    def emit_run_end(self, event: RunEnd) -> None:
        """Emit ``run_ended`` once; after a stop request the result is never reported as success."""
        if self._run_end_emitted:
            return
        if self._control.cancel_requested and event.status == "completed":
            # The stop arrived after the last step; the user asked to stop, so say so.
            event = dataclasses.replace(event, status="cancelled")
        self._run_end_emitted = True
        self.run_ended.emit(event)

    @Slot()
    def run(self) -> None:
        """Train, then emit ``finished``; every exception becomes ``errored``."""
        try:
            from workbench.core.training.engine import train

            freeze_long_lived_objects()  # torch is loaded: see long_lived_objects
            yield_cpu_to_the_ui()
            train(self._config, callback=_SignalCallback(self), control=self._control)
        except BaseException as exc:  # a worker reports everything and never raises
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.errored.emit(f"Training stopped by an unexpected error: {detail}")
        finally:
            self.finished.emit()


TRAINING_NICENESS = 5
"""How much lower than the UI thread the training thread runs (Linux nice levels)."""


def yield_cpu_to_the_ui() -> None:
    """Run this thread, and the threads and loader processes it starts, below the UI thread.

    On the CPU the training thread's kernels keep every core busy, and the UI thread waited
    for a core to paint (heartbeat lateness p99 34-47 ms while training). At a lower priority
    the scheduler hands the UI thread a core whenever it has work, which is seldom and brief,
    and training gets everything else. On Linux a nice level is per thread and is inherited by
    the threads (torch's intra-op pool) and processes (loaders) this thread creates; elsewhere
    Qt's thread priority is the means.
    """
    if sys.platform.startswith("linux"):
        thread = threading.get_native_id()
        try:
            now = os.getpriority(os.PRIO_PROCESS, thread)
            os.setpriority(os.PRIO_PROCESS, thread, min(19, now + TRAINING_NICENESS))
        except OSError:
            pass  # a sandbox that forbids it: training runs at the UI's priority, as before
    else:
        QThread.currentThread().setPriority(QThread.Priority.LowPriority)


class TrainingController(RunSignals):
    """Owns the one training thread: starts it, forwards its signals, stops it and waits for it.

    The forwarded signals are emitted in the thread the controller lives in (the UI thread), so
    widgets can be connected to them once, for every run. ``finished`` is emitted when the
    thread itself has finished, which is what ``closeEvent`` waits for.
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: QThread | None = None
        self._worker: TrainingWorker | None = None

    def is_running(self) -> bool:
        """True from ``start`` until the training thread has finished."""
        return self._thread is not None

    def is_paused(self) -> bool:
        """True while a running run is paused."""
        worker = self._live_worker()
        return worker is not None and worker.paused

    def stop_requested(self) -> bool:
        """True when the current run has been asked to stop."""
        worker = self._live_worker()
        return worker is not None and worker.stop_requested

    def start(self, config: TrainConfig) -> TrainingWorker:
        """Start training ``config`` in a new thread; only one run at a time."""
        if self.is_running():
            raise RuntimeError("a training run is already in progress")
        thread, worker = create_training_thread(config)
        # Connect before the thread starts, so not even an immediate failure can be missed.
        for name in FORWARDED_SIGNALS:
            getattr(worker, name).connect(getattr(self, name))
        thread.finished.connect(self._on_thread_finished)
        self._thread, self._worker = thread, worker
        thread.start()
        return worker

    def request_stop(self) -> None:
        """Ask the running run to stop; the thread finishes on its own."""
        worker = self._live_worker()
        if worker is not None:
            worker.request_stop()

    def stop_keep_best_requested(self) -> bool:
        """True when the current run has been asked to end after its epoch, keeping its best."""
        worker = self._live_worker()
        return worker is not None and worker.stop_keep_best_requested

    def request_stop_keep_best(self) -> None:
        """Ask the running run to end after the current epoch with its best epoch as result."""
        worker = self._live_worker()
        if worker is not None:
            worker.request_stop_keep_best()

    def pause(self) -> None:
        """Pause the running run before its next step."""
        worker = self._live_worker()
        if worker is not None:
            worker.pause()

    def resume(self) -> None:
        """Resume a paused run."""
        worker = self._live_worker()
        if worker is not None:
            worker.resume()

    def wait_finished(self, timeout_s: float) -> bool:
        """Process events until the thread finished or ``timeout_s`` passed; True if finished."""
        return wait_until_finished(self.is_running, self.finished, timeout_s)

    def _live_worker(self) -> TrainingWorker | None:
        worker = self._worker
        if worker is None or not shiboken6.isValid(worker):
            return None
        return worker

    @Slot()
    def _on_thread_finished(self) -> None:
        self._thread = None
        self._worker = None
        self.finished.emit()


def create_training_thread(config: TrainConfig) -> tuple[QThread, TrainingWorker]:
    """A worker and its (not yet started) thread, wired the superqt way.

    The caller keeps both references until the thread's ``finished`` reaches it, then drops
    them (see ``thread_for``).
    """
    worker = TrainingWorker(config)
    return thread_for(worker, "workbench-training"), worker
