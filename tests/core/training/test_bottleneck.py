"""Classifying a run as input-bound or compute-bound from its step events."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import StepStats
from workbench.core.training.bottleneck import (
    BALANCED,
    COMPUTE_BOUND,
    INPUT_BOUND,
    STEADY_SPEED,
    UNKNOWN,
    BottleneckMonitor,
    diagnose,
)

GIB = 1024**3


def step(epoch: int, number: int, wait: float, compute: float, peak: int | None = None,
         total: int | None = None, speed: float = 100.0) -> StepStats:
    return StepStats(
        epoch=epoch, step=number, steps_in_epoch=20, global_step=number, loss=1.0,
        loss_smoothed=1.0, accuracy=0.5, accuracy_smoothed=0.5, lr=0.01,
        images_per_second=speed, data_wait_s=wait, compute_s=compute,
        memory_allocated=peak, memory_reserved=peak, memory_peak=peak, memory_total=total,
        process_rss=None,
    )


def epoch_of(wait: float, compute: float, epoch: int = 1, steps: int = 10,
             **kwargs: object) -> list[StepStats]:
    return [step(epoch, n, wait, compute, **kwargs) for n in range(1, steps + 1)]


def test_a_run_waiting_most_of_the_time_for_data_is_input_bound_with_advice_naming_settings():
    config = TrainConfig(workers=2, cache_images=False, resize_size=512, crop_size=224)
    diagnosis = diagnose(epoch_of(0.62, 0.38), config, device="cuda:0", cpu_count=8)

    assert diagnosis.kind == INPUT_BOUND
    assert abs(diagnosis.data_wait_share - 0.62) < 1e-9
    assert diagnosis.steps == 8  # two warm-up steps left out
    assert diagnosis.sentence.startswith("Input-bound: the GPU waits 62% of the time for data.")
    assert "more loader workers (now 2; this machine has 8 CPUs)" in diagnosis.advice
    assert any("cache_images" in a for a in diagnosis.advice)
    assert any("resize_size (now 512" in a for a in diagnosis.advice)


def test_advice_leaves_out_what_is_already_done():
    config = TrainConfig(workers=7, cache_images=True, resize_size=256, crop_size=224,
                         finetune="last_layer", cache_features=True)
    diagnosis = diagnose(epoch_of(0.5, 0.5), config, device="cuda:0", cpu_count=8)
    assert diagnosis.kind == INPUT_BOUND
    assert diagnosis.advice == ("a faster disk or smaller image files: every setting that helps "
                                "loading is already on",)

    config = config.replace(cache_features=False)
    diagnosis = diagnose(epoch_of(0.5, 0.5), config, device="cuda:0", cpu_count=8)
    assert any("cache_features" in a for a in diagnosis.advice)


def test_images_kept_on_the_device_get_no_loader_advice():
    config = TrainConfig(model="small_cnn", weights="none", finetune="full", workers=1,
                         cache_images=False, crop_size=56, resize_size=64)
    diagnosis = diagnose(epoch_of(0.6, 0.4), config, device="cpu", cpu_count=8,
                         images_on_device=True)
    assert diagnosis.kind == INPUT_BOUND
    assert diagnosis.advice == (
        "a smaller crop_size (now 56; small_cnn is made for 28)",
        "a CUDA GPU: the images already stay on the device and are cropped there")


@pytest.mark.parametrize(("model", "crop_size"), [("small_cnn", 28), ("small_cnn", 20),
                                                  ("resnet18", 224), ("resnet18", 64)])
def test_no_smaller_crop_is_advised_at_or_below_the_models_native_size(model, crop_size):
    # The digits CNN at its native 28 px (or below): cropping smaller only loses the digit.
    config = TrainConfig(model=model, weights="none", finetune="full", crop_size=crop_size,
                         resize_size=crop_size)
    on_cpu = diagnose(epoch_of(0.6, 0.4), config, device="cpu", images_on_device=True)
    assert on_cpu.advice == ("a CUDA GPU: the images already stay on the device and are "
                             "cropped there",)
    on_gpu = diagnose(epoch_of(0.6, 0.4), config, device="cuda:0", images_on_device=True)
    assert on_gpu.advice == () and "Try:" not in on_gpu.sentence


def test_random_weights_are_not_advised_to_fine_tune_the_last_layer_only():
    for model in ("resnet18", "small_cnn"):
        random = TrainConfig(model=model, weights="none", finetune="full")
        diagnosis = diagnose(epoch_of(0.0, 0.3), random, device="cpu")
        assert diagnosis.kind == COMPUTE_BOUND
        assert not any("last_layer" in a for a in diagnosis.advice), diagnosis.advice
    pretrained = TrainConfig(model="resnet18", weights="imagenet", finetune="full")
    assert any("finetune last_layer" in a
               for a in diagnose(epoch_of(0.0, 0.3), pretrained, device="cpu").advice)


def test_the_speed_is_the_steps_images_over_their_seconds():
    # Known answer: 32-image steps alternating 0.05 s and 0.35 s (waits included) make
    # 64 images every 0.4 s, 160 images/s; the mean of the step rates would be 366.
    steps = []
    for number in range(1, 11):
        seconds = 0.05 if number % 2 else 0.35
        steps.append(dataclasses.replace(step(1, number, 0.002, seconds - 0.002,
                                              speed=32 / seconds), images=32))
    diagnosis = diagnose(steps, TrainConfig(), device="cpu")
    assert diagnosis.kind == COMPUTE_BOUND
    assert diagnosis.images_per_second == pytest.approx(160.0)
    assert f"(160 images/s {STEADY_SPEED})" in diagnosis.sentence


def test_warm_up_steps_of_every_epoch_are_ignored():
    # Each epoch starts with two slow fetches (workers starting); the rest is compute.
    steps = []
    for epoch in (1, 2):
        steps += [step(epoch, 1, 5.0, 0.1), step(epoch, 2, 5.0, 0.1)]
        steps += [step(epoch, n, 0.01, 0.2) for n in range(3, 11)]
    diagnosis = diagnose(steps, TrainConfig(), device="cpu")
    assert diagnosis.kind == COMPUTE_BOUND
    assert diagnosis.steps == 16
    assert diagnosis.data_wait_share < 0.05


def test_a_short_epoch_made_only_of_warm_up_steps_is_still_judged():
    diagnosis = diagnose([step(1, 1, 0.9, 0.1), step(1, 2, 0.9, 0.1)], None, device="cpu")
    assert diagnosis.kind == INPUT_BOUND and diagnosis.steps == 2


def test_compute_bound_gpu_with_memory_left_suggests_a_larger_batch():
    config = TrainConfig(batch_size=4, amp=False)
    steps = epoch_of(0.01, 0.99, peak=1 * GIB, total=4 * GIB, speed=340.0)
    diagnosis = diagnose(steps, config, device="cuda:0")
    assert diagnosis.kind == COMPUTE_BOUND
    assert diagnosis.advice[0].startswith("a larger batch (now 4): the GPU uses 25% of its memory")
    assert "mixed precision (amp)" in diagnosis.advice
    assert "340 images/s" in diagnosis.sentence

    full = epoch_of(0.01, 0.99, peak=3.5 * GIB, total=4 * GIB)
    assert not any("larger batch" in a for a in diagnose(full, config, "cuda:0").advice)


def test_compute_bound_on_the_cpu_points_at_a_gpu():
    diagnosis = diagnose(epoch_of(0.0, 0.3), TrainConfig(finetune="full"), device="cpu")
    assert diagnosis.kind == COMPUTE_BOUND
    assert diagnosis.sentence.startswith("Compute-bound: the CPU computes 100% of the time")
    assert any("CUDA GPU" in a for a in diagnosis.advice)
    assert any("last_layer" in a for a in diagnosis.advice)


def test_between_the_thresholds_is_balanced_and_no_steps_is_unknown():
    diagnosis = diagnose(epoch_of(0.2, 0.8), TrainConfig(workers=0), device="cpu", cpu_count=4)
    assert diagnosis.kind == BALANCED
    assert diagnosis.sentence.startswith("Balanced: the CPU waits 20% of the time for data.")
    assert diagnosis.advice == ("more loader workers (now 0; this machine has 4 CPUs)",)

    empty = diagnose([], TrainConfig())
    assert empty.kind == UNKNOWN and "Not enough steps" in empty.sentence


def test_the_monitor_judges_the_recent_window():
    monitor = BottleneckMonitor(TrainConfig(workers=0), window=8)
    for event in epoch_of(0.9, 0.1, epoch=1):
        monitor.add(event)
    assert monitor.diagnosis().kind == INPUT_BOUND
    for event in epoch_of(0.0, 0.5, epoch=2):
        monitor.add(event)
    assert monitor.diagnosis().kind == COMPUTE_BOUND  # the window holds epoch 2's steps only
    monitor.clear()
    assert monitor.diagnosis().kind == UNKNOWN


@pytest.mark.parametrize(
    ("wait", "compute", "expected"),
    [
        (0.32, 0.68, INPUT_BOUND),
        (0.30, 0.70, INPUT_BOUND),  # "at or above" 30%
        (0.28, 0.72, BALANCED),
        (0.12, 0.88, BALANCED),
        (0.10, 0.90, COMPUTE_BOUND),  # "at or below" 10%
        (0.08, 0.92, COMPUTE_BOUND),
    ],
)
def test_the_verdict_near_its_thresholds(wait, compute, expected):
    # Exact shares: wait / (wait + compute) of 3 / 10 is 0.3 in floating point too.
    steps = epoch_of(wait * 100, compute * 100)
    diagnosis = diagnose(steps, device="cpu", cpu_count=4)
    assert diagnosis.kind == expected
    assert diagnosis.data_wait_share == pytest.approx(wait, abs=1e-12)
    assert diagnosis.sentence.startswith(expected.capitalize())
