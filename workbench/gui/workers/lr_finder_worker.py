"""The learning-rate range test in the thread pool: each step's lr and smoothed loss as a signal,
then the result, a clear message for anything that went wrong, and ``finished`` last.

The job imports torch (through the core finder) only when it runs, never at import time. It is
cancelled through a :class:`~workbench.core.runs.control.RunControl` the finder checks between
steps; a cancelled job reports no result. The core finder puts the model and the optimiser
back as they were, however the test ends.
"""

from __future__ import annotations

import traceback

from PySide6.QtCore import QRunnable, Signal

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.gui.workers.pool_tasks import JobSignals


class LrFinderSignals(JobSignals):
    """Signals of one range test; the object lives in the UI thread, so slots run there."""

    step_measured = Signal(int, float, float)
    """(step, lr, smoothed loss) after each training step of the test."""
    result_ready = Signal(object)
    """The ``LrFinderResult`` of a test that was not cancelled."""
    errored = Signal(str)
    """One line for the user: what went wrong and what to do; never a traceback."""
    finished = Signal()
    """Always the last signal."""


class LrFinderJob(QRunnable):
    """Run ``find_lr_for_config(config, steps)`` once, in a pool thread.

    Connect to ``job.signals`` before handing the job to a pool; they are delivered on the GUI
    thread, where the signals object deletes itself after ``finished`` (see ``JobSignals``).
    """

    def __init__(self, config: TrainConfig, steps: int) -> None:
        super().__init__()
        self.config = config
        self.steps = steps
        self.control = RunControl()
        self.signals = LrFinderSignals.for_a_pool_job()

    def cancel(self) -> None:
        """Stop before the next step; safe from any thread. No result is reported after it."""
        self.control.request_cancel()

    def run(self) -> None:
        """Runs in a pool thread."""
        try:
            from workbench.core.training.tuning.lr_finder import find_lr_for_config

            result = find_lr_for_config(self.config, self.steps, control=self.control,
                                        on_step=self.signals.step_measured.emit)
            if not self.control.cancel_requested:
                self.signals.result_ready.emit(result)
        except BaseException as exc:  # a job reports everything and never raises
            if not self.control.cancel_requested:
                self.signals.errored.emit(failure_message(exc, self.config))
        finally:
            self.signals.finished.emit()
            self.signals.release()


def failure_message(exc: BaseException, config: TrainConfig) -> str:
    """What went wrong, in one or two sentences that name the file, folder or setting."""
    import torch

    from workbench.core.data.dataset_scan import DatasetError
    from workbench.core.data.image_decoding import ImageDecodeError
    from workbench.core.devices.selection import DeviceError
    from workbench.core.models.building import WeightsError
    from workbench.core.runs.atomic_io import describe_os_error

    if isinstance(exc, torch.OutOfMemoryError):
        return (f"The device ({config.device}) ran out of memory at batch size "
                f"{config.batch_size}. Lower the batch size (Settings), or choose a smaller "
                "crop or the CPU, then find the learning rate again.")
    if isinstance(exc, OSError) and exc.filename:
        return f"'{exc.filename}': {describe_os_error(exc)}"
    if isinstance(exc, DatasetError | DeviceError | WeightsError | ImageDecodeError
                  | ValueError | OSError):
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[0]
    return f"The range test stopped on an unexpected error: {detail}"
