"""One epoch of training and one pass of evaluation, in the shape of torchvision's reference loop.

Both work on images from a loader or on cached frozen-backbone features; either way every step
reports a ``StepStats`` event with the time spent waiting for data separated from compute.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn

from workbench.core.data.augmentation.mixing import BatchMixer, soft_target_loss
from workbench.core.data.multicrop import IGNORE_LABEL, count_correct, multicrop_loss
from workbench.core.devices.gpu_monitor import GpuMonitor
from workbench.core.devices.memory import free_device_memory, memory_stats
from workbench.core.devices.throttle_detector import ThrottleWatch, ThroughputSample
from workbench.core.models.prediction_records import PredictionCollector
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback, Message, StepStats
from workbench.core.training.faults import TrainingOutOfMemory, first_line
from workbench.core.training.metrics import ConfusionMatrix, SmoothedValue

Batch = tuple[torch.Tensor, torch.Tensor]


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the run stops before that update touches the weights."""


@dataclass
class StepContext:
    """Everything a step needs besides the batch. ``global_step`` advances across epochs."""

    model: nn.Module
    device: str
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    amp: bool
    crops: int
    strategy: str
    class_weights: torch.Tensor | None
    callback: Callback
    control: RunControl
    gpu_monitor: GpuMonitor
    epoch: int = 0
    max_steps: int = 0
    global_step: int = 0
    step: int = 0
    amp_dtype: torch.dtype = torch.float16
    # Told how many samples of a batch failed to decode (label -1); may stop the run by raising.
    on_failed_samples: Callable[[int], None] | None = None
    # Sets images/s against the GPU's throttle reasons; the log says when throttling starts.
    throttle_watch: ThrottleWatch = field(default_factory=ThrottleWatch)
    # Called after every optimiser step: a learning-rate schedule stepped every batch.
    after_step: Callable[[], None] | None = None
    # The lr the newest step trained at (read before ``after_step`` moves it on).
    last_lr: float = math.nan
    # The training loss only: validation stays plain cross-entropy, comparable between runs.
    label_smoothing: float = 0.0
    # Mixup/CutMix of each prepared training image batch (never of cached features).
    mixer: BatchMixer | None = None
    # Training batches of a single image skipped so far (``skips_single_image_batch``).
    single_image_batches_skipped: int = 0

    @property
    def device_type(self) -> str:
        return "cuda" if self.device.startswith("cuda") else "cpu"

    def autocast(self) -> torch.autocast:
        return torch.autocast(self.device_type, dtype=self.amp_dtype, enabled=self.amp)


@dataclass
class EpochResult:
    loss: float
    accuracy: float
    samples: int
    seconds: float
    cancelled: bool
    steps: int
    # The sums behind the two averages, so processes under torchrun can combine theirs exactly.
    loss_total: float = 0.0
    loss_count: int = 0
    accuracy_total: float = 0.0
    accuracy_count: int = 0


@dataclass
class EvalResult:
    loss: float
    accuracy: float
    confusion: ConfusionMatrix
    samples: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    # Every image's probabilities and loss, when the caller asked for them.
    predictions: PredictionCollector | None = None


def run_training_steps(
    ctx: StepContext,
    batches: Iterator[Batch],
    steps_in_epoch: int,
    forward: Callable[[torch.Tensor], torch.Tensor],
    prepare: Callable[[torch.Tensor, torch.Tensor], Batch],
) -> EpochResult:
    """The shared step loop: fetch, prepare on the device, forward, backward, report."""
    loss_meter, acc_meter = SmoothedValue(), SmoothedValue()
    speed = SmoothedValue(window=10)
    samples = steps = largest_batch = 0
    started = time.perf_counter()
    limit = min(steps_in_epoch, ctx.max_steps) if ctx.max_steps else steps_in_epoch
    for step in range(limit):
        if not ctx.control.wait_while_paused():
            return _epoch_result(loss_meter, acc_meter, samples, started, True, steps)
        fetch_started = time.perf_counter()
        try:
            raw_inputs, raw_labels = next(batches)
        except StopIteration:
            break
        fetched = time.perf_counter()
        _report_failed_samples(ctx, raw_labels)
        inputs, labels = prepare(raw_inputs, raw_labels)
        if skips_single_image_batch(ctx, inputs, largest_batch):
            continue
        largest_batch = max(largest_batch, inputs.shape[0])
        ctx.step = step + 1
        targets = None
        if ctx.mixer is not None and inputs.dim() == 4:
            mixed = ctx.mixer(inputs, labels)
            inputs, targets, labels = mixed.images, mixed.targets, mixed.dominant_labels
        loss_value, correct, counted = _optimise_or_free(ctx, forward, inputs, labels,
                                                         len(raw_labels), targets)
        done = time.perf_counter()
        steps += 1
        ctx.global_step += 1
        samples += counted
        if math.isfinite(loss_value):
            loss_meter.update(loss_value, counted)
        acc_meter.update(correct / counted if counted else math.nan, counted)
        speed.update(len(raw_labels) / max(done - fetch_started, 1e-9))
        event = _step_event(ctx, step, limit, loss_value, correct, counted, loss_meter,
                            acc_meter, speed.smoothed, fetched - fetch_started, done - fetched,
                            len(raw_labels))
        ctx.callback.on_step(event)
        _watch_throttling(ctx, event, done)
        if ctx.control.cancel_requested:
            return _epoch_result(loss_meter, acc_meter, samples, started, True, steps)
    return _epoch_result(loss_meter, acc_meter, samples, started, False, steps)


def skips_single_image_batch(ctx: StepContext, inputs: torch.Tensor, largest_batch: int
                             ) -> bool:
    """True for an epoch's last training batch when it holds one image, after larger ones, and a
    BatchNorm layer trains: torch refuses it where a layer's map is 1x1 (crops under 64 px for
    most families: "Expected more than 1 value per channel"), and elsewhere its statistics
    would be one image's. The order is shuffled each epoch, so each time it is another image.
    The first skip is said once a run. (A batch size of 1 is the user's choice: not skipped.)"""
    if inputs.shape[0] != 1 or largest_batch <= 1 or not any(
            isinstance(module, nn.modules.batchnorm._BatchNorm) and module.training
            for module in ctx.model.modules()):
        return False
    ctx.single_image_batches_skipped += 1
    if ctx.single_image_batches_skipped == 1:
        ctx.callback.on_message(Message(
            "info", f"Epoch {ctx.epoch}: its last training batch held a single image, which "
            "the network's BatchNorm layers cannot train on, so it was skipped. The order is "
            "shuffled each epoch, so it is another image each time; a batch size that does "
            "not leave one image over avoids it."))
    return True


def _optimise_or_free(
    ctx: StepContext,
    forward: Callable[[torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    targets: torch.Tensor | None = None,
) -> tuple[float, int, int]:
    """One step; when the device runs out of memory, free what the step held and raise.

    Raises:
        TrainingOutOfMemory: The step did not fit; its memory has been returned.
    """
    detail = ""
    try:
        return _optimise(ctx, forward, inputs, labels, targets)
    except torch.OutOfMemoryError as exc:
        detail = first_line(exc)  # keep only text: the error's frames hold the activations
    # Outside the except block the caught error and its traceback are gone, so the step's
    # activations and gradients are unreachable and their memory can go back to the device.
    ctx.optimizer.zero_grad(set_to_none=True)
    free_device_memory(ctx.device)
    raise TrainingOutOfMemory(batch_size, ctx.device, detail)


def _report_failed_samples(ctx: StepContext, labels: torch.Tensor) -> None:
    if ctx.on_failed_samples is not None:
        failed = int((labels == IGNORE_LABEL).sum())
        if failed:
            ctx.on_failed_samples(failed)


def _optimise(
    ctx: StepContext,
    forward: Callable[[torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    labels: torch.Tensor,
    targets: torch.Tensor | None,
) -> tuple[float, int, int]:
    """``labels``: for accuracy (with mixed ``targets``, each image's dominant label)."""
    with ctx.autocast():
        logits = forward(inputs)
    if targets is None:
        loss, sample_logits = multicrop_loss(logits.float(), labels, ctx.crops, ctx.strategy,
                                             ctx.class_weights, ctx.label_smoothing)
    else:
        sample_logits = logits.float()
        loss = soft_target_loss(sample_logits, targets, labels, ctx.class_weights,
                                ctx.label_smoothing)
    ctx.optimizer.zero_grad(set_to_none=True)
    loss_value = float(loss.item())
    if not math.isfinite(loss_value):
        # One non-finite update spoils every weight, and a GradScaler only skips non-finite
        # gradients, not a non-finite loss: stop before this update is applied.
        raise NonFiniteLossError(
            f"epoch {ctx.epoch}, step {ctx.step}: the loss is {loss_value}, so training stopped "
            "before that update could spoil the weights (the files of the last finished epoch "
            f"are kept); a lower lr (now {ctx.optimizer.param_groups[0]['lr']:g}) usually "
            "fixes this, otherwise check the images and labels"
        )
    ctx.scaler.scale(loss).backward()
    ctx.last_lr = float(ctx.optimizer.param_groups[0]["lr"])  # what this step trains at
    ctx.scaler.step(ctx.optimizer)
    ctx.scaler.update()
    if ctx.after_step is not None:
        ctx.after_step()  # a schedule stepped every batch (one-cycle)
    correct, counted = count_correct(sample_logits, labels)
    return loss_value, correct, counted


def _step_event(
    ctx: StepContext, step: int, steps: int, loss: float, correct: int, counted: int,
    loss_meter: SmoothedValue, acc_meter: SmoothedValue, images_per_second: float,
    data_wait: float, compute: float, images: int,
) -> StepStats:
    memory = memory_stats(ctx.device)
    gpu = ctx.gpu_monitor.sample()
    return StepStats(
        epoch=ctx.epoch,
        step=step + 1,
        steps_in_epoch=steps,
        global_step=ctx.global_step,
        loss=loss,
        loss_smoothed=loss_meter.smoothed,
        accuracy=correct / counted if counted else math.nan,
        accuracy_smoothed=acc_meter.smoothed,
        lr=ctx.last_lr,
        images_per_second=images_per_second,
        data_wait_s=data_wait,
        compute_s=compute,
        memory_allocated=memory.allocated,
        memory_reserved=memory.reserved,
        memory_peak=memory.peak,
        memory_total=memory.total,
        process_rss=memory.process_rss,
        gpu_utilization=gpu.utilization,
        gpu_temperature=gpu.temperature,
        gpu_power_w=gpu.power_w,
        gpu_throttle_reasons=gpu.throttle_reasons,
        on_battery=gpu.on_battery,
        images=images,
    )


def _watch_throttling(ctx: StepContext, event: StepStats, now: float) -> None:
    """Tell the log when throughput drops because the GPU throttles, and when that ends."""
    if event.gpu_throttle_reasons is None and event.on_battery is None:
        return  # no NVML and no battery: nothing to judge
    verdict = ctx.throttle_watch.add(ThroughputSample(
        now, event.images_per_second, event.gpu_throttle_reasons, event.gpu_power_w,
        event.gpu_temperature, event.on_battery))
    if verdict is None:
        return
    if verdict.throttled:
        ctx.callback.on_message(Message("warning", verdict.sentence))
    else:
        ctx.callback.on_message(Message(
            "info", f"The GPU is no longer throttled ({verdict.recent_images_per_second:,.0f} "
                    "images/s)."))


def _epoch_result(
    loss: SmoothedValue, acc: SmoothedValue, samples: int, started: float, cancelled: bool,
    steps: int,
) -> EpochResult:
    return EpochResult(loss.global_avg, acc.global_avg, samples, time.perf_counter() - started,
                       cancelled, steps, loss.total, loss.count, acc.total, acc.count)


@torch.no_grad()
def evaluate_batches(
    batches: Iterator[Batch],
    forward: Callable[[torch.Tensor], torch.Tensor],
    prepare: Callable[[torch.Tensor, torch.Tensor], Batch],
    num_classes: int,
    crops: int,
    strategy: str,
    amp_context: Callable[[], torch.autocast],
    control: RunControl | None = None,
    collector: PredictionCollector | None = None,
) -> EvalResult:
    """Loss and accuracy per original sample, plus the confusion matrix; every image's
    probabilities and loss go to ``collector`` when given."""
    confusion = ConfusionMatrix(num_classes)
    loss_meter = SmoothedValue()
    correct_total = counted_total = 0
    for raw_inputs, raw_labels in batches:
        if control is not None and control.cancel_requested:
            break
        inputs, labels = prepare(raw_inputs, raw_labels)
        with amp_context():
            logits = forward(inputs)
        loss, sample_logits = multicrop_loss(logits.float(), labels, crops, strategy)
        if collector is not None:
            collector.add(logits, labels)
        correct, counted = count_correct(sample_logits, labels)
        if counted:
            loss_meter.update(float(loss.item()), counted)
        correct_total += correct
        counted_total += counted
        predictions = sample_logits.argmax(dim=1)
        confusion.update(labels.tolist(), predictions.tolist())
    accuracy = correct_total / counted_total if counted_total else math.nan
    return EvalResult(loss_meter.global_avg, accuracy, confusion, counted_total,
                      predictions=collector)
