"""How fast a model trains on this machine, how much memory it takes, how quickly it answers.

The catalogue's figures (ImageNet accuracy, parameters, GFLOPS) say what a model is; they do
not say what it costs here. A measurement takes one model at one batch, crop, precision and
fine-tune mode on one device and times the run's own training step on a synthetic batch (the
batch finder's :class:`~workbench.core.training.tuning.batch_size_finder.TrainingStepProbe`: uint8
images normalised on the device, forward, loss, backward and optimiser step; with
``last_layer`` only the head learns, as in a run, so that is the speed the user gets): a few
untimed warm-up steps (cuDNN's autotuning and the allocator's growth happen there), then timed
steps. It also times batch-1 inference (the median of several runs, a uint8 image to logits)
and, on CUDA, reads the peak memory of the training steps and searches the largest batch that
fits (:func:`~workbench.core.training.tuning.batch_size_finder.find_batch_size`).

The CPU has no device memory to read and no memory limit to find (it swaps first), so those
figures are None there, never estimated. Every measurement is of one crop a sample
('standard' crop mode) and random weights: weights do not change speed or memory.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

import torch

from workbench.core.devices.memory import free_device_memory
from workbench.core.devices.selection import resolve_device
from workbench.core.models.building import set_train_mode
from workbench.core.runs.config import FINETUNE_MODES, MODELS, TrainConfig
from workbench.core.runs.model_catalog import unknown_model_message
from workbench.core.runs.model_defaults import defaults_for
from workbench.core.training.tuning.batch_size_finder import (
    BatchSizeResult,
    TrainingStepProbe,
    find_batch_size,
)

WARMUP_STEPS = {"cuda": 3, "cpu": 1}
TIMED_STEPS = {"cuda": 10, "cpu": 2}
LATENCY_RUNS = {"cuda": 20, "cpu": 5}
NUM_CLASSES = 10
"""Size of the head measured; a head of a few classes costs next to nothing either way."""
CPU_MEMORY_NOTE = "n/a on the CPU"
"""What the peak-memory and fit figures read on the CPU."""

StopCheck = Callable[[], bool]


@dataclass(frozen=True)
class MeasurementSettings:
    """What a measurement is of: one model at one batch, crop, precision and fine-tune mode on
    one device. Build it with :func:`measurement_settings`, which fills the model's defaults."""

    model: str
    batch_size: int
    crop_size: int
    amp: bool
    finetune: str
    device: str

    def config(self) -> TrainConfig:
        """The run config these settings train: the model's recipe (its optimiser) with random
        weights and one crop a sample."""
        return TrainConfig(model=self.model).replace(**defaults_for(self.model)).replace(
            weights="none", weights_file="", crop_mode="standard", batch_size=self.batch_size,
            crop_size=self.crop_size, resize_size=self.crop_size, amp=self.amp,
            finetune=self.finetune, device=self.device, workers=0)


def measurement_settings(model: str, batch_size: int = 0, crop_size: int = 0, amp: bool = True,
                         finetune: str = "", device: str = "auto") -> MeasurementSettings:
    """Settings for ``model``, its own batch, crop and fine-tune mode where 0 or '' is given;
    ``device`` resolved ('auto' is a GPU when there is one).

    Raises:
        ValueError: an unknown model or fine-tune mode, or a batch or crop below 1; the message
            names the setting.
        DeviceError: the device does not exist here.
    """
    if model not in MODELS:
        raise ValueError(f"model: {unknown_model_message(model)}")
    defaults = defaults_for(model)
    batch_size = batch_size or int(defaults.get("batch_size", 32))
    crop_size = crop_size or int(defaults.get("crop_size", 224))
    finetune = finetune or str(defaults.get("finetune", "full"))
    if batch_size < 1:
        raise ValueError(f"batch_size: must be at least 1 (got {batch_size})")
    if crop_size < 1:
        raise ValueError(f"crop_size: must be at least 1 px (got {crop_size})")
    if finetune not in FINETUNE_MODES:
        raise ValueError(f"finetune: '{finetune}' is not one of {', '.join(FINETUNE_MODES)}")
    return MeasurementSettings(model, batch_size, crop_size, bool(amp), finetune,
                               resolve_device(device))


@dataclass(frozen=True)
class ModelMeasurement:
    """One model measured on this machine.

    Attributes:
        settings: what was measured.
        device_name: the GPU's name, or the CPU's with its core count.
        precision: the precision the steps ran in, e.g. 'float32' or 'float16 (mixed)'.
        train_images_per_second: training images a second over the timed steps; None when the
            batch ran out of memory.
        peak_memory_bytes: the device's peak allocation over the training steps (CUDA only).
        latency_ms: the median time of batch-1 inference, in milliseconds.
        fits: whether the chosen batch trained without running out of memory (CUDA only).
        largest_batch: the largest batch that trains (CUDA only; None when not searched).
        largest_is_cap: the search stopped at its cap (1024) with that batch still fitting:
            the largest batch is at least that.
        timed_steps: how many steps were timed.
        host, torch_version, torchvision_version: the machine and the software measured on.
        measured_at: when, ISO 8601 in UTC.
        error: why a figure is missing ('out of memory at batch 512'), '' when none is.
    """

    settings: MeasurementSettings
    device_name: str
    precision: str
    train_images_per_second: float | None
    peak_memory_bytes: int | None
    latency_ms: float | None
    fits: bool | None
    largest_batch: int | None
    timed_steps: int
    host: str
    torch_version: str
    torchvision_version: str
    measured_at: str
    error: str = ""
    largest_is_cap: bool = False

    @property
    def on_gpu(self) -> bool:
        return self.settings.device.startswith("cuda")

    def to_json(self) -> dict:
        """Plain data for the measurement cache."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ModelMeasurement:
        """The inverse of ``to_json``.

        Raises:
            KeyError, TypeError, ValueError: ``data`` is not a measurement.
        """
        settings = MeasurementSettings(**data["settings"])
        names = {f.name for f in fields(cls)} - {"settings"}
        values = {name: data[name] for name in names if name in data}
        return cls(settings=settings, **values)


def machine_identity(device: str) -> dict[str, str]:
    """What a measurement depends on besides its settings: host, device name, torch and
    torchvision versions. ``device`` is a resolved device name."""
    import torchvision

    return {"host": platform.node() or "unknown host", "device_name": device_name(device),
            "torch_version": torch.__version__, "torchvision_version": torchvision.__version__}


def device_name(device: str) -> str:
    """'NVIDIA GeForce GTX 1650' for a GPU; 'CPU x86_64, 2 cores' for the CPU."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    kind = platform.processor() or platform.machine() or "unknown"
    return f"CPU {kind}, {os.cpu_count()} cores"


def step_counts(device: str, warmup: int | None = None, timed: int | None = None,
                runs: int | None = None) -> tuple[int, int, int]:
    """(warm-up steps, timed steps, latency runs): each one given, else ``device``'s own."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    return (WARMUP_STEPS[kind] if warmup is None else warmup,
            TIMED_STEPS[kind] if timed is None else timed,
            LATENCY_RUNS[kind] if runs is None else runs)


def searches_largest(device: str, find_largest: bool) -> bool:
    """Whether the largest batch that fits is searched: on a CUDA card, when asked."""
    return find_largest and device.startswith("cuda")


def memory_figures(device: str, error: str, found: BatchSizeResult | None
                   ) -> tuple[bool | None, int | None, bool]:
    """``fits``, ``largest_batch`` and ``largest_is_cap`` given the measurement's ``error`` and
    the largest-batch search (None if not searched): None, None, False on the CPU."""
    if not device.startswith("cuda"):
        return None, None, False
    if found is None:
        return not error, None, False
    return not error, found.largest_fitting, (found.largest_fitting > 0
                                              and found.first_failing is None)


def measure_model(
    settings: MeasurementSettings,
    warmup_steps: int | None = None,
    timed_steps: int | None = None,
    latency_runs: int | None = None,
    find_largest: bool = True,
    should_stop: StopCheck | None = None,
) -> ModelMeasurement | None:
    """Measure ``settings.model`` on ``settings.device``.

    Args:
        settings: from :func:`measurement_settings`.
        warmup_steps, timed_steps: untimed then timed training steps (3 and 10 on CUDA, 1 and 2
            on the CPU when None).
        latency_runs: batch-1 inferences whose median is the latency (20 on CUDA, 5 on the CPU).
        find_largest: on CUDA, also search the largest batch that fits (the slow part).
        should_stop: asked between steps; True ends the measurement, which returns None.

    Raises:
        ValueError: the model cannot take this crop (e.g. ViT-B/16 takes 224 px only).
    """
    device = settings.device
    warmup, timed, runs = step_counts(device, warmup_steps, timed_steps, latency_runs)
    stop = should_stop or (lambda: False)
    config = settings.config()
    probe: TrainingStepProbe | None = None
    speed = peak = latency = None
    error = ""
    try:
        probe = TrainingStepProbe(config, NUM_CLASSES, device, count_saved=False)
        precision = probe.precision.label
        timing = _time_training(probe, settings.batch_size, warmup, timed, stop)
        if timing is None:
            return None
        speed, peak = timing
        latency = _median_latency_ms(probe, runs, stop)
        if latency is None:
            return None
    except torch.OutOfMemoryError:
        error = f"out of memory at batch {settings.batch_size}"
    except (RuntimeError, AssertionError) as exc:
        # A model that cannot take the crop says so in its own words (ViT asserts its size).
        if settings.crop_size == defaults_for(settings.model).get("crop_size"):
            raise
        raise ValueError(_model_input_problem(settings, exc)) from exc
    if error:
        precision = probe.precision.label if probe is not None else ""
    probe = None  # the model, gradients and optimiser state go before memory is given back
    free_device_memory(device)
    found = None
    if searches_largest(device, find_largest):
        found = find_batch_size(config, NUM_CLASSES, should_stop=stop)
        if found.cancelled:
            return None
    fits, largest, capped = memory_figures(device, error, found)
    return ModelMeasurement(
        settings=settings, precision=precision, train_images_per_second=speed,
        peak_memory_bytes=peak, latency_ms=latency, fits=fits, largest_batch=largest,
        timed_steps=timed, measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        error=error, largest_is_cap=capped, **machine_identity(device))


def _time_training(probe: TrainingStepProbe, batch: int, warmup: int, timed: int,
                   stop: StopCheck) -> tuple[float, int | None] | None:
    """(images a second, peak bytes on CUDA) over ``timed`` steps after ``warmup``; None when
    stopped."""
    on_cuda = probe.device.startswith("cuda")
    images, labels = probe.synthetic_batch(batch)
    if on_cuda:
        images = images.pin_memory()  # as the run's loader hands batches over
        torch.cuda.reset_peak_memory_stats(probe.device)
    for _ in range(warmup):
        if stop():
            return None
        probe.train_step(images, labels)
    seconds = 0.0
    for _ in range(max(1, timed)):
        if stop():
            return None
        started = time.perf_counter()
        probe.train_step(images, labels)  # reads the loss: the step has finished on the device
        seconds += time.perf_counter() - started
    peak = int(torch.cuda.max_memory_allocated(probe.device)) if on_cuda else None
    probe.release()
    return batch * max(1, timed) / seconds, peak


def _median_latency_ms(probe: TrainingStepProbe, runs: int, stop: StopCheck) -> float | None:
    """Median milliseconds of one uint8 image to logits, in eval mode, under the run's
    precision; None when stopped."""
    image, label = probe.synthetic_batch(1)
    model, device = probe.model, probe.device
    model.eval()
    times = []
    try:
        with torch.inference_mode():
            for index in range(max(1, runs) + 1):  # the first run is a warm-up
                if stop():
                    return None
                started = time.perf_counter()
                inputs, _ = probe.preparer(image, label)
                with torch.autocast(device.split(":")[0], dtype=probe.precision.dtype,
                                    enabled=probe.precision.autocast):
                    logits = model(inputs)
                logits.float().cpu()  # waits for the device
                if index:
                    times.append(time.perf_counter() - started)
    finally:
        set_train_mode(model, probe.config.finetune)
    return 1000.0 * statistics.median(times)


def _model_input_problem(settings: MeasurementSettings, exc: RuntimeError) -> str:
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (f"crop_size: {settings.model} cannot train on {settings.crop_size} px crops "
            f"({detail}); choose its own crop (0) or a larger one")
