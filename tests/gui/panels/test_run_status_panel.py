"""The run status panel: the device and precision in use, and the bottleneck line."""

from __future__ import annotations

import dataclasses
import math
import os
import re

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import EpochEnd, RunEnd, RunStart, StepStats
from workbench.core.training.bottleneck import STEADY_SPEED
from workbench.gui.panels.run_status_panel import RunStatusPanel

GIB = 1024**3


def run_start(device: str = "cuda:0", precision: str = "mixed bfloat16",
              images_on_device: bool = False) -> RunStart:
    return RunStart(
        run_dir="", device=device, device_name="GeForce GTX 1650", memory_total=4 * GIB,
        amp=precision != "float32", class_names=("a", "b"), train_samples=40, val_samples=8,
        epochs=2, start_epoch=0, steps_per_epoch=10, crops_per_sample=5, feature_cache=False,
        dataset_summary="", precision=precision, images_on_device=images_on_device,
    )


def step(epoch: int, number: int, wait: float, compute: float) -> StepStats:
    return StepStats(
        epoch=epoch, step=number, steps_in_epoch=10, global_step=10 * (epoch - 1) + number,
        loss=1.0, loss_smoothed=1.0, accuracy=0.5, accuracy_smoothed=0.5, lr=0.01,
        images_per_second=40.0, data_wait_s=wait, compute_s=compute,
        memory_allocated=GIB, memory_reserved=GIB, memory_peak=GIB, memory_total=4 * GIB,
        process_rss=None,
    )


def epoch_end(epoch: int) -> EpochEnd:
    return EpochEnd(
        epoch=epoch, epochs=2, train_loss=1.0, train_accuracy=0.5, val_loss=1.0,
        val_accuracy=0.5, per_class_accuracy=(0.5, 0.5), confusion=((1, 1), (1, 1)), lr=0.01,
        epoch_seconds=1.0, images_per_second=40.0, is_best=True, best_epoch=epoch,
        best_val_accuracy=0.5, checkpoint_path="",
    )


def test_the_bottleneck_line_appears_after_the_warm_up_steps_and_names_the_settings(qtbot):
    panel = RunStatusPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.diagnosis_interval_s = math.inf  # only the first judgement and epoch ends redraw
    panel.set_run_config(TrainConfig(workers=0, cache_images=False, batch_size=4))
    panel.show_run_start(run_start())
    assert "mixed bfloat16" in panel.device_label.text()
    assert panel.bottleneck_text() == "judged after the first steps\u2026"

    panel.show_step(step(1, 1, 5.0, 0.1))  # warm-up: loader processes starting
    panel.show_step(step(1, 2, 5.0, 0.1))
    assert panel.bottleneck_text() == "judged after the first steps\u2026"
    panel.show_step(step(1, 3, 0.62, 0.38))
    text = panel.bottleneck_text()
    assert text.startswith("Input-bound: the GPU waits 62% of the time for data. Try: ")
    assert "enable the image cache (cache_images)" in text
    if (os.cpu_count() or 1) > 1:
        assert f"more loader workers (now 0; this machine has {os.cpu_count()} CPUs)" in text
    assert panel.bottleneck_label.isVisible()

    # The loader caught up in epoch 2; the line changes at the next refresh (the epoch end).
    for number in range(1, 11):
        panel.show_step(step(2, number, 0.0, 1.0))
    assert panel.bottleneck_text() == text
    panel.show_epoch_end(epoch_end(2))
    assert panel.bottleneck_text().startswith("Compute-bound: the GPU computes")
    assert "a larger batch (now 4): the GPU uses 25% of its memory" in panel.bottleneck_text()


def test_a_cpu_run_says_float32_and_a_new_run_starts_a_fresh_judgement(qtbot):
    panel = RunStatusPanel()
    qtbot.addWidget(panel)
    panel.set_run_config(TrainConfig(workers=0, cache_images=True))
    panel.show_run_start(run_start("cpu", "float32"))
    assert "(float32)" in panel.device_label.text()
    for number in range(1, 6):
        panel.show_step(step(1, number, 0.0, 1.0))
    panel.show_run_end(RunEnd("cancelled", 0, 0, 0.0, "", "", "", 3.0))
    assert panel.bottleneck_text().startswith("Compute-bound: the CPU computes 100%")

    panel.show_run_start(run_start("cpu", "float32"))  # a followed run: no settings given
    assert panel.bottleneck_text() == "judged after the first steps\u2026"
    for number in range(1, 6):
        panel.show_step(step(1, number, 0.9, 0.1))
    assert panel.bottleneck_text().startswith(
        "Input-bound: the CPU waits 90% of the time for data. Try: more loader workers; "
        "the image cache (cache_images)")


def test_a_real_run_in_the_window_ends_with_advice_naming_its_settings(qtbot, tiny_config):
    from workbench.gui.window.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.ask_before_closing_during_training = False
    window.apply_config(tiny_config.replace(epochs=1, model="small_cnn"))
    with qtbot.waitSignal(window.controller.run_ended, timeout=120_000) as ended:
        assert window.start_training()
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)
    assert ended.args[0].status == "completed"

    text = window.status_panel.bottleneck_text()
    assert text.split(":")[0] in ("Input-bound", "Compute-bound", "Balanced")
    # The digits CNN from random weights at its native 28 px, images kept on the CPU: the
    # advice that applies is a GPU; never a smaller crop or a frozen random backbone.
    assert "CUDA GPU" in text, text
    assert "crop_size" not in text and "last_layer" not in text, text
    speed = window.status_panel.speed_label.text()
    assert re.fullmatch(r"[\d,]+ images/s \(epoch 1: val accuracy [\d.]+%, [\d.]+ s\)", speed)
    if text.startswith("Compute-bound"):
        assert f"({speed.split(' images/s')[0]} images/s {STEADY_SPEED})" in text
    assert window.status_panel.device_label.text().endswith(
        "(float32, images kept on the device, no loader processes)")


def timed_step(epoch: int, number: int, wait: float, compute: float, images: int = 32
               ) -> StepStats:
    """A step as the engine reports it: its batch, its seconds and its own (smoothed) rate."""
    return dataclasses.replace(step(epoch, number, wait, compute), images=images,
                               images_per_second=images / (wait + compute))


def test_the_speed_and_the_bottleneck_figure_come_from_one_measurement(qtbot):
    panel = RunStatusPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.set_run_config(TrainConfig(model="small_cnn", weights="none", finetune="full"))
    # A resumed run: epoch 4 of 12, whose first steps wait for the loader to start.
    panel.show_run_start(dataclasses.replace(run_start("cpu", "float32"), start_epoch=3,
                                             epochs=12))
    panel.show_step(timed_step(4, 1, 4.0, 0.05))
    panel.show_step(timed_step(4, 2, 4.0, 0.05))
    panel.show_step(timed_step(4, 3, 0.002, 0.048))
    assert panel.speed_label.text() == "640 images/s"  # 32 images in 0.05 s
    assert f"(640 images/s {STEADY_SPEED})" in panel.bottleneck_text()
    for number in range(4, 11):  # 0.05 s and 0.35 s steps in turn
        seconds = 0.05 if number % 2 else 0.35
        panel.show_step(timed_step(4, number, 0.002, seconds - 0.002))
    # The epoch as a whole, loader start-up included, ran at 23 images/s.
    panel.show_epoch_end(dataclasses.replace(epoch_end(4), epochs=12, images_per_second=23.0,
                                             epoch_seconds=13.9, val_accuracy=0.875))

    # Known answer: steps 3-10 move 8 x 32 images in 4 x 0.05 + 4 x 0.35 s = 160 images/s
    # (the mean of their rates would be 366).
    assert panel.speed_label.text() == "160 images/s (epoch 4: val accuracy 87.5%, 13.9 s)"
    assert panel.bottleneck_text().startswith("Compute-bound: the CPU computes 99% of the "
                                              f"time (160 images/s {STEADY_SPEED})")


def test_images_kept_on_the_device_are_named_and_get_no_loader_advice(qtbot):
    panel = RunStatusPanel()
    qtbot.addWidget(panel)
    panel.diagnosis_interval_s = math.inf
    panel.set_run_config(TrainConfig(workers=0, cache_images=False, resize_size=320,
                                     crop_size=320))
    panel.show_run_start(run_start("cpu", "float32", images_on_device=True))
    assert panel.device_label.text().endswith(
        "(float32, images kept on the device, no loader processes)")
    for number in range(1, 4):
        panel.show_step(step(1, number, 0.62, 0.38))
    text = panel.bottleneck_text()
    assert text.startswith("Input-bound")
    assert "a smaller crop_size (now 320; resnet18 is made for 224)" in text
    assert "loader workers" not in text


def test_the_throttling_line_says_when_a_hot_card_slows_the_run(qtbot):
    panel = RunStatusPanel()
    qtbot.addWidget(panel)
    panel.show_run_start(run_start())
    panel.throttle_watch.interval_s = 0.0  # every step is a sample (NVML is read once a second)
    assert panel.throttle_label.text() == "\u2014"
    for number in range(1, 36):
        hot = number > 23
        panel.show_step(StepStats(
            **{**step(1, number, 0.0, 0.1).__dict__,
               "images_per_second": 200.0 if hot else 300.0, "gpu_temperature": 87.0 if hot
               else 70.0, "gpu_power_w": 40.0, "gpu_throttle_reasons": 0x20 if hot else 0x0,
               "on_battery": False}))
        if number == 23:
            assert panel.throttle_label.text() == "no"
    assert panel.throttle_label.text().startswith("Throughput fell from 300 to 200 images/s")
    assert "thermal slowdown at 87 \u00b0C" in panel.throttle_label.text()
