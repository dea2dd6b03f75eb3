"""The training engine: ``train(config, callback, control)`` runs one whole run and reports it.

Nothing here prints or raises at the user: every problem becomes a ``Message`` and a
``RunEnd(status="failed")`` naming the file or field, and whatever was already saved (the last
finished epoch's checkpoint, the best model) stays on disk.
"""

from __future__ import annotations

import time
import traceback

import torch

from workbench.core.checkpoint_format import CheckpointError
from workbench.core.config import ConfigError, TrainConfig
from workbench.core.control import RunControl
from workbench.core.dataset_scan import DatasetError
from workbench.core.devices import DeviceError
from workbench.core.events import Callback, CallbackList, Message, RunEnd
from workbench.core.image_cache import ImageDecodeError
from workbench.core.models import WeightsError
from workbench.core.train_steps import NonFiniteLossError
from workbench.core.training_session import TrainingSession

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
    try:
        problems = config.validate()
        if problems:
            raise ConfigError("the config has problems: " + "; ".join(problems))
        session = TrainingSession(config, events, control)
        session.prepare()
        return session.fit()
    except torch.cuda.OutOfMemoryError as exc:
        text = (
            f"the GPU ran out of memory ({str(exc).splitlines()[0]}); lower batch_size "
            "or crop_size, or turn on amp"
        )
        return _failed(events, session, text, started)
    except USER_ERRORS as exc:
        return _failed(events, session, str(exc), started)
    except Exception as exc:  # a bug must still end the run cleanly and say what happened
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return _failed(events, session, f"unexpected error: {detail}", started,
                       trace=traceback.format_exc())
    finally:
        if session is not None:
            session.close()


def _failed(
    events: CallbackList,
    session: TrainingSession | None,
    text: str,
    started: float,
    trace: str = "",
) -> RunEnd:
    if session is not None and session.ended:
        return session.ended
    if trace:
        events.on_message(Message("error", trace.rstrip()))
    events.on_message(Message("error", f"Training failed: {text}"))
    end = RunEnd(
        status="failed",
        epochs_completed=session.epochs_completed if session else 0,
        best_epoch=session.best_epoch if session else 0,
        best_val_accuracy=session.best_val_accuracy if session else 0.0,
        run_dir=str(session.run_dir) if session and session.run_dir else "",
        best_model_path=session.best_model_path if session else "",
        last_checkpoint_path=session.last_checkpoint_path if session else "",
        seconds=time.monotonic() - started,
        error=text,
    )
    events.on_run_end(end)
    return end
