"""Known answers of a model measurement: the config it trains, the settings a user gets for what
they leave out, figures from a stand-in clock (speed, the median latency), an out-of-memory
measurement, a stop at each stage, and the plain data the measurements file keeps."""

from __future__ import annotations

import itertools
import os
import platform
import re
import time
from types import SimpleNamespace

import pytest
import torch
import torchvision

from workbench.core.devices.selection import resolve_device
from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning import model_measurement
from workbench.core.training.tuning.batch_size_finder import TrainingStepProbe
from workbench.core.training.tuning.model_measurement import (
    CPU_MEMORY_NOTE,
    LATENCY_RUNS,
    NUM_CLASSES,
    TIMED_STEPS,
    WARMUP_STEPS,
    MeasurementSettings,
    ModelMeasurement,
    device_name,
    machine_identity,
    measure_model,
    measurement_settings,
)


def tiny(**changes) -> MeasurementSettings:
    return measurement_settings("small_cnn", **{"batch_size": 2, "crop_size": 28,
                                                "amp": False, "device": "cpu", **changes})


def _clock(monkeypatch, readings: list[float]) -> None:
    values = iter(readings)
    monkeypatch.setattr(model_measurement, "time",
                        SimpleNamespace(perf_counter=lambda: next(values),
                                        strftime=time.strftime, gmtime=time.gmtime))


def _count_steps(monkeypatch) -> list[int]:
    """The batch of every training step; each step checked to be the run's own step (no
    hook counting the tensors kept for backward)."""
    steps: list[int] = []
    original = TrainingStepProbe.train_step

    def counting(self, images, labels):
        assert self.meter is None
        steps.append(len(labels))
        return original(self, images, labels)

    monkeypatch.setattr(TrainingStepProbe, "train_step", counting)
    return steps


def _count_batches(monkeypatch) -> list[int]:
    """The size of every synthetic batch the probe makes."""
    sizes: list[int] = []
    original = TrainingStepProbe.synthetic_batch

    def recording(self, batch):
        sizes.append(batch)
        return original(self, batch)

    monkeypatch.setattr(TrainingStepProbe, "synthetic_batch", recording)
    return sizes


def test_the_constants():
    assert (WARMUP_STEPS, TIMED_STEPS, LATENCY_RUNS) == (
        {"cuda": 3, "cpu": 1}, {"cuda": 10, "cpu": 2}, {"cuda": 20, "cpu": 5})
    assert NUM_CLASSES == 10 and CPU_MEMORY_NOTE == "n/a on the CPU"


def test_the_config_a_measurement_trains_is_the_models_recipe_with_the_settings():
    settings = measurement_settings("resnet18", batch_size=8, crop_size=64, amp=False,
                                    finetune="full", device="cpu")
    config = settings.config()
    assert config == TrainConfig(model="resnet18", optimizer="sgd", lr=0.001, momentum=0.9,
                                 weight_decay=0.0001, scheduler="step", lr_step_size=7,
                                 lr_gamma=0.1, interpolation="bilinear", train_hflip=True,
                                 crop_scale_min=0.08, crop_scale_max=1.0,
                                 crop_ratio_min=0.75, crop_ratio_max=1.333333,
                                 weights="none", weights_file="", crop_mode="standard",
                                 batch_size=8, crop_size=64, resize_size=64, amp=False,
                                 finetune="full", device="cpu", workers=0)


def test_a_small_cnn_measurement_trains_the_small_cnns_own_recipe():
    # TrainConfig's own defaults are resnet18's: small_cnn's recipe must be put over them.
    config = tiny().config()
    assert (config.optimizer, config.lr, config.scheduler, config.epochs,
            config.train_hflip, config.crop_scale_min) == ("adamw", 0.002, "warmup_cosine", 8,
                                                           False, 1.0)


def test_what_is_left_out_is_the_models_own_and_amp_is_a_truth_value():
    settings = measurement_settings("resnet18", device="cpu")
    assert settings == MeasurementSettings("resnet18", 32, 224, True, "last_layer", "cpu")
    small = measurement_settings("small_cnn", amp=1, device="auto")
    assert small == MeasurementSettings("small_cnn", 16, 28, True, "full", "cpu")
    assert small.amp is True
    assert measurement_settings("small_cnn", amp=0, device="cpu").amp is False
    assert measurement_settings("small_cnn").device == resolve_device("auto")  # 'auto'


def test_bad_settings_are_refused_with_the_whole_sentence():
    with pytest.raises(ValueError, match=r"^batch_size: must be at least 1 \(got -1\)$"):
        measurement_settings("small_cnn", batch_size=-1, device="cpu")
    with pytest.raises(ValueError, match=r"^crop_size: must be at least 1 px \(got -3\)$"):
        measurement_settings("small_cnn", crop_size=-3, device="cpu")
    with pytest.raises(ValueError, match=("^finetune: 'head' is not one of last_layer, full, "
                                          "head_then_full$")):
        measurement_settings("small_cnn", finetune="head", device="cpu")
    with pytest.raises(ValueError, match="^model: unknown model 'resnet9'"):
        measurement_settings("resnet9", device="cpu")
    measurement_settings("small_cnn", batch_size=1, crop_size=1, device="cpu")  # the edges


def test_speed_and_the_median_latency_from_a_stand_in_clock(monkeypatch):
    # Two timed steps of batch 2 take 0.25 s and 0.75 s: 4 images in 1 s. Latency: a warm-up
    # run (its start read, its end not), then 30, 10 and 20 ms: the median is 20 ms.
    _clock(monkeypatch, [0.0, 0.25, 1.0, 1.75,
                         0.0, 10.0, 10.03, 11.0, 11.01, 12.0, 12.02])
    steps = _count_steps(monkeypatch)
    batches = _count_batches(monkeypatch)
    before = time.time()
    measurement = measure_model(tiny(), warmup_steps=2, timed_steps=2, latency_runs=3)
    assert measurement.train_images_per_second == pytest.approx(4.0)
    assert measurement.latency_ms == pytest.approx(20.0)
    assert steps == [2, 2, 2, 2]
    assert batches == [2, 1]  # the training batch, then the single image of the latency
    assert (measurement.timed_steps, measurement.precision, measurement.error) == (
        2, "float32", "")
    assert (measurement.peak_memory_bytes, measurement.fits, measurement.largest_batch,
            measurement.largest_is_cap) == (None, None, None, False)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", measurement.measured_at)
    measured = time.mktime(time.strptime(measurement.measured_at, "%Y-%m-%dT%H:%M:%SZ"))
    assert abs(measured - time.mktime(time.gmtime(before))) < 60  # UTC, now
    assert (measurement.host, measurement.device_name, measurement.torch_version,
            measurement.torchvision_version) == (
        platform.node(), device_name("cpu"), torch.__version__, torchvision.__version__)


def test_the_time_of_a_measurement_is_in_utc_wherever_the_machine_is(monkeypatch):
    old = os.environ.get("TZ")
    os.environ["TZ"] = "XYZ-9"  # nine hours ahead of UTC, no summer time
    time.tzset()
    try:
        before = time.gmtime()
        measured_at = measure_model(tiny(), warmup_steps=0, timed_steps=1,
                                    latency_runs=1).measured_at
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()
    measured = time.strptime(measured_at, "%Y-%m-%dT%H:%M:%SZ")
    assert abs(time.mktime(measured) - time.mktime(before)) < 60


def test_without_counts_the_cpu_takes_one_warm_up_two_timed_steps_and_five_runs(monkeypatch):
    # 2 readings per timed step (1 s each), then the latency's warm-up (one reading) and five
    # runs of 1 ms.
    _clock(monkeypatch, [0.0, 1.0, 2.0, 3.0] + [0.0] + [6.0, 6.001] * 5)
    steps = _count_steps(monkeypatch)
    measurement = measure_model(tiny(batch_size=3))
    assert steps == [3, 3, 3] and measurement.timed_steps == 2
    assert measurement.train_images_per_second == pytest.approx(3.0)
    assert measurement.latency_ms == pytest.approx(1.0)


def test_zero_timed_steps_and_runs_still_time_one(monkeypatch):
    _clock(monkeypatch, [0.0, 0.5, 0.0, 2.0, 2.004])
    steps = _count_steps(monkeypatch)
    measurement = measure_model(tiny(), warmup_steps=0, timed_steps=0, latency_runs=0)
    assert steps == [2] and measurement.train_images_per_second == pytest.approx(4.0)
    assert measurement.latency_ms == pytest.approx(4.0)


def test_a_stop_at_each_stage_returns_nothing():
    for stop_at in range(5):  # 1 warm-up, 2 timed steps, then the latency's two runs
        asked = itertools.count()
        assert measure_model(tiny(), warmup_steps=1, timed_steps=2, latency_runs=1,
                             should_stop=lambda at=stop_at, count=asked: next(count) >= at
                             ) is None, stop_at
    asked = itertools.count()
    done = measure_model(tiny(), warmup_steps=1, timed_steps=2, latency_runs=1,
                         should_stop=lambda: next(asked) >= 5)
    assert done is not None and next(asked) == 5  # asked five times


def test_a_batch_that_runs_out_of_memory_is_a_measurement_that_says_so(monkeypatch):
    original_init = TrainingStepProbe.__init__

    def small_card(self, *args, **kwargs):
        original_init(self, *args, **kwargs)

        def allocate(_module, inputs):
            if inputs[0].shape[0] > 2:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

        self.model.register_forward_pre_hook(allocate)

    monkeypatch.setattr(TrainingStepProbe, "__init__", small_card)
    measurement = measure_model(tiny(batch_size=4), warmup_steps=1, timed_steps=1,
                                latency_runs=1)
    assert (measurement.error, measurement.precision) == ("out of memory at batch 4",
                                                          "float32")
    assert (measurement.train_images_per_second, measurement.latency_ms,
            measurement.peak_memory_bytes, measurement.fits) == (None, None, None, None)


def test_a_model_that_does_not_fit_on_the_device_at_all_has_no_precision(monkeypatch):
    original_init = TrainingStepProbe.__init__

    def no_room(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")

    monkeypatch.setattr(TrainingStepProbe, "__init__", no_room)
    measurement = measure_model(tiny(batch_size=8), warmup_steps=1, timed_steps=1,
                                latency_runs=1)
    assert (measurement.error, measurement.precision, measurement.train_images_per_second,
            measurement.latency_ms) == ("out of memory at batch 8", "", None, None)


def test_a_model_that_cannot_take_the_crop_names_the_crop_and_the_first_line():
    problem = model_measurement._model_input_problem
    settings = tiny()
    assert problem(settings, RuntimeError("  first line\nsecond line ")) == (
        "crop_size: small_cnn cannot train on 28 px crops (first line); choose its own crop "
        "(0) or a larger one")
    assert problem(settings, AssertionError()) == (
        "crop_size: small_cnn cannot train on 28 px crops (AssertionError); choose its own "
        "crop (0) or a larger one")


def test_at_the_models_own_crop_its_own_error_is_raised_as_it_is(monkeypatch):
    def broken(self, images, labels):
        raise RuntimeError("the model's own words")

    monkeypatch.setattr(TrainingStepProbe, "train_step", broken)
    with pytest.raises(RuntimeError, match="^the model's own words$"):
        measure_model(tiny(crop_size=28), warmup_steps=1, timed_steps=1, latency_runs=1)
    with pytest.raises(ValueError, match=r"^crop_size: small_cnn cannot train on 30 px crops "
                                         r"\(the model's own words\)"):
        measure_model(tiny(crop_size=30), warmup_steps=1, timed_steps=1, latency_runs=1)


def test_the_plain_data_goes_back_and_forth_and_names_the_device():
    settings = MeasurementSettings("resnet18", 64, 224, True, "full", "cuda:0")
    measurement = ModelMeasurement(
        settings=settings, device_name="NVIDIA GeForce GTX 1650", precision="mixed float16",
        train_images_per_second=123.5, peak_memory_bytes=3 * 2**30, latency_ms=4.25,
        fits=True, largest_batch=96, timed_steps=10, host="box", torch_version="2.5.0",
        torchvision_version="0.20.0", measured_at="2026-12-06T21:00:00Z", error="",
        largest_is_cap=True)
    data = measurement.to_json()
    assert data["settings"] == {"model": "resnet18", "batch_size": 64, "crop_size": 224,
                                "amp": True, "finetune": "full", "device": "cuda:0"}
    assert data["largest_batch"] == 96 and data["largest_is_cap"] is True
    assert ModelMeasurement.from_json(data) == measurement and measurement.on_gpu
    older = {key: value for key, value in data.items()
             if key not in ("error", "largest_is_cap")}
    older["unknown"] = 1  # a later field this version does not know
    read = ModelMeasurement.from_json(older)
    assert (read.error, read.largest_is_cap, read.largest_batch) == ("", False, 96)
    cpu = ModelMeasurement.from_json({**data, "settings": {**data["settings"], "device": "cpu"}})
    assert not cpu.on_gpu


def test_the_machine_a_measurement_was_taken_on(monkeypatch):
    kind = platform.processor() or platform.machine() or "unknown"
    assert device_name("cpu") == f"CPU {kind}, {os.cpu_count()} cores"
    assert machine_identity("cpu") == {
        "host": platform.node() or "unknown host", "device_name": device_name("cpu"),
        "torch_version": torch.__version__, "torchvision_version": torchvision.__version__}
    # A machine that names neither itself nor its processor.
    for name in ("node", "processor", "machine"):
        monkeypatch.setattr(platform, name, lambda: "")
    assert machine_identity("cpu")["host"] == "unknown host"
    assert device_name("cpu") == f"CPU unknown, {os.cpu_count()} cores"
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert device_name("cpu") == f"CPU arm64, {os.cpu_count()} cores"


def test_a_card_is_named_as_cuda_names_it(monkeypatch):
    # torch's answer about the card, as CUDA would give it (no card on this machine).
    asked: list[torch.device] = []

    def card_name(device: torch.device) -> str:
        asked.append(device)
        return "NVIDIA GeForce GTX 1650"

    monkeypatch.setattr(torch.cuda, "get_device_name", card_name)
    assert device_name("cuda:1") == "NVIDIA GeForce GTX 1650"
    assert asked == [torch.device("cuda:1")]
