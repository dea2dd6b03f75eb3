"""On-disk formats of training checkpoints and best-model files, and the helpers that read them.

A training checkpoint (``format: workbench-checkpoint``) holds everything a run needs to resume:
``model``, ``optimizer``, ``scheduler``, ``scaler`` (or None), ``epoch`` (epochs completed),
``best_val_accuracy``, ``best_epoch``, ``best_model`` (a state dict or None), ``rng``
(see :func:`rng_state`), ``class_names`` and ``config`` (``TrainConfig.to_dict()``). Optional,
as files written before them lack them: ``best_val_loss`` (the best epoch's) and
``early_stopping`` (``EarlyStopping.state_dict()``, None when it is off).

A best-model file (``format: workbench-model``) holds ``model``, ``class_names``, ``config``,
``epoch`` and ``val_accuracy``.

Both carry ``version``; files are always read with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from workbench.core.models.building import WeightsError, build_model, strip_wrapper_prefixes
from workbench.core.models.safe_load import UnsafeOrUnreadableFile, load_tensors_file
from workbench.core.runs.atomic_io import atomic_torch_save, describe_os_error
from workbench.core.runs.config import ConfigError, TrainConfig

CHECKPOINT_FORMAT = "workbench-checkpoint"
MODEL_FORMAT = "workbench-model"
FORMAT_VERSION = 1
CHECKPOINT_KEYS = (
    "format", "version", "model", "optimizer", "scheduler", "scaler", "epoch",
    "best_val_accuracy", "best_epoch", "best_model", "rng", "class_names", "config",
)
OPTIONAL_CHECKPOINT_KEYS = ("best_val_loss", "early_stopping")
MODEL_FILE_KEYS = ("format", "version", "model", "class_names", "config", "epoch", "val_accuracy")
_REQUIRED_KEYS = {CHECKPOINT_FORMAT: CHECKPOINT_KEYS, MODEL_FORMAT: MODEL_FILE_KEYS}


class CheckpointSaveError(OSError):
    """A checkpoint or model file could not be written; the previous one is still in place."""


class CheckpointError(Exception):
    """A checkpoint or model file cannot be used; the message names the file and the reason."""


def read_workbench_file(path: str | Path, expected: tuple[str, ...] = tuple(_REQUIRED_KEYS)
                        ) -> dict[str, Any]:
    """Load a workbench checkpoint or best-model file and check its format, version and keys.

    Args:
        path: The file.
        expected: The formats accepted (by default both).

    Raises:
        CheckpointError: Missing, unreadable, unsafe, not a workbench file, from a newer
            workbench, or missing keys.
    """
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"'{path}' does not exist")
    if path.is_dir():
        raise CheckpointError(f"'{path}' is a folder, not a checkpoint file")
    try:
        data = load_tensors_file(path)
    except UnsafeOrUnreadableFile as exc:
        raise CheckpointError(f"'{path}' cannot be loaded: {exc}") from exc
    file_format = data.get("format") if isinstance(data, Mapping) else None
    if not isinstance(file_format, str) or file_format not in _REQUIRED_KEYS:
        raise CheckpointError(f"'{path}' is not a workbench checkpoint or model file "
                              "(it has no workbench 'format' marker)")
    if file_format not in expected:
        raise CheckpointError(_wrong_format_message(path, file_format))
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise CheckpointError(f"'{path}' has an invalid format version {version!r}")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"'{path}' was written by a newer workbench (format version {version}; this version "
            f"reads up to {FORMAT_VERSION}); update workbench to open it"
        )
    missing = [key for key in _REQUIRED_KEYS[file_format] if key not in data]
    if missing:
        raise CheckpointError(f"'{path}' is incomplete: missing {', '.join(missing)}")
    _check_types(path, data)
    return dict(data)


def _wrong_format_message(path: Path, file_format: str) -> str:
    if file_format == MODEL_FORMAT:
        return (f"'{path}' is a best-model file, not a training checkpoint: it can be exported "
                "or used as weights 'file', but a run cannot resume from it")
    return f"'{path}' is a training checkpoint, not a best-model file"


def _check_types(path: Path, data: Mapping[str, Any]) -> None:
    if not isinstance(data["model"], Mapping):
        raise CheckpointError(f"'{path}' is damaged: 'model' is not a state dict")
    names = data["class_names"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise CheckpointError(f"'{path}' is damaged: 'class_names' is not a list of names")
    if not isinstance(data["config"], Mapping):
        raise CheckpointError(f"'{path}' is damaged: 'config' is not a mapping")


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a training checkpoint (to resume a run) on the CPU, with its keys checked.

    Raises:
        CheckpointError: See :func:`read_workbench_file`; a best-model file is refused too.
    """
    return read_workbench_file(path, expected=(CHECKPOINT_FORMAT,))


def load_model_file(path: str | Path) -> tuple[nn.Module, list[str], TrainConfig]:
    """Rebuild the trained model from a checkpoint or best-model file, in eval mode on the CPU.

    A training checkpoint gives its ``best_model`` when it has one, else its latest ``model``.

    Returns:
        The model, the class names and the config it was trained with.

    Raises:
        CheckpointError: The file cannot be read, or its weights do not fit its config.
    """
    path = Path(path)
    data = read_workbench_file(path)
    try:
        config = TrainConfig.from_dict(dict(data["config"]), source=str(path))
    except ConfigError as exc:
        raise CheckpointError(f"'{path}' has an unusable config: {exc}") from exc
    class_names = list(data["class_names"])
    state = data["model"]
    if data["format"] == CHECKPOINT_FORMAT and data.get("best_model") is not None:
        state = data["best_model"]
    try:
        model = build_model(config.replace(weights="none", weights_file=""), len(class_names))
        model.load_state_dict(strip_wrapper_prefixes(state))
    except (RuntimeError, ValueError, WeightsError) as exc:
        reason = str(exc).strip().splitlines()[0]
        raise CheckpointError(
            f"'{path}': its weights do not fit a {config.model} with {len(class_names)} classes "
            f"({reason})"
        ) from exc
    model.eval()
    return model, class_names, config


def model_file_data(model: nn.Module, class_names: Sequence[str], config: TrainConfig,
                    epoch: int, val_accuracy: float) -> dict[str, Any]:
    """The contents of a best-model file, with the weights copied to the CPU."""
    return {
        "format": MODEL_FORMAT, "version": FORMAT_VERSION, "model": _cpu_state(model),
        "class_names": list(class_names), "config": config.to_dict(), "epoch": epoch,
        "val_accuracy": val_accuracy,
    }


def checkpoint_data(
    model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, scaler: Any,
    epoch: int, best_val_accuracy: float, best_epoch: int, class_names: Sequence[str],
    config: TrainConfig, best_val_loss: float | None = None,
    early_stopping: Mapping[str, Any] | None = None, finetune_stage: str | None = None,
) -> dict[str, Any]:
    """A training checkpoint after ``epoch`` epochs; ``scaler`` is None when amp is off,
    ``early_stopping`` the early-stopping state (None when it is off), ``finetune_stage`` the
    stage epoch ``epoch`` trained in with 'head_then_full' ('head' or 'full', else None)."""
    return {
        "format": CHECKPOINT_FORMAT, "version": FORMAT_VERSION, "model": _cpu_state(model),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "scaler": scaler.state_dict() if scaler is not None else None,
        "epoch": epoch, "best_val_accuracy": best_val_accuracy, "best_epoch": best_epoch,
        "best_model": None, "rng": rng_state(), "class_names": list(class_names),
        "config": config.to_dict(), "best_val_loss": best_val_loss,
        "early_stopping": dict(early_stopping) if early_stopping is not None else None,
        "finetune_stage": finetune_stage,
    }


def _cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def write_workbench_file(data: Mapping[str, Any], path: str | Path) -> None:
    """Write a checkpoint or best-model file atomically (the old file stays until it is replaced).

    Raises:
        CheckpointSaveError: The folder is not writable or the disk is full; the message names
            the file and the reason, ``path`` still holds what it held and no temp file is left.
    """
    try:
        atomic_torch_save(dict(data), path)
    except OSError as exc:
        raise CheckpointSaveError(f"could not save '{path}': {describe_os_error(exc)}") from exc


def restore_training_state(state: Mapping[str, Any], path: str | Path, model: nn.Module,
                           optimizer: torch.optim.Optimizer, scheduler: Any, scaler: Any) -> str:
    """Load a checkpoint's weights strictly, then its optimiser, scheduler, scaler and RNGs.

    Returns:
        "" or, when the saved optimiser's learning rate, weight decay or momentum differ from
        what ``optimizer`` was built with (the run's settings), a sentence naming both: a
        resumed run goes on with the optimiser and schedule it saved.

    Raises:
        CheckpointError: The weights or optimiser state do not fit (another architecture,
            class count or optimiser).
    """
    asked = _optimiser_settings(optimizer)
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, KeyError) as exc:
        raise CheckpointError(
            f"{path}: does not fit this model/optimizer ({str(exc).splitlines()[0]}); "
            "resume with the settings it was trained with"
        ) from exc
    if scheduler is not None and state.get("scheduler"):
        saved = dict(state["scheduler"])
        if hasattr(scheduler, "lr_lambdas") and "lr_lambdas" not in saved:
            # Cosine was torch's CosineAnnealingLR before it became a LambdaLR: its step count
            # and base rates carry over, its own figures are left unused.
            saved["lr_lambdas"] = [None] * len(scheduler.lr_lambdas)
        scheduler.load_state_dict(saved)
        if hasattr(scheduler, "lr_lambdas"):
            # The next epoch's lr from this run's schedule, which may be longer than the saved
            # one (more epochs asked); for the same run it is the lr the checkpoint holds.
            for group, base, factor in zip(optimizer.param_groups, scheduler.base_lrs,
                                           scheduler.lr_lambdas, strict=True):
                group["lr"] = base * factor(scheduler.last_epoch)
    if scaler is not None and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    if state.get("rng"):
        restore_rng_state(state["rng"])
    return _kept_settings_note(asked, _optimiser_settings(optimizer))


_SETTING_LABELS = {"lr": "learning rate", "weight_decay": "weight decay", "momentum": "momentum"}


def _optimiser_settings(optimizer: torch.optim.Optimizer) -> dict[str, float]:
    """The first parameter group's base learning rate (before any schedule), weight decay and
    momentum (SGD's)."""
    group = optimizer.param_groups[0]
    settings = {"lr": float(group.get("initial_lr", group["lr"])),
                "weight_decay": float(group.get("weight_decay", 0.0))}
    if "momentum" in group:
        settings["momentum"] = float(group["momentum"])
    return settings


def _kept_settings_note(asked: dict[str, float], kept: dict[str, float]) -> str:
    differ = [name for name in _SETTING_LABELS if name in asked and name in kept
              and not math.isclose(asked[name], kept[name], rel_tol=1e-6, abs_tol=1e-12)]
    if not differ:
        return ""
    said = " and ".join(f"{_SETTING_LABELS[name]} {kept[name]:g} (the settings say "
                        f"{asked[name]:g})" for name in differ)
    return (f" It goes on with the checkpoint's {said}: a resumed run keeps the optimiser and "
            "schedule it saved; to train with the new values, start a new run.")


def rng_state() -> dict[str, Any]:
    """The state of Python's, NumPy's and torch's random generators, safe for weights_only loading.

    CUDA generators are included when CUDA has been initialised in this process (an
    uninitialised CUDA has no state worth keeping, and asking would start a CUDA context).
    """
    version, internal, gauss_next = random.getstate()
    name, keys, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    cuda: list[torch.Tensor] = []
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        cuda = [state.cpu() for state in torch.cuda.get_rng_state_all()]
    return {
        "python": {"version": int(version), "state": list(internal), "gauss_next": gauss_next},
        "numpy": {
            "name": str(name),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
        "cuda": cuda,
    }


def restore_rng_state(state: Mapping[str, Any]) -> None:
    """Put the generators back to a state from :func:`rng_state` (CUDA ones where CUDA exists)."""
    python = state["python"]
    random.setstate((python["version"], tuple(python["state"]), python["gauss_next"]))
    numpy_state = state["numpy"]
    np.random.set_state((
        numpy_state["name"],
        numpy_state["keys"].numpy().astype(np.uint32),
        numpy_state["pos"],
        numpy_state["has_gauss"],
        numpy_state["cached_gaussian"],
    ))
    torch.set_rng_state(state["torch"].cpu())
    cuda_states = state.get("cuda") or []
    if cuda_states and torch.cuda.is_available():
        # A machine with fewer GPUs restores the generators it has.
        for index, cuda_state in enumerate(cuda_states[: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(cuda_state.cpu(), index)
