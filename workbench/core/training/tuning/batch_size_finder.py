"""The largest batch that trains on a device: real steps at growing batches until memory runs out.

The search doubles the batch (1, 2, 4, ...) until a step runs out of memory or ``max_batch`` is
reached, then bisects between the last batch that fitted and the first that did not. Every try
is the run's own work: the configured model, fine-tune mode, precision and crops (a five-crop
batch of B samples is 5B images), uint8 pixels normalised on the device, forward, backward and
optimiser step, twice, so gradients and optimiser state are held while the next forward runs.

The batch recommended is ``margin`` (90%) of the largest that fitted, rounded down: the
allocator fragments over a long run, cuDNN may pick kernels with larger workspaces, and the last
batch of an epoch or a validation pass must not be what tips a run over.

A CPU has no memory limit to find: it shares its memory with the rest of the system and swaps
long before an out-of-memory error, so a search there would only stop at its own cap and report
that as a limit. On the CPU the search therefore runs nothing and says so (``no_memory_limit``),
unless a simulated ``memory_limit_bytes`` is given: then the tensors each step keeps for backward
are counted as they are saved, and a step that would keep more raises
``torch.OutOfMemoryError`` as a GPU would. Tests use that to simulate a smaller GPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.multicrop import multicrop_loss
from workbench.core.devices.memory import free_device_memory
from workbench.core.devices.selection import resolve_device
from workbench.core.models.building import apply_finetune_mode, build_model, set_train_mode
from workbench.core.runs.config import TrainConfig
from workbench.core.training.optimisers import build_optimizer
from workbench.core.training.precision import resolve_precision

MARGIN = 0.9
"""Share of the largest fitting batch that is recommended."""
STEPS_PER_TRY = 2
DEFAULT_MAX_BATCH = {"cuda": 1024, "cpu": 64}

StepRunner = Callable[[int], "int | None"]
"""Runs training steps at a batch of that many samples; returns the peak bytes (None if
unknown) or raises ``torch.OutOfMemoryError``."""


@dataclass(frozen=True)
class BatchSizeResult:
    """What the search found. ``batch_size`` is the recommendation (0 when nothing fits)."""

    batch_size: int
    largest_fitting: int
    first_failing: int | None
    peak_memory: dict[int, int | None] = field(default_factory=dict)
    tried: tuple[int, ...] = ()
    device: str = "cpu"
    precision: str = "float32"
    crops_per_sample: int = 1
    max_batch: int = 0
    margin: float = MARGIN
    cancelled: bool = False
    no_memory_limit: bool = False

    def describe(self) -> str:
        """One paragraph for the terminal or the window."""
        if self.cancelled:
            return "The batch size search was stopped."
        if self.no_memory_limit:
            return (f"There is no memory limit to find on the CPU ({self.device}): it shares its "
                    "memory with the rest of the system and swaps before it runs out, so a "
                    "search would only find its own cap. Batch size left unchanged; choose it "
                    "for speed, or search on a CUDA GPU.")
        images = f" ({self.crops_per_sample} crops each)" if self.crops_per_sample > 1 else ""
        where = f"{self.device}, {self.precision}"
        if self.largest_fitting == 0:
            return (f"Even a batch of 1 sample{images} does not fit on {where}; lower crop_size, "
                    "turn on amp or choose finetune last_layer.")
        limit = (f"{self.first_failing} did not" if self.first_failing is not None
                 else f"the search stopped at max_batch {self.max_batch}")
        peak = self.peak_memory.get(self.largest_fitting)
        peak_text = f", {peak_memory_text(peak, self.device)}" if peak else ""
        return (f"Largest batch that fits on {where}: {self.largest_fitting} samples{images}"
                f"{peak_text}; {limit}. Recommended batch_size {self.batch_size} "
                f"({100 * self.margin:.0f}% of it, headroom for a long run).")


def peak_memory_text(peak: int, device: str) -> str:
    """'peak 3.21 GiB' on CUDA; on the CPU the figure is what a step keeps for backward."""
    amount = f"{peak / 1024**3:.2f} GiB" if peak >= 1024**3 else f"{peak / 1024**2:.1f} MiB"
    return f"peak {amount}" if device.startswith("cuda") else f"{amount} kept for backward"


class _SavedTensorMeter:
    """Counts the bytes of tensors autograd saves for backward, each storage once.

    Parameters are left out: they exist whatever the batch. Past ``limit`` bytes it raises
    ``torch.OutOfMemoryError`` where the allocation would have happened.
    """

    def __init__(self, limit: int | None, parameters: list[nn.Parameter]) -> None:
        self.limit = limit
        self.bytes = 0
        self._seen: set[int] = set()
        self._parameters = {p.untyped_storage().data_ptr() for p in parameters}

    def reset(self) -> None:
        self.bytes = 0
        self._seen.clear()

    def add(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
        if pointer not in self._seen and pointer not in self._parameters:
            self._seen.add(pointer)
            self.bytes += storage.nbytes()
            if self.limit is not None and self.bytes > self.limit:
                raise torch.OutOfMemoryError(
                    f"simulated: a step would keep {self.bytes:,} bytes, over the "
                    f"{self.limit:,}-byte limit")
        return tensor


class TrainingStepProbe:
    """Trains the configured model on synthetic batches of any size, as a run would.

    Args:
        config: uses model, finetune, crops, crop_size, channels_last, optimiser and amp fields.
        num_classes: size of the head.
        device: a resolved device name.
        memory_limit_bytes: the simulated limit of :class:`_SavedTensorMeter`; None for none.
        count_saved: False steps without counting the tensors kept for backward (no hook per
            saved tensor: a timed step is then exactly the run's step); the CPU peak
            ``__call__`` returns is then 0.
    """

    def __init__(self, config: TrainConfig, num_classes: int, device: str,
                 memory_limit_bytes: int | None = None, count_saved: bool = True) -> None:
        self.config = config
        self.device = device
        self.num_classes = num_classes
        self.crops = config.crops_per_sample
        self.precision = resolve_precision(config.amp, config.amp_dtype, device)
        on_cuda = device.startswith("cuda")
        # Weights do not change memory; 'none' needs no download or file.
        self.model = build_model(config.replace(weights="none", weights_file=""), num_classes)
        self.model.to(device)
        channels_last = config.channels_last and on_cuda
        if channels_last:
            self.model.to(memory_format=torch.channels_last)
        self.optimizer = build_optimizer(config, apply_finetune_mode(self.model, config.finetune))
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.precision.grad_scaler)
        channels = config.in_channels
        self.preparer = BatchPreparer((0.5,) * channels, (0.25,) * channels, device,
                                      channels_last)
        self.meter = _SavedTensorMeter(memory_limit_bytes, list(self.model.parameters())) \
            if count_saved or memory_limit_bytes is not None else None
        set_train_mode(self.model, config.finetune)

    def __call__(self, batch: int) -> int | None:
        """Run ``STEPS_PER_TRY`` steps at ``batch`` samples; the peak bytes of the device (CUDA)
        or of the tensors kept for backward (CPU)."""
        images, labels = self.synthetic_batch(batch)
        on_cuda = self.device.startswith("cuda")
        if on_cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        peak = 0
        for _ in range(STEPS_PER_TRY):
            self.train_step(images, labels)
            peak = max(peak, self.meter.bytes if self.meter is not None else 0)
        if on_cuda:
            torch.cuda.synchronize(self.device)
            return int(torch.cuda.max_memory_allocated(self.device))
        return peak

    def synthetic_batch(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Random uint8 images of ``batch`` samples (each ``crops`` crops of the configured
        size and channels), on the host as a loader yields them, and random labels."""
        size = self.config.crop_size
        shape = (batch, self.crops) if self.crops > 1 else (batch,)
        images = torch.randint(0, 256, (*shape, self.config.in_channels, size, size),
                               dtype=torch.uint8)
        labels = torch.randint(0, self.num_classes, (batch,))
        return images, labels

    def train_step(self, images: torch.Tensor, labels: torch.Tensor) -> float:
        """One training step as the engine takes it: to the device and normalised there,
        forward under the run's precision, loss over the crops, backward, optimiser step.
        Returns the loss (reading it waits for the device)."""
        # The order of the engine's step: the previous gradients live through this forward.
        meter = self.meter
        if meter is not None:
            meter.reset()
        inputs, targets = self.preparer(images, labels)
        hooks = (torch.autograd.graph.saved_tensors_hooks(meter.add, _unpack)
                 if meter is not None else contextlib.nullcontext())
        if meter is not None:
            meter.add(inputs)
        with hooks:
            with torch.autocast(self.device.split(":")[0], dtype=self.precision.dtype,
                                enabled=self.precision.autocast):
                logits = self.model(inputs)
            loss, _ = multicrop_loss(logits.float(), targets, self.crops,
                                     self.config.crop_strategy)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.item()

    def release(self) -> None:
        """Drop gradients (the optimiser state stays: a run holds it too)."""
        self.optimizer.zero_grad(set_to_none=True)


def _unpack(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def find_batch_size(
    config: TrainConfig,
    num_classes: int = 10,
    max_batch: int | None = None,
    margin: float = MARGIN,
    memory_limit_bytes: int | None = None,
    step_runner: StepRunner | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_try: Callable[[int, bool, int | None], None] | None = None,
) -> BatchSizeResult:
    """Find the largest batch of ``config``'s training that fits on its device.

    Args:
        config: the run's settings; ``device`` is resolved ('auto' becomes a GPU if present).
        num_classes: size of the classifier head.
        max_batch: the largest batch tried (1024 on CUDA, 64 on the CPU when None).
        margin: share of the largest fitting batch that is recommended, in (0, 1].
        memory_limit_bytes: a simulated memory limit (see the module docstring). On the CPU
            without one (and without ``step_runner``) nothing is tried and the result has
            ``no_memory_limit`` set and ``batch_size`` 0.
        step_runner: runs the steps of one try; a :class:`TrainingStepProbe` when None.
        should_stop: asked before every try; True ends the search with ``cancelled`` set.
        on_try: called after every try with ``(batch, fitted, peak_bytes)``.

    Raises:
        ValueError: ``max_batch`` below 1 or ``margin`` outside (0, 1].
        DeviceError: the config's device does not exist.
    """
    device = resolve_device(config.device)
    if max_batch is None:
        max_batch = DEFAULT_MAX_BATCH["cuda" if device.startswith("cuda") else "cpu"]
    if max_batch < 1:
        raise ValueError(f"max_batch must be at least 1 (got {max_batch})")
    if not 0.0 < margin <= 1.0:
        raise ValueError(f"margin must be in (0, 1] (got {margin})")
    precision = resolve_precision(config.amp, config.amp_dtype, device).label
    if step_runner is None and memory_limit_bytes is None and not device.startswith("cuda"):
        return BatchSizeResult(batch_size=0, largest_fitting=0, first_failing=None,
                               device=device, precision=precision,
                               crops_per_sample=config.crops_per_sample, max_batch=max_batch,
                               margin=margin, no_memory_limit=True)
    if step_runner is None:
        step_runner = TrainingStepProbe(config, num_classes, device, memory_limit_bytes)
    peaks: dict[int, int | None] = {}
    largest, failing, tried, cancelled = _search(
        _batch_tester(step_runner, device, peaks, on_try), max_batch, should_stop)
    step_runner = None  # the probe's model and optimiser state go before memory is given back
    free_device_memory(device)
    return BatchSizeResult(
        batch_size=max(1, int(largest * margin)) if largest else 0,
        largest_fitting=largest, first_failing=failing, peak_memory=peaks, tried=tried,
        device=device, precision=precision, crops_per_sample=config.crops_per_sample,
        max_batch=max_batch, margin=margin, cancelled=cancelled,
    )


def _batch_tester(
    runner: StepRunner, device: str, peaks: dict[int, int | None],
    on_try: Callable[[int, bool, int | None], None] | None,
) -> Callable[[int], bool]:
    """``fits(batch)``: one try, its peak recorded in ``peaks`` and reported to ``on_try``."""

    def fits(batch: int) -> bool:
        fitted, peak = _try_batch(runner, batch, device)
        if fitted:
            peaks[batch] = peak
        if on_try is not None:
            on_try(batch, fitted, peak)
        return fitted

    return fits


def _try_batch(runner: StepRunner, batch: int, device: str) -> tuple[bool, int | None]:
    out_of_memory = False
    try:
        peak = runner(batch)
    except torch.OutOfMemoryError:
        out_of_memory = True
    if not out_of_memory:
        return True, peak
    # Outside the except block the traceback, and the tensors its frames hold, are gone.
    release = getattr(runner, "release", None)
    if callable(release):
        release()
    free_device_memory(device)
    return False, None


def _search(
    fits: Callable[[int], bool], max_batch: int, should_stop: Callable[[], bool] | None
) -> tuple[int, int | None, tuple[int, ...], bool]:
    """Doubling then bisection; (largest fitting, first failing, batches tried, cancelled)."""
    tried: list[int] = []
    largest, failing = 0, None

    def attempt(batch: int) -> bool | None:
        if should_stop is not None and should_stop():
            return None
        tried.append(batch)
        return fits(batch)

    batch = 1
    while True:
        outcome = attempt(batch)
        if outcome is None:
            return largest, failing, tuple(tried), True
        if not outcome:
            failing = batch
            break
        largest = batch
        if batch == max_batch:
            break
        batch = min(batch * 2, max_batch)
    while failing is not None and failing - largest > 1:
        middle = (largest + failing) // 2
        outcome = attempt(middle)
        if outcome is None:
            return largest, failing, tuple(tried), True
        if outcome:
            largest = middle
        else:
            failing = middle
    return largest, failing, tuple(tried), False
