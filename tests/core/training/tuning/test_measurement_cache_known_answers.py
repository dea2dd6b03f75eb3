"""Known answers of the measurements file: the key a measurement is filed under, the file's
layout, a hit and a miss for known settings, and the exact warning for each unreadable case."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from workbench.core.training.tuning.measurement_cache import (
    MeasurementCache,
    MeasurementCacheWarning,
    measurement_key,
)
from workbench.core.training.tuning.model_measurement import (
    MeasurementSettings,
    ModelMeasurement,
    machine_identity,
)

SETTINGS = MeasurementSettings("small_cnn", 8, 28, False, "full", "cpu")
IDENTITY = {"host": "lab-pc", "device_name": "CPU x86_64, 2 cores", "torch_version": "2.5.1",
            "torchvision_version": "0.20.1"}


def measurement(settings: MeasurementSettings = SETTINGS) -> ModelMeasurement:
    here = machine_identity(settings.device)
    return ModelMeasurement(settings, here["device_name"], "float32", 412.5, None, 1.25, None,
                            None, 3, here["host"], here["torch_version"],
                            here["torchvision_version"], "2026-12-06T20:00:00+00:00")


def test_the_key_is_the_identity_and_settings_as_sorted_json():
    assert measurement_key(SETTINGS, IDENTITY) == (
        '{"amp": false, "batch_size": 8, "crop_size": 28, "device": "cpu", '
        '"device_name": "CPU x86_64, 2 cores", "finetune": "full", "host": "lab-pc", '
        '"model": "small_cnn", "torch_version": "2.5.1", "torchvision_version": "0.20.1"}')


def test_the_file_is_indented_sorted_json_under_the_key_of_this_machine(tmp_path: Path):
    path = tmp_path / "m.json"
    MeasurementCache(path).put(measurement())
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n "format": 1,\n "measurements": {\n  "{\\"amp\\": false, ')
    assert text.endswith("}\n")
    # Each entry's fields are sorted too: 'device_name' before 'settings'.
    assert text.index('\n   "device_name": ') < text.index('\n   "settings": {')
    key = measurement_key(SETTINGS, machine_identity("cpu"))
    assert list(json.loads(text)["measurements"]) == [key]


def test_a_hit_and_a_miss_from_one_read(tmp_path: Path):
    path = tmp_path / "m.json"
    MeasurementCache(path).put(measurement())
    other = MeasurementSettings("small_cnn", 16, 28, False, "full", "cpu")
    found = MeasurementCache(path).get_many([SETTINGS, other])
    assert found == [measurement(), None]
    assert found[0].train_images_per_second == 412.5


def test_a_second_measurement_is_added_beside_the_first_and_a_new_one_replaces_its_own(
        tmp_path: Path):
    path = tmp_path / "m.json"
    cache = MeasurementCache(path)
    other = MeasurementSettings("small_cnn", 16, 28, False, "full", "cpu")
    cache.put(measurement())
    cache.put(measurement(other))
    newer = ModelMeasurement(**{**measurement().__dict__, "latency_ms": 2.5})
    cache.put(newer)
    assert len(json.loads(path.read_text())["measurements"]) == 2
    assert [m.latency_ms for m in MeasurementCache(path).get_many([SETTINGS, other])] == [2.5,
                                                                                          1.25]


def test_putting_over_a_corrupt_file_replaces_it_without_a_warning(tmp_path: Path):
    path = tmp_path / "m.json"
    path.write_text("{not json", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MeasurementCache(path).put(measurement())
    assert MeasurementCache(path).get(SETTINGS) == measurement()


def warning_text(cache: MeasurementCache) -> str:
    with pytest.warns(MeasurementCacheWarning) as caught:
        assert cache.get(SETTINGS) is None
    assert len(caught) == 1
    return str(caught[0].message)


def test_an_entry_that_is_not_a_measurement_is_measured_again(tmp_path: Path):
    path = tmp_path / "m.json"
    key = measurement_key(SETTINGS, machine_identity("cpu"))
    path.write_text(json.dumps({"format": 1, "measurements": {key: {"settings": {}}}}))
    assert warning_text(MeasurementCache(path)) == (
        f"Model measurements file {path} an entry for small_cnn is not a measurement "
        "(MeasurementSettings.__init__() missing 6 required positional arguments: 'model', "
        "'batch_size', 'crop_size', 'amp', 'finetune', and 'device'); it is measured again.")


def test_another_format_is_named_in_the_warning(tmp_path: Path):
    path = tmp_path / "m.json"
    path.write_text('{"format": 7, "measurements": {}}')
    assert warning_text(MeasurementCache(path)) == (
        f"Model measurements file {path} is not a measurements file (format 7, not 1); it is "
        "ignored and replaced by the next measurement.")


def test_measurements_that_are_not_a_mapping_are_not_a_measurements_file(tmp_path: Path):
    path = tmp_path / "m.json"
    path.write_text('{"format": 1, "measurements": [1, 2]}')
    assert warning_text(MeasurementCache(path)) == (
        f"Model measurements file {path} is not a measurements file (its measurements are a "
        "list, not a mapping); it is ignored and replaced by the next measurement.")


def test_a_folder_in_place_of_the_file_cannot_be_read_or_written(tmp_path: Path):
    path = tmp_path / "m.json"
    path.mkdir()
    assert warning_text(MeasurementCache(path)) == (
        f"Model measurements file {path} cannot be read (Is a directory [EISDIR]); "
        "measurements are not remembered.")
    with pytest.warns(MeasurementCacheWarning) as caught:
        MeasurementCache(path).put(measurement())  # no exception: the caller keeps its figure
    assert [str(w.message).startswith(f"Model measurements file {path} cannot be written: ")
            for w in caught] == [True]


def test_a_file_that_is_not_text_names_the_decoding_error(tmp_path: Path):
    path = tmp_path / "m.json"
    path.write_bytes(b"\xff\xfe")
    assert warning_text(MeasurementCache(path)) == (
        f"Model measurements file {path} cannot be read ('utf-8' codec can't decode byte 0xff "
        "in position 0: invalid start byte); measurements are not remembered.")
