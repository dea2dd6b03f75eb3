"""Known answers of what an export is measured on and the figures it gets, worked out by hand.

Images are flat grey levels (a crop's level says which file it came from); the speed figures
come from a runner that advances a stand-in clock by set amounts, so the median, the 95th
percentile and the images/s are computed on paper.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.core.models.hand_made_files import write_images_and_resized_copies
from workbench.core.models import export_measurement
from workbench.core.models.export_measurement import (
    LATENCY_REPEATS,
    LATENCY_WARMUP,
    THROUGHPUT_BATCH,
    THROUGHPUT_REPEATS,
    EvaluationImages,
    EvaluationUnavailable,
    ExportFigures,
    evaluation_images,
    image_logits,
    measure_speed,
    speed_inputs,
)

STANDARD = {"model": "small_cnn", "crop_mode": "standard", "resize_size": 8, "crop_size": 8,
            "in_channels": 1}


def _flat_images(folder: Path, levels: list[int], size: int = 8) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for level in levels:
        path = folder / f"{level:03d}.png"
        Image.new("L", (size, size), level).save(path)
        paths.append(str(path))
    return paths


def _levels(crops: np.ndarray) -> list[int]:
    return [int(round(v)) for v in crops.reshape(len(crops), -1).mean(axis=1)]


# ----------------------------------------------------------------- which images


def _train_val(root: Path) -> Path:
    _flat_images(root / "train" / "a", [10, 11, 12, 13, 14])
    _flat_images(root / "train" / "b", [20, 21, 22, 23, 24])
    _flat_images(root / "val" / "a", [30])
    _flat_images(root / "val" / "b", [40, 41])
    return root


def test_the_split_asked_for_is_the_one_measured_and_said(tmp_path: Path) -> None:
    root = _train_val(tmp_path / "data")
    val = evaluation_images(str(root), ["a", "b"], STANDARD)
    assert [Path(p).name for p, _ in val.samples] == ["030.png", "040.png", "041.png"]
    assert [label for _, label in val.samples] == [0, 1, 1]
    assert val.description == f"3 validation images of {root}"
    assert val.preprocessing == STANDARD
    train = evaluation_images(str(root), ["a", "b"], STANDARD, "train")
    assert len(train.samples) == 10 and train.description == f"10 training images of {root}"


def test_a_limit_takes_images_spread_over_the_split(tmp_path: Path) -> None:
    root = _train_val(tmp_path / "data")
    # 10 training images, 4 wanted: positions int(i * 10 / 4) = 0, 2, 5, 7
    four = evaluation_images(str(root), ["a", "b"], STANDARD, "train", limit=4)
    assert [Path(p).name for p, _ in four.samples] == ["010.png", "012.png", "020.png",
                                                       "022.png"]
    assert four.description == f"4 training images of {root}"
    every = evaluation_images(str(root), ["a", "b"], STANDARD, "train", limit=10)
    assert len(every.samples) == 10
    more = evaluation_images(str(root), ["a", "b"], STANDARD, "train", limit=11)
    assert len(more.samples) == 10


def test_a_folder_that_changed_or_went_is_not_measured_and_says_why(tmp_path: Path) -> None:
    root = _train_val(tmp_path / "data")
    with pytest.raises(EvaluationUnavailable) as caught:
        evaluation_images(str(root), ["a", "c"], STANDARD)
    assert str(caught.value) == (f"{root} now holds classes ['a', 'b'], the model was trained "
                                 "on ['a', 'c']")
    with pytest.raises(EvaluationUnavailable) as caught:
        evaluation_images(str(tmp_path / "gone"), ["a", "b"], STANDARD)
    assert str(caught.value).startswith("the run's images cannot be read (")
    # a limit of no image: nothing to measure on
    with pytest.raises(EvaluationUnavailable) as caught:
        evaluation_images(str(root), ["a", "b"], STANDARD, "train", limit=0)
    assert str(caught.value) == f"{root} has no train images"


def test_the_split_follows_the_runs_fraction_and_seed(tmp_path: Path) -> None:
    from workbench.core.data.training_scan import scan_for_run

    flat = tmp_path / "flat"
    _flat_images(flat / "a", list(range(10, 30)))
    _flat_images(flat / "b", list(range(40, 60)))
    images = evaluation_images(str(flat), ["a", "b"], STANDARD, "val", 0.5, 3)
    expected = scan_for_run(str(flat), 0.5, 3).val
    assert list(images.samples) == list(expected) and len(expected) == 20
    assert list(expected) != list(scan_for_run(str(flat), 0.5, 0).val)


def test_without_a_cache_folder_the_copies_are_read_from_the_default_one(tmp_path: Path,
                                                                        monkeypatch) -> None:
    """A run with no cache folder of its own split the copies its health check found in the
    default cache together; the export's validation images are that split."""
    from workbench.core.data.health.health_check import check_health
    from workbench.core.data.training_scan import scan_for_run

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "default-cache"))
    root, rng = tmp_path / "data", np.random.default_rng(0)
    write_images_and_resized_copies(root, rng)
    before = scan_for_run(str(root), 0.25, 0).val
    check_health(str(root))
    run_split = scan_for_run(str(root), 0.25, 0).val
    assert run_split != before
    images = evaluation_images(str(root), ["a", "b"], STANDARD, "val", 0.25)
    assert list(images.samples) == list(run_split)


def test_all_crops_are_every_decodable_images_crops_in_order(tmp_path: Path,
                                                             monkeypatch) -> None:
    monkeypatch.setattr(export_measurement, "_CHUNK", 2)
    paths = _flat_images(tmp_path, [50, 60, 70])
    (tmp_path / "zz.png").write_bytes(b"not an image")
    samples = tuple((p, 0) for p in [paths[0], str(tmp_path / "zz.png"), *paths[1:]])
    images = EvaluationImages(samples, STANDARD, "4 images")
    crops = images.all_crops()
    assert crops.shape == (3, 1, 8, 8) and crops.dtype == np.uint8
    assert _levels(crops) == [50, 60, 70]
    chunks = list(images.chunks(3))
    assert [(len(c), labels.tolist(), k) for c, labels, k in chunks] == [(2, [0, 0], 1),
                                                                         (1, [0], 1)]


# ----------------------------------------------------------------- logits


def test_each_images_logits_are_its_crops_mean_for_every_runner(tmp_path: Path) -> None:
    paths = _flat_images(tmp_path, [20, 80], size=12)
    five = {**STANDARD, "crop_mode": "five_crop", "resize_size": 12, "crop_size": 8}
    images = EvaluationImages(((paths[0], 1), (paths[1], 0)), five, "2 images")

    def by_position(crops: np.ndarray) -> np.ndarray:
        # crop j of each image gets logit j, float64 as a runtime might return
        return np.tile(np.arange(5.0), len(crops) // 5)[:, None] * np.ones((1, 2))

    def brightness(crops: np.ndarray) -> np.ndarray:
        level = crops.reshape(len(crops), -1).mean(axis=1)
        return np.stack([level, -level], axis=1)

    (positions, levels), labels = image_logits([by_position, brightness], images)
    assert positions.dtype == np.float32 and positions.shape == (2, 2)
    assert positions.tolist() == [[2.0, 2.0], [2.0, 2.0]]  # mean of 0..4
    assert levels.tolist() == [[20.0, -20.0], [80.0, -80.0]]
    assert labels.tolist() == [1, 0]


def test_no_decodable_image_leaves_no_logits(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"not an image")
    images = EvaluationImages(((str(tmp_path / "a.png"), 0),), STANDARD, "1 validation image")
    with pytest.raises(EvaluationUnavailable) as caught:
        image_logits([lambda crops: crops], images)
    assert str(caught.value) == "no image of the 1 validation image could be decoded"


# ----------------------------------------------------------------- speed


class _Clock:
    """A stand-in for ``time.perf_counter`` that only the runner moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_speed_is_the_median_and_95th_percentile_of_timed_runs_after_warm_up(
        monkeypatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(export_measurement.time, "perf_counter", clock)
    # warm-up runs take 1 s each (never timed); then single images 1, 2, ..., 30 ms, batches
    # 0.5, 0.1, 0.4, 0.2, 0.3 s
    singles = [1.0] * LATENCY_WARMUP + [ms / 1000 for ms in range(1, LATENCY_REPEATS + 1)]
    batches = [1.0] * LATENCY_WARMUP + [0.5, 0.1, 0.4, 0.2, 0.3]
    calls = []

    def runner(crops: np.ndarray) -> np.ndarray:
        calls.append(len(crops))
        clock.now += (singles if len(crops) == 1 else batches).pop(0)
        return np.zeros((len(crops), 2), np.float32)

    one, batch = np.zeros((1, 1, 4, 4), np.uint8), np.zeros((12, 1, 4, 4), np.uint8)
    speed = measure_speed(runner, one, batch, 6)
    # both shapes warmed up before either is timed
    assert calls == [1, 12] * LATENCY_WARMUP + [1] * LATENCY_REPEATS + [12] * THROUGHPUT_REPEATS
    assert speed.latency_ms_median == pytest.approx(15.5)  # of 1..30 ms
    assert speed.latency_ms_p95 == pytest.approx(29.0)     # the 29th of 30, ceil(0.95 x 30)
    assert speed.images_per_second == pytest.approx(6 / 0.3)  # 6 images a batch, median 0.3 s


def test_a_batch_faster_than_the_clock_gives_a_finite_figure(monkeypatch) -> None:
    monkeypatch.setattr(export_measurement.time, "perf_counter", _Clock())
    speed = measure_speed(lambda crops: crops, np.zeros((1, 1)), np.zeros((4, 1)), 4)
    assert (speed.latency_ms_median, speed.latency_ms_p95) == (0.0, 0.0)
    assert speed.images_per_second == pytest.approx(4 / 1e-9)


def test_speed_is_timed_on_the_first_image_and_the_first_batch_of_images(tmp_path: Path) -> None:
    paths = _flat_images(tmp_path, list(range(100, 140)), size=12)
    five = {**STANDARD, "crop_mode": "five_crop", "resize_size": 12, "crop_size": 8}
    images = EvaluationImages(tuple((p, 0) for p in paths), five, "40 images")
    one, batch, count = speed_inputs(images, np.zeros((1, 1, 8, 8), np.uint8))
    assert one.shape == (5, 1, 8, 8) and _levels(one) == [100] * 5  # its five crops
    assert batch.shape == (5 * THROUGHPUT_BATCH, 1, 8, 8) and count == THROUGHPUT_BATCH == 32
    assert _levels(batch)[::5] == list(range(100, 132))
    few = EvaluationImages(tuple((p, 0) for p in paths[:3]), five, "3 images")
    assert speed_inputs(few, np.zeros((1, 1, 8, 8), np.uint8))[2] == 3


def test_without_images_speed_is_timed_on_the_example(tmp_path: Path) -> None:
    example = np.full((2, 1, 8, 8), 7, np.uint8)
    one, batch, count = speed_inputs(None, example)
    assert one.shape == (1, 1, 8, 8) and batch.shape == (32, 1, 8, 8) and count == 32
    assert (batch == 7).all()
    (tmp_path / "a.png").write_bytes(b"not an image")
    broken = EvaluationImages(((str(tmp_path / "a.png"), 0),), STANDARD, "1 image")
    assert speed_inputs(broken, example)[0].shape == (1, 1, 8, 8)


# ----------------------------------------------------------------- the line of figures


def _figures(**changes) -> ExportFigures:
    values = dict(export_format="onnx-int8", path="/out/model_int8.onnx",
                  runtime="onnxruntime, CPU", size_bytes=3 * 2**20,
                  float32_size_bytes=12 * 2**20, images=60, top1_agreement=0.9833,
                  val_accuracy=0.85, float32_val_accuracy=0.8667, max_abs_logit_diff=0.2,
                  latency_ms_median=1.234, latency_ms_p95=2.5, images_per_second=12345.6,
                  verified=True, verdict="VERIFIED: within")
    return ExportFigures(**{**values, **changes})


def test_the_figures_line_says_size_accuracy_and_speed() -> None:
    assert _figures().summary() == (
        "onnx-int8: 3.00 MiB (4.0x smaller than float32); val accuracy 0.850 (float32 0.867), "
        "top-1 agreement 98.3% on 60 images; batch-1 latency 1.23 ms (p95 2.50 ms), "
        "12,346 images/s at batch 32 in onnxruntime, CPU")


def test_the_figures_line_without_accuracy_or_a_smaller_size() -> None:
    assert _figures(export_format="onnx", size_bytes=2**20, float32_size_bytes=2**20,
                    val_accuracy=None).summary() == (
        "onnx: 1.00 MiB; accuracy not measured; batch-1 latency 1.23 ms (p95 2.50 ms), "
        "12,346 images/s at batch 32 in onnxruntime, CPU")
    assert _figures(float32_size_bytes=None).summary().startswith("onnx-int8: 3.00 MiB; val")
    assert _figures(float32_size_bytes=2**20).summary().startswith("onnx-int8: 3.00 MiB; val")


def test_the_figures_dict_is_every_field() -> None:
    figures = _figures()
    assert figures.to_dict() == {
        "export_format": "onnx-int8", "path": "/out/model_int8.onnx",
        "runtime": "onnxruntime, CPU", "size_bytes": 3 * 2**20,
        "float32_size_bytes": 12 * 2**20, "images": 60, "top1_agreement": 0.9833,
        "val_accuracy": 0.85, "float32_val_accuracy": 0.8667, "max_abs_logit_diff": 0.2,
        "latency_ms_median": 1.234, "latency_ms_p95": 2.5, "images_per_second": 12345.6,
        "verified": True, "verdict": "VERIFIED: within"}
