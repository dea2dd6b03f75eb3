"""Measuring models on this machine in one QThread, for the model picker.

Each model is measured in turn (``core.training.tuning.model_measurement``), remembered in the
measurements file and reported as soon as it is done, so the table fills row by row. Cancel is
a ``threading.Event`` the measurement checks between steps; after it no further row and no
error is reported, and ``finished`` still comes last. The controller owns the thread the
superqt way (``moveToThread``, ``started -> run``, ``finished -> quit``; see ``thread_for``)
and never terminates it: closing the picker asks it to stop and waits.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass

import shiboken6
from PySide6.QtCore import QObject, QThread, Signal, Slot

from workbench.gui.workers.training_worker import yield_cpu_to_the_ui
from workbench.gui.workers.worker_threads import thread_for, wait_until_finished


@dataclass(frozen=True)
class MeasurementRequest:
    """What to measure: models, and the settings each is measured at (0 / '' for each model's
    own batch, crop or fine-tune mode)."""

    models: tuple[str, ...]
    batch_size: int
    crop_size: int
    amp: bool
    finetune: str
    device: str
    cache_path: str = ""  # the default measurements file when empty
    timed_steps: int | None = None  # the measurement's default when None


class ModelMeasurementWorker(QObject):
    """Measures the request's models one by one in its thread.

    Signals:
        model_started(str, int, int): a model's measurement begins (name, index from 0, count).
        model_measured(object): a ``ModelMeasurement``, as soon as it is done.
        model_failed(str, str): a model that could not be measured (name, the reason).
        errored(str): something failed for every model (a device that does not exist).
        finished(): always last.
    """

    model_started = Signal(str, int, int)
    model_measured = Signal(object)
    model_failed = Signal(str, str)
    errored = Signal(str)
    finished = Signal()

    def __init__(self, request: MeasurementRequest) -> None:
        super().__init__()
        self.request = request
        self._stop = threading.Event()

    def cancel(self) -> None:
        """Stop at the next step; safe from any thread."""
        self._stop.set()

    @property
    def cancelled(self) -> bool:
        return self._stop.is_set()

    @Slot()
    def run(self) -> None:
        """Runs in the worker's thread."""
        try:
            yield_cpu_to_the_ui()
            self._measure_all()
        except BaseException as exc:  # a worker reports everything and never raises
            if not self.cancelled:
                detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                self.errored.emit(detail.splitlines()[0] if detail else type(exc).__name__)
        finally:
            self.finished.emit()

    def _measure_all(self) -> None:
        from workbench.core.devices.selection import DeviceError
        from workbench.core.training.tuning.measurement_cache import MeasurementCache
        from workbench.core.training.tuning.model_measurement import (
            measure_model,
            measurement_settings,
        )

        request = self.request
        cache = MeasurementCache(request.cache_path or None)
        for index, model in enumerate(request.models):
            if self.cancelled:
                return
            self.model_started.emit(model, index, len(request.models))
            try:
                settings = measurement_settings(model, request.batch_size, request.crop_size,
                                                request.amp, request.finetune, request.device)
            except DeviceError as exc:
                self.errored.emit(str(exc))
                return
            try:
                measurement = measure_model(settings, timed_steps=request.timed_steps,
                                            should_stop=self._stop.is_set)
            except ValueError as exc:
                self.model_failed.emit(model, str(exc))
                continue
            if measurement is None or self.cancelled:
                return
            cache.put(measurement)
            self.model_measured.emit(measurement)


class ModelMeasurementController(QObject):
    """Owns the measuring thread of the picker; forwards its worker's signals.

    Signals are those of :class:`ModelMeasurementWorker`; ``finished`` comes when the thread
    itself has finished, so ``is_running`` is False in its slots.
    """

    model_started = Signal(str, int, int)
    model_measured = Signal(object)
    model_failed = Signal(str, str)
    errored = Signal(str)
    finished = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: QThread | None = None
        self._worker: ModelMeasurementWorker | None = None
        self._cancelled = False

    def is_running(self) -> bool:
        return self._thread is not None

    def start(self, request: MeasurementRequest) -> None:
        """Measure ``request`` in a new thread; one measurement at a time."""
        if self.is_running():
            raise RuntimeError("a measurement is already running")
        worker = ModelMeasurementWorker(request)
        thread = thread_for(worker, "workbench-model-measurement")
        # Slots of this object, which lives in the UI thread: the signals are queued to it.
        worker.model_started.connect(self._on_model_started)
        worker.model_measured.connect(self._on_model_measured)
        worker.model_failed.connect(self._on_model_failed)
        worker.errored.connect(self._on_errored)
        thread.finished.connect(self._on_thread_finished)
        self._thread, self._worker = thread, worker
        self._cancelled = False
        thread.start()

    def cancel(self) -> None:
        """Ask the measurement to stop; no row or error is forwarded after this."""
        self._cancelled = True
        worker = self._worker
        if worker is not None and shiboken6.isValid(worker):
            worker.cancel()

    def wait_finished(self, timeout_s: float) -> bool:
        """Process events until the thread has finished or ``timeout_s`` passed."""
        return wait_until_finished(self.is_running, self.finished, timeout_s)

    def _dropped(self) -> bool:
        """True once the measurement was cancelled: its late rows and errors are dropped."""
        return self._cancelled

    @Slot(str, int, int)
    def _on_model_started(self, model: str, index: int, count: int) -> None:
        if not self._dropped():
            self.model_started.emit(model, index, count)

    @Slot(object)
    def _on_model_measured(self, measurement: object) -> None:
        if not self._dropped():
            self.model_measured.emit(measurement)

    @Slot(str, str)
    def _on_model_failed(self, model: str, message: str) -> None:
        if not self._dropped():
            self.model_failed.emit(model, message)

    @Slot(str)
    def _on_errored(self, message: str) -> None:
        if not self._dropped():
            self.errored.emit(message)

    @Slot()
    def _on_thread_finished(self) -> None:
        self._thread = None
        self._worker = None
        self.finished.emit()
