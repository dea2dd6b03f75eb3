"""The training engine: ``train(config, callback, control)`` runs one whole run and reports it.

Nothing here prints or raises at the user: every problem becomes a ``Message`` and a
``RunEnd(status="failed")`` naming the file or field, and whatever was already saved (the last
finished epoch's checkpoint, the best model) stays on disk.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass

import torch

from workbench.core.data.dataset_scan import DatasetError
from workbench.core.data.image_cache import ImageDecodeError
from workbench.core.devices.memory import free_device_memory
from workbench.core.devices.selection import DeviceError
from workbench.core.models.building import WeightsError
from workbench.core.models.checkpoint_format import CheckpointError, CheckpointSaveError
from workbench.core.models.weights_download import DownloadCancelled
from workbench.core.runs.atomic_io import describe_os_error
from workbench.core.runs.config import ConfigError, TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback, CallbackList, Message, RunEnd
from workbench.core.training.faults import (
    TrainingOutOfMemory,
    first_line,
    loader_failure_message,
    out_of_memory_message,
)
from workbench.core.training.session import TrainingSession
from workbench.core.training.steps import NonFiniteLossError

USER_ERRORS = (
    ConfigError,
    DatasetError,
    DeviceError,
    WeightsError,
    CheckpointError,
    ImageDecodeError,
    NonFiniteLossError,
    OSError,
)


def train(
    config: TrainConfig,
    callback: Callback | None = None,
    control: RunControl | None = None,
) -> RunEnd:
    """Train one run to the end, to a cancel, or to a reported failure; never raises for input.

    Faults end the run the same way: a full or read-only disk (the previous checkpoint is
    kept), the device out of memory (with a smaller batch to try), a non-finite loss (stopped
    before the update), a loader process that died or hung.

    Args:
        config: the run's settings; ``validate()`` problems end the run before anything starts.
        callback: receives every event (the GUI, the CLI, metrics.jsonl are all callbacks).
        control: cancel and pause flags, checked between steps.

    Returns:
        The same ``RunEnd`` event the callback received.
    """
    events = CallbackList([callback] if callback is not None else [])
    control = control or RunControl()
    started = time.monotonic()
    session: TrainingSession | None = None
    failure: _Failure | None = None
    try:
        try:
            problems = config.validate()
            if problems:
                raise ConfigError("the config has problems: " + "; ".join(problems))
            session = TrainingSession(config, events, control)
            session.prepare()
            return session.fit()
        except Exception as exc:  # every failure, a bug too, must end the run cleanly
            failure = _describe_failure(exc, session.config if session else config)
        # Outside the except block: the error's frames no longer hold tensors.
        if failure.retry_batch_size or failure.out_of_memory:
            free_device_memory(session.device if session and hasattr(session, "device")
                               else config.device)
        return _failed(events, session, failure, started)
    finally:
        if session is not None:
            session.close(kill_loader_workers=failure is not None and failure.loader_failed)


@dataclass(frozen=True)
class _Failure:
    text: str
    trace: str = ""
    retry_batch_size: int = 0
    out_of_memory: bool = False
    loader_failed: bool = False
    cancelled: bool = False  # a stop request ended the preparation; not a failure


def _describe_failure(exc: Exception, config: TrainConfig) -> _Failure:
    """What went wrong, as text only (no reference to the exception survives)."""
    if isinstance(exc, DownloadCancelled):
        return _Failure("Stopped on request while downloading the ImageNet weights; nothing "
                        "was downloaded or saved.", cancelled=True)
    if isinstance(exc, TrainingOutOfMemory):
        return _Failure(str(exc), retry_batch_size=exc.smaller_batch, out_of_memory=True)
    if isinstance(exc, torch.OutOfMemoryError):  # outside a step: evaluation, feature caching
        batch = config.batch_size
        return _Failure(out_of_memory_message(batch, config.device, first_line(exc)),
                        retry_batch_size=batch // 2, out_of_memory=True)
    if isinstance(exc, OSError) and not isinstance(exc, CheckpointSaveError) and exc.filename:
        return _Failure(f"'{exc.filename}': {describe_os_error(exc)}")  # e.g. the run folder
    if isinstance(exc, USER_ERRORS):
        return _Failure(_without_worker_traceback(str(exc)))
    loader_problem = loader_failure_message(exc, config.workers, config.loader_timeout)
    if loader_problem:
        return _Failure(loader_problem, loader_failed=True)
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return _Failure(f"unexpected error: {detail}", trace="".join(traceback.format_exception(exc)))


def _without_worker_traceback(text: str) -> str:
    """The message of an error a loader process raised, without the traceback torch adds
    ("Caught ... in DataLoader worker process 0. Original Traceback ...")."""
    if not text.startswith("Caught ") or "Original Traceback" not in text:
        return text
    last = text.rstrip().splitlines()[-1]
    name, separator, message = last.partition(": ")
    return message if separator and name.replace(".", "_").isidentifier() else last


def _failed(
    events: CallbackList,
    session: TrainingSession | None,
    failure: _Failure,
    started: float,
) -> RunEnd:
    if session is not None and session.ended:
        return session.ended
    if failure.trace:
        events.on_message(Message("error", failure.trace.rstrip()))
    if failure.cancelled:
        events.on_message(Message("info", failure.text))
    else:
        events.on_message(Message("error", f"Training failed: {failure.text}"))
    if session is not None and session.run_dir and not session.last_checkpoint_path:
        events.on_message(Message("info", (
            f"No epoch finished, so nothing was saved; the run folder {session.run_dir} is "
            "kept as the record of this attempt (config.json, and metrics.jsonl with the "
            "error). Delete it if you do not need it.")))
    end = RunEnd(
        status="cancelled" if failure.cancelled else "failed",
        epochs_completed=session.epochs_completed if session else 0,
        best_epoch=session.best_epoch if session else 0,
        # -1 means "no epoch yet" inside the session; the event says 0, as a cancel does.
        best_val_accuracy=max(session.best_val_accuracy, 0.0) if session else 0.0,
        run_dir=str(session.run_dir) if session and session.run_dir else "",
        best_model_path=session.best_model_path if session else "",
        last_checkpoint_path=session.last_checkpoint_path if session else "",
        seconds=time.monotonic() - started,
        error="" if failure.cancelled else failure.text,
        retry_batch_size=failure.retry_batch_size,
    )
    events.on_run_end(end)
    return end
