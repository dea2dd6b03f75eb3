"""Measuring a model on this machine (CPU here): training images/s with the run's step, batch-1
latency, no invented memory figure, and the measurements file that remembers them."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from workbench.core.training.tuning import measurement_cache as cache_module
from workbench.core.training.tuning import model_measurement
from workbench.core.training.tuning.batch_size_finder import TrainingStepProbe
from workbench.core.training.tuning.measurement_cache import (
    MeasurementCache,
    MeasurementCacheWarning,
    measurement_cache_path,
)
from workbench.core.training.tuning.model_measurement import (
    measure_model,
    measurement_settings,
)


def tiny(model: str, **changes) -> model_measurement.MeasurementSettings:
    return measurement_settings(model, **{"batch_size": 2, "crop_size": 32, "amp": False,
                                          "device": "cpu", **changes})


@pytest.mark.parametrize("model", ["small_cnn", "resnet18"])
def test_a_cpu_measurement_has_speed_and_latency_and_no_memory_figure(model):
    measurement = measure_model(tiny(model), warmup_steps=1, timed_steps=1, latency_runs=2)

    assert measurement.train_images_per_second > 0
    assert measurement.latency_ms > 0
    assert measurement.peak_memory_bytes is None  # never invented on the CPU
    assert measurement.fits is None and measurement.largest_batch is None
    assert measurement.precision == "float32" and measurement.error == ""
    assert measurement.settings.device == "cpu" and measurement.device_name.startswith("CPU")
    assert measurement.settings.batch_size == 2 and measurement.settings.crop_size == 32


def test_images_per_second_and_latency_come_from_the_timed_steps_only(monkeypatch):
    """A clock that moves 0.25 s between every two readings: 2 timed steps of batch 4 take
    0.5 s -> 16 images/s; every single-image run takes 250 ms. Warm-up steps are not timed."""
    ticks = itertools.count()
    monkeypatch.setattr(model_measurement.time, "perf_counter", lambda: 0.25 * next(ticks))
    steps: list[tuple[int, bool]] = []
    original_step = TrainingStepProbe.train_step

    def counting_step(self, images, labels):
        steps.append((len(labels), any(p.requires_grad for p in self.model.parameters())))
        return original_step(self, images, labels)

    monkeypatch.setattr(TrainingStepProbe, "train_step", counting_step)

    measurement = measure_model(tiny("small_cnn", batch_size=4), warmup_steps=3, timed_steps=2,
                                latency_runs=3)

    assert measurement.train_images_per_second == pytest.approx(16.0)
    assert measurement.latency_ms == pytest.approx(250.0)
    assert [batch for batch, _ in steps] == [4] * 5  # 3 warm-up + 2 timed, at the chosen batch
    assert measurement.timed_steps == 2


def test_last_layer_measures_the_head_only_as_a_run_trains_it(monkeypatch):
    trained: list[set[str]] = []
    original_step = TrainingStepProbe.train_step

    def recording_step(self, images, labels):
        loss = original_step(self, images, labels)
        trained.append({name.split(".")[0] for name, p in self.model.named_parameters()
                        if p.grad is not None})
        return loss

    monkeypatch.setattr(TrainingStepProbe, "train_step", recording_step)

    measure_model(tiny("resnet18", finetune="last_layer"), warmup_steps=0, timed_steps=1,
                  latency_runs=1)
    measure_model(tiny("resnet18", finetune="full"), warmup_steps=0, timed_steps=1,
                  latency_runs=1)

    assert trained[0] == {"fc"}
    assert {"conv1", "layer4", "fc"} <= trained[1]


def test_a_stop_request_ends_the_measurement_without_a_result():
    asked = itertools.count()
    result = measure_model(tiny("small_cnn"), warmup_steps=2, timed_steps=2, latency_runs=2,
                           should_stop=lambda: next(asked) >= 1)
    assert result is None


def test_bad_settings_are_refused_with_the_field_named():
    with pytest.raises(ValueError, match="model: unknown model 'resnet9'"):
        measurement_settings("resnet9", device="cpu")
    with pytest.raises(ValueError, match="batch_size: must be at least 1"):
        measurement_settings("resnet18", batch_size=-1, device="cpu")
    with pytest.raises(ValueError, match="finetune: 'head' is not one of"):
        measurement_settings("resnet18", finetune="head", device="cpu")
    with pytest.raises(ValueError, match="crop_size: vit_b_16 cannot train on 32 px crops"):
        measure_model(tiny("vit_b_16"), warmup_steps=0, timed_steps=1, latency_runs=1)


def test_model_defaults_fill_what_is_not_given():
    settings = measurement_settings("efficientnet_b1", device="cpu")
    assert (settings.batch_size, settings.crop_size, settings.finetune) == (32, 240,
                                                                            "last_layer")
    assert measurement_settings("small_cnn", device="cpu").crop_size == 28


# ---------------------------------------------------------------------- the measurements file
@pytest.fixture(scope="module")
def measured() -> model_measurement.ModelMeasurement:
    return measure_model(tiny("small_cnn"), warmup_steps=0, timed_steps=1, latency_runs=1)


def test_the_file_lives_in_the_image_cache_folder(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "images"))
    assert MeasurementCache().path == (tmp_path / "images" / "measurements"
                                       / "model_measurements.json")
    assert measurement_cache_path(tmp_path / "other") == (
        tmp_path / "other" / "measurements" / "model_measurements.json")


def test_a_measurement_is_found_again_for_the_same_settings_only(measured, tmp_path: Path):
    path = tmp_path / "measurements.json"
    MeasurementCache(path).put(measured)

    again = MeasurementCache(path)  # a new process reading the file
    assert again.get(measured.settings) == measured
    for change in ({"batch_size": 4}, {"crop_size": 28}, {"amp": True},
                   {"finetune": "last_layer"}, {"model": "resnet18"}):
        assert again.get(replace(measured.settings, **change)) is None, change
    assert json.loads(path.read_text())["format"] == 1


def test_another_torch_or_host_is_another_machine(measured, tmp_path: Path, monkeypatch):
    path = tmp_path / "measurements.json"
    MeasurementCache(path).put(measured)
    real = cache_module.machine_identity("cpu")
    for field, value in (("torch_version", "9.9.9"), ("host", "elsewhere"),
                         ("device_name", "CPU arm64, 4 cores"),
                         ("torchvision_version", "0.1")):
        monkeypatch.setattr(cache_module, "machine_identity",
                            lambda device, f=field, v=value: {**real, f: v})
        assert MeasurementCache(path).get(measured.settings) is None, field
    monkeypatch.setattr(cache_module, "machine_identity", lambda device: real)
    assert MeasurementCache(path).get(measured.settings) == measured


@pytest.mark.parametrize("content", [b"{not json", b'{"format": 7, "measurements": {}}',
                                     b"[1, 2]", b"\xff\xfe"])
def test_a_corrupt_file_is_ignored_with_a_warning_and_replaced(measured, tmp_path: Path,
                                                               content: bytes):
    path = tmp_path / "measurements.json"
    path.write_bytes(content)
    cache = MeasurementCache(path)

    with pytest.warns(MeasurementCacheWarning, match="measurements.json"):
        assert cache.get(measured.settings) is None
    cache.put(measured)

    assert MeasurementCache(path).get(measured.settings) == measured
