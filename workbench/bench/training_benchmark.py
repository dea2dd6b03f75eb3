"""Training benchmarks, each side by side in one run: the engine against what it could reach.

1. End-to-end training through the engine with its defaults (small datasets kept on the
   device and cropped there in batches, otherwise loader processes; uint8 to the device,
   normalisation there, crops flattened, step events, metrics file) against the same model
   and optimiser stepping on synthetic tensors already on the device, with the same batch and
   the same torch threads: how much the input pipeline and the bookkeeping cost. Measured for
   ResNet18 five-crop and for the digits CNN, where a CPU model step is short enough for the
   loader to be the bottleneck; the digits CNN is measured once more through loader
   processes, without a target, to show what keeping its images on the device buys. The
   model-only steps are timed between the engine's epochs and each epoch is
   compared with the measurements around it, so drift in machine load hits both sides
   alike; the median of those comparisons is reported. Target >= 0.90x. MobileNetV3-small
   and EfficientNet-B0 run ResNet18's workload and are held to the same target: their
   depthwise convolutions make a step cheaper or dearer than ResNet18's, so the input
   pipeline's share of it changes with the model.
2. A last-layer epoch on cached frozen-backbone features against the same epoch recomputing
   the backbone for every batch. Target >= 50x faster.
3. On CUDA only: absolute images/s, peak memory and the batch-size finder's result, and the
   model-only steps with mixed precision and channels_last, each alone and together, against
   float32 in the default layout, so the defaults (both on) are kept only where they gain.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from workbench.bench.report import BenchRow, info_row, ratio_row
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.multicrop import multicrop_loss
from workbench.core.devices.selection import resolve_device
from workbench.core.models.building import apply_finetune_mode, build_model
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback, EpochEnd, RunStart, StepStats
from workbench.core.training.engine import train
from workbench.core.training.optimisers import build_optimizer
from workbench.core.training.precision import resolve_precision

TARGET_END_TO_END = 0.90
TARGET_FEATURE_CACHE = 50.0


@dataclass(frozen=True)
class Workload:
    """A dataset on disk and the run settings trained on it."""

    name: str
    model: str
    crop_mode: str
    image_size: tuple[int, int]
    image_format: str
    per_class: int
    resize: int
    crop: int
    batch: int
    epochs: int = 3

    def describe(self) -> str:
        crops = {"five_crop": "five crops", "standard": "random crops"}[self.crop_mode]
        return (f"{self.model}, {4 * self.per_class} {self.image_format} "
                f"{self.image_size[0]}x{self.image_size[1]}, resize {self.resize}, {crops} of "
                f"{self.crop}, batch {self.batch}")


# Models measured on ResNet18's workload, beside it.
SAME_WORKLOAD_MODELS = ("mobilenet_v3_small", "efficientnet_b0")


def _with_models_like_the_first(*workloads: Workload) -> tuple[Workload, ...]:
    """The first workload, then the same with each of ``SAME_WORKLOAD_MODELS``, then the
    rest (the feature-cache row uses the first, the loader-processes row the last)."""
    first = workloads[0]
    alike = tuple(replace(first, name=model, model=model) for model in SAME_WORKLOAD_MODELS)
    return (first, *alike, *workloads[1:])


CPU_WORKLOADS = _with_models_like_the_first(
    Workload("resnet18", "resnet18", "five_crop", (320, 240), "JPEG", 16, 128, 112, 8,
             epochs=4),
    Workload("digits CNN", "small_cnn", "standard", (32, 32), "PNG", 512, 32, 28, 64,
             epochs=4),
)
CUDA_WORKLOADS = _with_models_like_the_first(
    Workload("resnet18", "resnet18", "five_crop", (400, 300), "JPEG", 128, 256, 224, 32),
    Workload("digits CNN", "small_cnn", "standard", (32, 32), "PNG", 512, 32, 28, 256),
)
QUICK_WORKLOADS = (
    Workload("resnet18", "resnet18", "five_crop", (48, 40), "JPEG", 2, 32, 28, 4, epochs=2),
    Workload("digits CNN", "small_cnn", "standard", (32, 32), "PNG", 8, 32, 28, 8, epochs=2),
)


class _Recorder(Callback):
    def __init__(self) -> None:
        self.steps: list[StepStats] = []
        self.epochs: list[EpochEnd] = []
        self.start: RunStart | None = None

    def on_run_start(self, event: RunStart) -> None:
        self.start = event

    def on_step(self, event: StepStats) -> None:
        self.steps.append(event)

    def on_epoch_end(self, event: EpochEnd) -> None:
        self.epochs.append(event)


def workload_config(work: Workload, data: Path, out: Path, device: str,
                    **changes: object) -> TrainConfig:
    """The engine settings of ``work``; ``changes`` override fields."""
    return TrainConfig(
        data_root=str(data), model=work.model, weights="none", finetune="full",
        crop_mode=work.crop_mode, crop_strategy="average_logits", resize_size=work.resize,
        crop_size=work.crop, batch_size=work.batch, epochs=work.epochs, optimizer="sgd",
        lr=0.01, scheduler="none", device=device, output_dir=str(out),
        cache_dir=str(out / "image-cache"), seed=0,
    ).replace(**changes)


def write_dataset(work: Workload, root: Path) -> Path:
    return write_shape_dataset(root, per_class=work.per_class, size=work.image_size,
                               layout="train_val", val_per_class=max(2, work.per_class // 8),
                               image_format=work.image_format)


class _ModelOnlyBetweenEpochs(_Recorder):
    """Records the run and, after every epoch, times the same number of optimiser steps of a
    second model on synthetic tensors: each engine epoch after the first is measured between
    two model-only measurements, in the same process and threads, so drift in machine load
    hits both sides alike."""

    def __init__(self, config: TrainConfig, steps: int) -> None:
        super().__init__()
        self.model_only = ModelOnlyTrainer(config)
        self.model_only_steps = steps
        self.model_only_seconds: list[float] = []

    def on_epoch_end(self, event: EpochEnd) -> None:
        super().on_epoch_end(event)
        # The engine calls this between epochs, when its loaders are idle.
        self.model_only_seconds.append(self.model_only.seconds(self.model_only_steps))


def engine_and_model_only(config: TrainConfig, steps: int) -> tuple[float, float, _Recorder]:
    """Images/s of the engine's training loop and of the model-only steps, as the median pair.

    Each engine epoch after the first (the first decodes and caches the images and warms up)
    is timed by its own wall time and paired with the mean of the model-only measurements
    just before and just after it; the pair with the median ratio is returned, so one burst
    of load from elsewhere on the machine does not decide the result.
    """
    recorder = _ModelOnlyBetweenEpochs(config, steps)
    end = train(config, recorder)
    if end.status != "completed":
        raise RuntimeError(f"engine run failed: {end.error}")
    model_only_rates = [steps * config.batch_size / s for s in recorder.model_only_seconds]
    pairs = []
    for index, epoch in enumerate(recorder.epochs[1:], start=1):
        engine_rate = epoch.images_per_second
        model_only_rate = (model_only_rates[index - 1] + model_only_rates[index]) / 2
        pairs.append((engine_rate / model_only_rate, engine_rate, model_only_rate))
    _, end_to_end, model_only = sorted(pairs)[(len(pairs) - 1) // 2]
    return end_to_end, model_only, recorder


class ModelOnlyTrainer:
    """The run's model and optimiser stepping on synthetic tensors already on the device."""

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        device = resolve_device(config.device)
        self.device_type = "cuda" if device.startswith("cuda") else "cpu"
        self.precision = resolve_precision(config.amp, config.amp_dtype, device)
        self.model = build_model(config, 4).to(device)
        channels_last = config.channels_last and device.startswith("cuda")
        if channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.optimizer = build_optimizer(config, apply_finetune_mode(self.model, config.finetune))
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.precision.grad_scaler)
        crops = config.crops_per_sample
        self.inputs = torch.randn(config.batch_size * crops, config.in_channels,
                                  config.crop_size, config.crop_size, device=device)
        if channels_last:
            self.inputs = self.inputs.contiguous(memory_format=torch.channels_last)
        self.labels = torch.randint(0, 4, (config.batch_size,), device=device)

    def seconds(self, steps: int) -> float:
        """Wall time of ``steps`` steps after one warm-up step that is not counted."""
        self.model.train()
        started = 0.0
        for step in range(steps + 1):
            if step == 1:
                started = time.perf_counter()
            self._step()
        return time.perf_counter() - started

    def _step(self) -> None:
        config = self.config
        with torch.autocast(self.device_type, dtype=self.precision.dtype,
                            enabled=self.precision.autocast):
            logits = self.model(self.inputs)
        loss, _ = multicrop_loss(logits.float(), self.labels, config.crops_per_sample,
                                 config.crop_strategy)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        loss.item()  # the engine reads every loss too; on CUDA this also waits for the step


def end_to_end_rows(work: Workload, root: Path, device: str,
                    images_on_device: bool = True) -> list[BenchRow]:
    """Engine vs model-only for one workload, with the engine's defaults (a small dataset
    stays on the device) or, for comparison, through loader processes without a target; on
    CUDA also the absolute figures."""
    data = write_dataset(work, root / "data")
    config = workload_config(work, data, root / "runs", device, run_name=work.model,
                             images_on_device=images_on_device)
    steps = -(-4 * work.per_class // work.batch)
    end_to_end, model_only, recorder = engine_and_model_only(config, steps)
    later = [s for s in recorder.steps if s.epoch > 1]
    wait = sum(s.data_wait_s for s in later) / max(1e-9, sum(s.data_wait_s + s.compute_s
                                                                for s in later))
    kept = recorder.start is not None and recorder.start.images_on_device
    what = f"end-to-end vs model-only, {work.name}"
    if not images_on_device:
        what += ", through loader processes"
    rows = [ratio_row(
        "training", what, end_to_end, model_only, "img/s",
        TARGET_END_TO_END if images_on_device else None, setting=work.describe(),
        images_on_device=kept, workers=0 if kept else config.workers,
        torch_threads=torch.get_num_threads(), device=resolve_device(device),
        data_wait_fraction=round(wait, 4), epochs=work.epochs, steps_per_epoch=steps,
        epoch_seconds=[e.epoch_seconds for e in recorder.epochs],
        model_only_seconds=recorder.model_only_seconds)]
    if resolve_device(device).startswith("cuda"):
        peak = max((s.memory_peak or 0) for s in recorder.steps)
        rows.append(info_row("training", f"{work.name} end-to-end images/s on CUDA", end_to_end,
                             "img/s", setting=work.describe()))
        rows.append(info_row("training", f"{work.name} peak memory on CUDA", peak / 1024**3,
                             "GiB", setting=work.describe()))
    return rows


def head_epoch_seconds(config: TrainConfig, cached: bool) -> float:
    """Median seconds of a last-layer epoch after the first, with or without cached features."""
    recorder = _Recorder()
    end = train(config.replace(finetune="last_layer", cache_features=cached, epochs=3,
                               run_name="cached" if cached else "recomputed"), recorder)
    if end.status != "completed":
        raise RuntimeError(f"engine run failed: {end.error}")
    return statistics.median(e.epoch_seconds for e in recorder.epochs[1:])


def feature_cache_row(work: Workload, root: Path, device: str) -> BenchRow:
    data = write_dataset(work, root / "data")
    config = workload_config(work, data, root / "runs", device)
    recomputed = head_epoch_seconds(config, cached=False)
    cached = head_epoch_seconds(config, cached=True)
    return ratio_row("training", "cached-feature head epoch vs recomputing frozen backbone",
                     cached, recomputed, "s", TARGET_FEATURE_CACHE, higher_is_better=False,
                     setting=work.describe())


# (amp, channels_last) variants compared with float32 in the default layout.
SPEED_VARIANTS = ((True, False), (False, True), (True, True))


def precision_layout_rows(work: Workload, device: str, steps: int = 20) -> list[BenchRow]:
    """Model-only images/s of ``work`` with AMP and/or channels_last vs neither, side by side;
    each variant is timed between two float32 measurements."""
    base = workload_config(work, Path("."), Path("."), device, amp=False, channels_last=False)
    plain = ModelOnlyTrainer(base)
    rows = []
    for amp, channels_last in SPEED_VARIANTS:
        variant = ModelOnlyTrainer(base.replace(amp=amp, channels_last=channels_last))
        before = plain.seconds(steps)
        seconds = variant.seconds(steps)
        after = plain.seconds(steps)
        images = steps * base.batch_size
        name = " + ".join(n for n, on in ((variant.precision.label, amp),
                                           ("channels_last", channels_last)) if on)
        rows.append(ratio_row("training", f"{work.name} model-only, {name} vs float32",
                              images / seconds, 2 * images / (before + after), "img/s", None,
                              setting=work.describe(), precision=variant.precision.label,
                              channels_last=channels_last))
    return rows


def batch_size_rows(work: Workload, device: str) -> list[BenchRow]:
    """CUDA only: what the batch-size finder recommends for ``work`` with AMP."""
    from workbench.core.training.tuning.batch_size_finder import find_batch_size

    config = workload_config(work, Path("."), Path("."), device, amp=True)
    result = find_batch_size(config, num_classes=4)
    peak = result.peak_memory.get(result.largest_fitting) or 0
    return [info_row("training", f"{work.name} largest batch that fits (AMP)",
                     result.largest_fitting, "samples", recommended=result.batch_size,
                     crops_per_sample=result.crops_per_sample, precision=result.precision,
                     peak_memory_gib=peak / 1024**3, description=result.describe())]


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """Every training row for ``device``."""
    on_cuda = resolve_device(device).startswith("cuda")
    workloads = QUICK_WORKLOADS if quick else CUDA_WORKLOADS if on_cuda else CPU_WORKLOADS
    rows: list[BenchRow] = []
    with tempfile.TemporaryDirectory(prefix="workbench-training-bench-") as tmp:
        for index, work in enumerate(workloads):
            rows += end_to_end_rows(work, Path(tmp) / f"end-to-end-{index}", device)
        # What keeping the images on the device buys where the loader is the bottleneck.
        rows += end_to_end_rows(workloads[-1], Path(tmp) / "through-loader", device,
                                images_on_device=False)[:1]
        rows.append(feature_cache_row(workloads[0], Path(tmp) / "feature-cache", device))
    if on_cuda:
        rows += batch_size_rows(workloads[0], device)
        for work in workloads:
            if work.model not in SAME_WORKLOAD_MODELS:  # within gpu-check's time budget
                rows += precision_layout_rows(work, device)
    return rows
