"""Which precision, memory layout and batch size train the user's own model fastest here.

Published tables say mixed precision and channels_last help on tensor-core GPUs and hurt on a
GTX 1650; the probe measures instead of guessing. It times a few real training steps (forward,
backward, optimiser step) of the configured model on the user's own images, decoded and cropped
as a run would, for every combination of float32 or mixed precision, channels_last off or on,
and a couple of batch sizes. A combination that runs out of memory is a row saying so.

On the CPU there is no mixed precision worth having, and a run keeps the default memory layout
(``channels_last_applies``), so its rows are float32 in that layout at each batch size: the
probe measures only what a run would use, and applies only what it measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.data_pipeline import build_data_pipeline
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.multicrop import multicrop_loss
from workbench.core.devices.memory import free_device_memory
from workbench.core.devices.selection import resolve_device
from workbench.core.models.building import apply_finetune_mode, build_model, set_train_mode
from workbench.core.runs.config import TrainConfig
from workbench.core.training.optimisers import build_optimizer
from workbench.core.training.plan import channels_last_applies
from workbench.core.training.precision import (
    FLOAT16,
    FLOAT32,
    CardInfo,
    Precision,
    precision_for_card,
)

WARMUP_STEPS = {"cuda": 2, "cpu": 1}
"""Untimed steps first: cuDNN's autotuning and the allocator's growth happen there."""
TIMED_STEPS = {"cuda": 5, "cpu": 2}


@dataclass(frozen=True)
class ProbeRow:
    """One combination and its speed; ``error`` says why it has none (e.g. out of memory)."""

    precision: Precision
    channels_last: bool
    batch_size: int
    images_per_second: float | None = None
    peak_memory: int | None = None
    error: str = ""

    @property
    def config_changes(self) -> dict[str, Any]:
        """The config fields that select this combination."""
        changes: dict[str, Any] = {"amp": self.precision.autocast,
                                   "channels_last": self.channels_last,
                                   "batch_size": self.batch_size}
        if self.precision.autocast:
            changes["amp_dtype"] = str(self.precision.dtype).removeprefix("torch.")
        return changes


@dataclass(frozen=True)
class SpeedProbeResult:
    """Every row measured, on ``device``; ``fastest`` is None when none ran (or stopped)."""

    device: str
    rows: tuple[ProbeRow, ...]
    cancelled: bool = False

    @property
    def fastest(self) -> ProbeRow | None:
        timed = [row for row in self.rows if row.images_per_second is not None]
        return max(timed, key=lambda row: row.images_per_second) if timed else None

    def config_changes(self) -> dict[str, Any]:
        """The fields that select the fastest row; empty when there is none. Where the
        layout was not measured (the CPU) the channels_last setting is left as it is."""
        fastest = self.fastest
        if fastest is None:
            return {}
        changes = dict(fastest.config_changes)
        if not channels_last_applies(self.device):
            del changes["channels_last"]
        return changes

    def apply_to(self, config: TrainConfig) -> TrainConfig:
        """``config`` with the fastest row's precision, layout and batch size."""
        changes = self.config_changes()
        return config.replace(**changes) if changes else config

    def table(self) -> str:
        """The rows as a plain-text table, fastest marked, for the terminal and the window."""
        fastest = self.fastest
        lines = [f"{'precision':<32} {'channels_last':<13} {'batch':>5} {'images/s':>10} "
                 f"{'peak memory':>12}"]
        for row in self.rows:
            speed = f"{row.images_per_second:,.1f}" if row.images_per_second is not None \
                else row.error
            peak = f"{row.peak_memory / 2**20:,.0f} MiB" if row.peak_memory else "\u2014"
            mark = "  <- fastest" if row is fastest else ""
            lines.append(f"{row.precision.label:<32} {'on' if row.channels_last else 'off':<13} "
                         f"{row.batch_size:>5} {speed:>10} {peak:>12}{mark}")
        return "\n".join(lines)

    def describe(self) -> str:
        """One sentence: the fastest combination, or why there is none."""
        if self.cancelled:
            return "The speed probe was stopped."
        fastest = self.fastest
        if fastest is None:
            reasons = sorted({row.error for row in self.rows}) or ["nothing was tried"]
            return f"No combination trained on {self.device}: {', '.join(reasons)}."
        layout = f", channels_last {'on' if fastest.channels_last else 'off'}" \
            if channels_last_applies(self.device) else ""
        note = "" if channels_last_applies(self.device) else \
            " A CPU run keeps the default memory layout, so channels_last was not measured."
        return (f"Fastest on {self.device}: {fastest.precision.label}{layout}, batch "
                f"{fastest.batch_size} ({fastest.images_per_second:,.1f} images/s).{note}")


def probe_precisions(device: str) -> tuple[Precision, ...]:
    """float32, and on CUDA the card's mixed precision (float16 where the card's table says
    float32: measuring it is the point)."""
    if not device.startswith("cuda"):
        return (FLOAT32,)
    card = CardInfo.of_device(device)
    mixed = precision_for_card(card.capability, card.name, amp=True)
    return (FLOAT32, mixed if mixed.autocast else FLOAT16)


def probe_layouts(device: str) -> tuple[bool, ...]:
    """channels_last off and on where a run would use the setting, else the default only."""
    return (False, True) if channels_last_applies(device) else (False,)


def step_counts(device: str, steps: int | None = None) -> tuple[int, int]:
    """(untimed warm-up steps, timed steps) of each row on ``device``: ``steps`` timed when
    given (not 0), else the device's own counts."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    return WARMUP_STEPS[kind], steps or TIMED_STEPS[kind]


def default_batch_sizes(config: TrainConfig) -> tuple[int, ...]:
    """The configured batch and twice it: a larger batch is often faster per image."""
    return (config.batch_size, 2 * config.batch_size)


def probe_speed(
    config: TrainConfig,
    batch_sizes: tuple[int, ...] | None = None,
    steps: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_row: Callable[[ProbeRow], None] | None = None,
) -> SpeedProbeResult:
    """Time real training steps of ``config``'s model on its own images, per combination.

    Args:
        config: the run's settings (data_root, model, finetune, crops, optimiser, device).
        batch_sizes: the batches tried; :func:`default_batch_sizes` when None.
        steps: timed steps per row (after warm-up); 5 on CUDA, 2 on the CPU when None.
        should_stop: asked before every row; True ends the probe with ``cancelled`` set.
        on_row: called with each row as soon as it is measured.

    Raises:
        DeviceError: the config's device does not exist.
        DatasetError: the data folder cannot be read.
    """
    device = resolve_device(config.device)
    warmup, timed = step_counts(device, steps)
    batch_sizes = tuple(sorted(set(batch_sizes or default_batch_sizes(config))))
    images, labels, num_classes, preparer_args = _sample_batch(config, device, max(batch_sizes))
    rows: list[ProbeRow] = []
    for precision in probe_precisions(device):
        for channels_last in probe_layouts(device):
            for batch in batch_sizes:
                if should_stop is not None and should_stop():
                    return SpeedProbeResult(device, tuple(rows), cancelled=True)
                row = _measure(config, device, num_classes, preparer_args, precision,
                               channels_last, images[:batch], labels[:batch], warmup, timed)
                rows.append(row)
                if on_row is not None:
                    on_row(row)
    return SpeedProbeResult(device, tuple(rows))


def _sample_batch(config: TrainConfig, device: str, count: int) -> tuple[Any, ...]:
    """``count`` uint8 training samples of the user's data, as the run's transforms make them
    (repeating the dataset when it is smaller), their labels, the class count and the
    normalisation."""
    scan = scan_dataset(config.data_root, config.val_fraction, config.seed)
    pipeline = build_data_pipeline(config.replace(workers=0), scan, device)
    dataset = pipeline.train_loader.dataset
    samples = [dataset[i % len(dataset)] for i in range(count)]
    images = torch.stack([image for image, _ in samples])
    labels = torch.tensor([max(label, 0) for _, label in samples])
    return images, labels, len(scan.class_names), (pipeline.mean, pipeline.std)


def _measure(config: TrainConfig, device: str, num_classes: int,
             normalisation: tuple[Any, Any], precision: Precision, channels_last: bool,
             images: torch.Tensor, labels: torch.Tensor, warmup: int, steps: int) -> ProbeRow:
    """One row: a fresh model in this layout, ``warmup`` then ``steps`` timed steps."""
    batch = len(labels)
    error = ""
    try:
        seconds, peak = _timed_steps(config, device, num_classes, normalisation, precision,
                                     channels_last, images, labels, warmup, steps)
    except torch.OutOfMemoryError:
        error = "out of memory"
    if error or device.startswith("cuda"):
        # Outside the except block the failed step's tensors are gone; the next row starts
        # from the same free memory as this one did.
        free_device_memory(device)
    if error:
        return ProbeRow(precision, channels_last, batch, error=error)
    return ProbeRow(precision, channels_last, batch, batch * steps / seconds, peak)


def _timed_steps(config: TrainConfig, device: str, num_classes: int,
                 normalisation: tuple[Any, Any], precision: Precision, channels_last: bool,
                 images: torch.Tensor, labels: torch.Tensor, warmup: int,
                 steps: int) -> tuple[float, int | None]:
    on_cuda = device.startswith("cuda")
    model = build_model(config.replace(weights="none", weights_file=""), num_classes).to(device)
    if channels_last:
        model.to(memory_format=torch.channels_last)
    optimizer = build_optimizer(config, apply_finetune_mode(model, config.finetune))
    set_train_mode(model, config.finetune)
    scaler = torch.amp.GradScaler("cuda", enabled=precision.grad_scaler)
    preparer = BatchPreparer(*normalisation, device, channels_last)
    if on_cuda:
        images = images.pin_memory()
        torch.cuda.reset_peak_memory_stats(device)

    def step() -> None:
        inputs, targets = preparer(images, labels)
        with torch.autocast(device.split(":")[0], dtype=precision.dtype,
                            enabled=precision.autocast):
            logits = model(inputs)
        loss, _ = multicrop_loss(logits.float(), targets, config.crops_per_sample,
                                 config.crop_strategy)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    for _ in range(warmup):
        step()
    if on_cuda:
        torch.cuda.synchronize(device)
    started = time.perf_counter()
    for _ in range(steps):
        step()
    if on_cuda:
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    peak = int(torch.cuda.max_memory_allocated(device)) if on_cuda else None
    return seconds, peak
