"""What limits a run's speed: the input pipeline or the model's compute, and what to change.

Every step event separates the seconds spent waiting for the next batch from the seconds spent
on the device. When the wait is a large share the GPU idles while the CPU decodes and crops
(the overnight epoch of batch 4 with per-crop Python transforms); more compute only helps when
the input keeps up. The first steps of every epoch are left out: loader processes start, caches
fill and cuDNN picks its kernels there.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import StepStats
from workbench.core.runs.model_defaults import native_crop_size

WARMUP_STEPS = 2
"""Steps at the start of every epoch that are left out (loader start-up, cuDNN autotuning)."""
STEADY_SPEED = f"once warmed up: each epoch's first {WARMUP_STEPS} steps left out"
"""Said beside the diagnosis's speed wherever it is shown: an epoch's own figure (its images
over its seconds) counts those first steps too, and can be far lower."""
INPUT_BOUND_SHARE = 0.30
"""At or above this share of each step spent waiting for data the run is input-bound."""
COMPUTE_BOUND_SHARE = 0.10
"""At or below this share the device is busy almost all the time: compute-bound."""
MEMORY_HEADROOM_SHARE = 0.60
"""A GPU using less than this share of its memory has room for a larger batch."""

INPUT_BOUND = "input-bound"
COMPUTE_BOUND = "compute-bound"
BALANCED = "balanced"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Diagnosis:
    """What limits the run. ``advice`` lists the changes most likely to help, best first.

    ``images_per_second`` is the measured steps' images over their seconds (waiting plus
    computing): the one speed figure to show beside the diagnosis.
    """

    kind: str
    data_wait_share: float
    images_per_second: float
    steps: int
    device: str
    advice: tuple[str, ...]

    @property
    def sentence(self) -> str:
        """One plain line, e.g. 'Input-bound: the GPU waits 62% of the time for data. Try: ...'."""
        if self.kind == UNKNOWN:
            return "Not enough steps yet to tell what limits the speed."
        who = "GPU" if self.device.startswith("cuda") else "CPU"
        wait = f"{100 * self.data_wait_share:.0f}%"
        if self.kind == INPUT_BOUND:
            text = f"Input-bound: the {who} waits {wait} of the time for data."
        elif self.kind == COMPUTE_BOUND:
            text = (f"Compute-bound: the {who} computes {100 - round(100 * self.data_wait_share)}"
                    f"% of the time ({self.images_per_second:,.0f} images/s {STEADY_SPEED}); "
                    "the input keeps up.")
        else:
            text = f"Balanced: the {who} waits {wait} of the time for data."
        if self.advice:
            text += " Try: " + "; ".join(self.advice) + "."
        return text


def diagnose(
    steps: Sequence[StepStats],
    config: TrainConfig | None = None,
    device: str = "",
    cpu_count: int | None = None,
    images_on_device: bool = False,
) -> Diagnosis:
    """Classify the run from its step events.

    Args:
        steps: step events, in order; the first ``WARMUP_STEPS`` of every epoch are ignored
            (unless nothing else is left).
        config: the run's settings, for advice that names them (workers, caches, sizes);
            without it the advice is generic.
        device: the device the run trains on ('cpu', 'cuda:0'); GPU memory figures in the
            steps also mark a GPU run.
        cpu_count: CPUs available to loader processes; ``os.cpu_count()`` when None.
        images_on_device: the run keeps its images on the device (``RunStart``), so loader
            settings do not matter.

    Returns:
        A :class:`Diagnosis`; kind ``unknown`` when there are no steps.
    """
    measured = [s for s in steps if s.step > WARMUP_STEPS] or list(steps)
    if not measured:
        return Diagnosis(UNKNOWN, 0.0, 0.0, 0, device, ())
    wait = sum(s.data_wait_s for s in measured)
    total = wait + sum(s.compute_s for s in measured)
    share = wait / total if total > 0 else 0.0
    on_gpu = device.startswith("cuda") or measured[-1].memory_total is not None
    device = device or ("cuda" if on_gpu else "cpu")
    cpus = cpu_count or os.cpu_count() or 1
    if share >= INPUT_BOUND_SHARE:
        kind, advice = INPUT_BOUND, _input_advice(config, cpus, images_on_device, on_gpu)
    elif share <= COMPUTE_BOUND_SHARE:
        kind, advice = COMPUTE_BOUND, _compute_advice(config, measured, on_gpu)
    else:
        kind = BALANCED
        advice = _input_advice(config, cpus, images_on_device, on_gpu)[:1]
    return Diagnosis(kind, share, _images_per_second(measured, total), len(measured), device,
                     tuple(advice))


def _images_per_second(steps: Sequence[StepStats], seconds: float) -> float:
    """Images over seconds of ``steps``: slow steps weigh by their time, as they do in the
    epoch (a mean of per-step rates would let a few fast steps hide the waits). Logs written
    before steps recorded their image count fall back to the mean of the steps' rates."""
    images = sum(s.images for s in steps)
    if images and all(s.images for s in steps) and seconds > 0:
        return images / seconds
    return sum(s.images_per_second for s in steps) / len(steps)


def _input_advice(config: TrainConfig | None, cpus: int, images_on_device: bool,
                  on_gpu: bool) -> list[str]:
    if images_on_device:
        return _images_on_device_advice(config, on_gpu)
    if config is None:
        return ["more loader workers", "the image cache (cache_images)",
                "a smaller resize_size"]
    advice = []
    if config.workers < cpus - 1:
        advice.append(f"more loader workers (now {config.workers}; this machine has "
                      f"{cpus} CPUs)")
    if not config.cache_images:
        advice.append("enable the image cache (cache_images), so images are decoded once")
    if config.finetune == "last_layer" and not config.cache_features:
        advice.append("enable the feature cache (cache_features): last-layer epochs then "
                      "train the head on stored features")
    if config.resize_size > 2 * config.crop_size:
        advice.append(f"a smaller resize_size (now {config.resize_size} for "
                      f"{config.crop_size}-pixel crops) decodes and resizes less")
    if not advice:
        advice.append("a faster disk or smaller image files: every setting that helps "
                      "loading is already on")
    return advice


def _images_on_device_advice(config: TrainConfig | None, on_gpu: bool) -> list[str]:
    """No loader: the wait is the batched crop on the device itself. Only what applies: a
    smaller crop while the crop is above the model's native size, a GPU when not on one."""
    advice = []
    native = native_crop_size(config.model) if config is not None else None
    if config is None or native is None or config.crop_size > native:
        now = "" if config is None else f" (now {config.crop_size}" + (
            f"; {config.model} is made for {native})" if native else ")")
        advice.append(f"a smaller crop_size{now}")
    if not on_gpu:
        advice.append("a CUDA GPU: the images already stay on the device and are cropped there")
    return advice


def _compute_advice(
    config: TrainConfig | None, steps: Sequence[StepStats], on_gpu: bool
) -> list[str]:
    advice = []
    if not on_gpu:
        advice.append("a CUDA GPU; on the CPU the model itself is the limit")
    if on_gpu and _memory_share(steps) < MEMORY_HEADROOM_SHARE:
        now = f" (now {config.batch_size})" if config is not None else ""
        advice.append(f"a larger batch{now}: the GPU uses {100 * _memory_share(steps):.0f}% "
                      "of its memory (workbench find-batch finds the largest that fits)")
    if config is not None and on_gpu and not config.amp:
        advice.append("mixed precision (amp)")
    if config is not None and on_gpu and not config.channels_last:
        advice.append("channels_last")
    if config is not None and config.finetune == "full" and config.weights != "none":
        # With random weights a frozen backbone learns next to nothing (RANDOM_FROZEN_BACKBONE).
        advice.append("finetune last_layer with the feature cache, if its accuracy is enough")
    return advice


def _memory_share(steps: Sequence[StepStats]) -> float:
    peaks = [s.memory_peak for s in steps if s.memory_peak is not None]
    total = steps[-1].memory_total
    if not peaks or not total:
        return 1.0  # unknown: do not suggest a larger batch
    return max(peaks) / total


class BottleneckMonitor:
    """Keeps the recent step events of a run and diagnoses them on request.

    Args:
        config: the run's settings (optional; see :func:`diagnose`).
        window: how many recent steps to judge; the run's current behaviour is what the user
            can act on.
    """

    def __init__(self, config: TrainConfig | None = None, window: int = 200) -> None:
        self.config = config
        self.device = ""
        self.images_on_device = False
        self._steps: deque[StepStats] = deque(maxlen=window)

    def add(self, step: StepStats) -> None:
        """Record one step event."""
        self._steps.append(step)

    def clear(self) -> None:
        """Forget every step (a new run starts)."""
        self._steps.clear()

    def diagnosis(self) -> Diagnosis:
        """The diagnosis of the recent steps."""
        return diagnose(self._steps, self.config, self.device,
                        images_on_device=self.images_on_device)
