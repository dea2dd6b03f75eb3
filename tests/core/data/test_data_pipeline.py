"""Datasets, loaders and on-device batch preparation over generated folders."""

from __future__ import annotations

import random
import threading
import warnings
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch.utils.data import WeightedRandomSampler

from workbench.core.data import data_pipeline
from workbench.core.data.batch_preparation import BatchPreparer, normalise_in_one_pass
from workbench.core.data.batched_crops import draw_resized_crops
from workbench.core.data.data_pipeline import (
    ImageSampleDataset,
    build_data_pipeline,
    inverse_frequency_weights,
)
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.decode_failures import read_failure_log, read_warning_log
from workbench.core.data.generated.synthetic_images import draw_shape_image, write_shape_dataset
from workbench.core.data.image_cache import load_image_uint8
from workbench.core.data.transforms import build_eval_transform, build_train_transform
from workbench.core.runs.config import TrainConfig


def _dataset(tmp_path: Path, per_class=(6, 10), broken: bool = True) -> Path:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"),
                               per_class=list(per_class), size=(64, 48), image_format="JPEG")
    if broken:
        good = (root / "circle" / "circle_0000.jpg").read_bytes()
        (root / "circle" / "truncated.jpg").write_bytes(good[: len(good) // 3])
    return root


def _config(root: Path, tmp_path: Path, **changes) -> TrainConfig:
    values = dict(data_root=str(root), resize_size=40, crop_size=32, batch_size=4, workers=0,
                  cache_dir=str(tmp_path / "cache"), seed=0)
    values.update(changes)
    return TrainConfig(**values)


def _all_labels(loader) -> list[int]:
    return [int(label) for _, labels in loader for label in labels]


def test_dataset_returns_uint8_crops_and_survives_a_broken_image(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    config = _config(root, tmp_path, crop_mode="five_crop")
    good = str(root / "square" / "square_0001.jpg")
    bad = str(root / "circle" / "truncated.jpg")
    log = tmp_path / "failures.tsv"
    dataset = ImageSampleDataset([(good, 1), (bad, 0)], build_eval_transform(config), 40,
                                 False, None, str(log))

    image, label = dataset[0]
    assert image.dtype == torch.uint8 and tuple(image.shape) == (5, 3, 32, 32) and label == 1
    expected = build_eval_transform(config)(load_image_uint8(good, 40))
    assert torch.equal(image, expected)

    placeholder, label = dataset[1]
    assert label == -1 and tuple(placeholder.shape) == (5, 3, 32, 32)
    assert placeholder.dtype == torch.uint8 and not placeholder.any()
    path, reason = log.read_text().rstrip("\n").split("\t")
    assert path == bad and "cannot decode image" in reason


def test_pipeline_batches_the_whole_epoch_and_reports_failures(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    scan = scan_dataset(root)
    config = _config(root, tmp_path, crop_mode="ten_crop")
    log = str(tmp_path / "failures.tsv")
    pipeline = build_data_pipeline(config, scan, "cpu", failure_log=log)

    assert pipeline.crops_per_sample == 10 and pipeline.sampler == "shuffle"
    assert pipeline.class_weights is None and pipeline.failure_log == log
    loader = pipeline.train_loader
    assert loader.batch_size == 4 and loader.num_workers == 0 and not loader.pin_memory
    assert loader.drop_last is False
    shapes = []
    labels = []
    for images, batch_labels in loader:
        shapes.append(tuple(images.shape[1:]))
        assert images.dtype == torch.uint8
        labels += batch_labels.tolist()
    assert set(shapes) == {(10, 3, 32, 32)}
    truncated = str(root / "circle" / "truncated.jpg")
    expected = Counter(-1 if path == truncated else label for path, label in scan.train)
    assert Counter(labels) == expected
    val_labels = _all_labels(pipeline.val_loader)
    assert Counter(val_labels) == Counter(
        -1 if path == truncated else label for path, label in scan.val
    )
    _all_labels(pipeline.val_loader)  # a second pass logs the failure again; it is listed once
    failures = read_failure_log(pipeline.failure_log)
    assert [path for path, _ in failures] == [truncated]
    assert "cannot decode image" in failures[0][1]


def test_shuffle_is_reproducible_with_the_seed_and_val_keeps_order(tmp_path: Path) -> None:
    root = _dataset(tmp_path, broken=False, per_class=(12, 12))
    scan = scan_dataset(root)
    orders = []
    for seed in (5, 5, 6):
        config = _config(root, tmp_path, crop_mode="standard", seed=seed, cache_images=False)
        pipeline = build_data_pipeline(config, scan, "cpu")
        orders.append(_all_labels(pipeline.train_loader))
    assert orders[0] == orders[1]
    assert orders[0] != orders[2]
    assert sorted(orders[0]) == sorted(label for _, label in scan.train)
    assert _all_labels(pipeline.val_loader) == [label for _, label in scan.val]


def test_weighted_loss_gives_inverse_frequency_weights(tmp_path: Path) -> None:
    root = _dataset(tmp_path, broken=False, per_class=(5, 15))
    scan = scan_dataset(root)
    assert scan.train_counts() == [4, 12]
    pipeline = build_data_pipeline(_config(root, tmp_path, imbalance="weighted_loss"), scan, "cpu")
    assert pipeline.class_weights.dtype == torch.float32
    assert torch.allclose(pipeline.class_weights, torch.tensor([1.5, 0.5]))
    assert torch.allclose(inverse_frequency_weights([1, 2, 4]).mean(), torch.tensor(1.0))
    assert pipeline.sampler == "shuffle"


def test_weighted_sampler_balances_classes_reproducibly(tmp_path: Path) -> None:
    root = _dataset(tmp_path, broken=False, per_class=(5, 30))
    scan = scan_dataset(root)
    config = _config(root, tmp_path, imbalance="weighted_sampler", seed=3)
    pipeline = build_data_pipeline(config, scan, "cpu")
    sampler = pipeline.train_loader.sampler
    assert isinstance(sampler, WeightedRandomSampler) and pipeline.sampler == "weighted_sampler"
    assert pipeline.class_weights is None
    drawn = [scan.train[i][1] for _ in range(20) for i in sampler]
    assert 0.4 < drawn.count(0) / len(drawn) < 0.6  # 4 of 28 images, drawn about half the time
    first = list(build_data_pipeline(config, scan, "cpu").train_loader.sampler)
    second = list(build_data_pipeline(config, scan, "cpu").train_loader.sampler)
    assert first == second


def test_small_cnn_gets_grayscale_and_digits_normalisation(tmp_path: Path) -> None:
    root = _dataset(tmp_path, broken=False, per_class=(3, 3))
    scan = scan_dataset(root)
    config = _config(root, tmp_path, model="small_cnn", weights="none", crop_mode="standard")
    pipeline = build_data_pipeline(config, scan, "cpu")
    images, _ = next(iter(pipeline.val_loader))
    assert tuple(images.shape[1:]) == (1, 32, 32)
    assert pipeline.mean == (0.1307,) and pipeline.std == (0.3081,)


def test_cache_folder_choice_and_pinning(tmp_path: Path, monkeypatch) -> None:
    root = _dataset(tmp_path, broken=False, per_class=(3, 3))
    scan = scan_dataset(root)
    cached = build_data_pipeline(_config(root, tmp_path), scan, "cpu")
    _all_labels(cached.train_loader)
    assert len(list((tmp_path / "cache").rglob("*.npy"))) == len(scan.train)

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "default"))
    default = build_data_pipeline(_config(root, tmp_path, cache_dir=""), scan, "cpu")
    assert default.train_loader.dataset.cache_dir == str(tmp_path / "default")
    uncached = build_data_pipeline(_config(root, tmp_path, cache_images=False), scan, "cpu")
    assert uncached.train_loader.dataset.cache_dir is None

    on_cuda = build_data_pipeline(_config(root, tmp_path), scan, "cuda")
    assert on_cuda.train_loader.pin_memory and on_cuda.val_loader.pin_memory
    unpinned = build_data_pipeline(_config(root, tmp_path, pin_memory=False), scan, "cuda:0")
    assert not unpinned.train_loader.pin_memory


def test_worker_processes_load_batches_and_log_failures(tmp_path: Path) -> None:
    root = _dataset(tmp_path, per_class=(4, 4))
    (root / "square" / "garbage.png").write_bytes(b"not a png at all")
    scan = scan_dataset(root, val_fraction=0.01)  # one val image a class: train holds the rest
    config = _config(root, tmp_path, crop_mode="five_crop", workers=2)
    log = str(tmp_path / "failures.tsv")
    pipeline = build_data_pipeline(config, scan, "cpu", failure_log=log)
    loader = pipeline.train_loader
    assert loader.num_workers == 2 and loader.persistent_workers and loader.prefetch_factor == 4
    for _ in range(2):  # persistent workers serve the second epoch too
        labels = _all_labels(loader)
        assert len(labels) == len(scan.train)
    broken = {Path(p).name for p, _ in read_failure_log(pipeline.failure_log)}
    expected = {Path(p).name for p, _ in scan.train} & {"truncated.jpg", "garbage.png"}
    assert broken == expected and labels.count(-1) == len(expected)


def test_batch_preparer_normalises_flattens_and_orders_memory() -> None:
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (2, 5, 3, 6, 7), dtype=torch.uint8, generator=generator)
    labels = torch.tensor([1, -1])
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    preparer = BatchPreparer(mean, std, "cpu", channels_last=True)
    floats, out_labels = preparer(images, labels)

    assert floats.dtype == torch.float32 and tuple(floats.shape) == (10, 3, 6, 7)
    assert floats.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(out_labels, labels)
    flat = images.flatten(0, 1).float() / 255
    expected = (flat - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)
    assert torch.allclose(floats, expected, atol=1e-5)
    assert torch.equal(preparer.denormalize(floats), images.flatten(0, 1))

    plain, _ = BatchPreparer(mean, std, "cpu", channels_last=False)(images[:, 0], labels)
    assert plain.is_contiguous() and tuple(plain.shape) == (2, 3, 6, 7)


def test_batch_preparer_refuses_wrong_inputs() -> None:
    preparer = BatchPreparer((0.5,), (0.25,), "cpu", channels_last=False)
    with pytest.raises(TypeError, match="uint8"):
        preparer(torch.zeros(1, 1, 4, 4), torch.zeros(1))
    with pytest.raises(ValueError, match="3 channel"):
        preparer(torch.zeros(1, 3, 4, 4, dtype=torch.uint8), torch.zeros(1))
    with pytest.raises(ValueError, match="one value per channel"):
        BatchPreparer((0.5, 0.5), (0.25,), "cpu", channels_last=False)


def test_jpeg_and_png_mix_in_one_batch(tmp_path: Path) -> None:
    root = _dataset(tmp_path, broken=False, per_class=(3, 3))
    draw_shape_image("circle", (50, 70), random.Random(1)).save(root / "circle" / "tall.png")
    scan = scan_dataset(root)
    config = _config(root, tmp_path, crop_mode="standard", batch_size=8)
    images, labels = next(iter(build_data_pipeline(config, scan, "cpu").train_loader))
    assert tuple(images.shape) == (len(scan.train), 3, 32, 32) and len(labels) == len(scan.train)


def test_decoded_images_stay_in_memory_within_the_budget_and_only_when_caching(
    tmp_path, monkeypatch
):
    import workbench.core.data.data_pipeline as data_pipeline

    root = _dataset(tmp_path, per_class=(2, 2), broken=False)
    samples = [(str(path), 0) for path in sorted(root.rglob("*.jpg"))]
    cached = ImageSampleDataset(samples, lambda image: image, 40, False, str(tmp_path / "cache"))
    uncached = ImageSampleDataset(samples, lambda image: image, 40, False, None)
    one_image = cached[0][0].numel()
    monkeypatch.setattr(data_pipeline, "MEMORY_CACHE_BYTES", 2 * one_image)
    first = [cached[index][0] for index in range(len(samples))]
    assert uncached[0][1] == 0
    for path, _ in samples:  # from now on only memory can answer
        Path(path).unlink()
    (tmp_path / "cache").rename(tmp_path / "cache-gone")

    again = [cached[index] for index in range(len(samples))]

    assert [label for _, label in again] == [0, 0, -1, -1]  # the budget held two images
    assert all(torch.equal(a, b) for a, b in zip(first[:2], [t for t, _ in again[:2]],
                                                  strict=True))
    assert uncached[0][1] == -1  # caching off: nothing was kept, the file is read again


def test_a_batch_of_same_size_images_is_cropped_in_one_go(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    config = _config(root, tmp_path, crop_mode="standard")
    good = sorted(str(p) for p in (root / "square").glob("*.jpg"))[:4]
    bad = str(root / "circle" / "truncated.jpg")
    dataset = ImageSampleDataset([(p, 1) for p in good] + [(bad, 0)],
                                 build_train_transform(config), 40, False, None)
    transform = build_train_transform(config)

    torch.manual_seed(7)
    batch = dataset.__getitems__([0, 1, 2, 3])
    torch.manual_seed(7)
    draws = draw_resized_crops(4, 40, 53, flip_probability=0.5)  # 64x48 resized to 53x40
    for index, (crop, label) in enumerate(batch):
        one = draws.part(index, index + 1)
        assert torch.equal(crop, transform.apply(load_image_uint8(good[index], 40), one))
        assert label == 1

    # A batch with a broken image falls back to one crop per image and keeps the placeholder.
    mixed = dataset.__getitems__([0, 4, 1])
    assert [label for _, label in mixed] == [1, -1, 1]
    assert all(tuple(crop.shape) == (3, 32, 32) for crop, _ in mixed)
    assert not mixed[1][0].any()


@pytest.mark.parametrize("channels_last", [False, True])
def test_the_one_pass_normalisation_of_the_gpu_path_is_the_formula(channels_last: bool) -> None:
    # The function the GPU path calls, run here on the CPU, against (x / 255 - mean) / std.
    generator = torch.Generator().manual_seed(1)
    images = torch.randint(0, 256, (4, 3, 5, 6), dtype=torch.uint8, generator=generator)
    images[0, :, 0, 0] = 0
    images[0, :, 0, 1] = 255
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    preparer = BatchPreparer(mean, std, "cpu", channels_last=channels_last)
    layout = torch.channels_last if channels_last else torch.contiguous_format

    floats = normalise_in_one_pass(images, preparer.scale, preparer.shift, layout)

    for c in range(3):
        want = (images[:, c].double() / 255.0 - mean[c]) / std[c]
        torch.testing.assert_close(floats[:, c].double(), want, rtol=0, atol=2e-6)
    assert floats.dtype == torch.float32 and floats.is_contiguous(memory_format=layout)
    assert floats[0, 0, 0, 0].item() == pytest.approx(-mean[0] / std[0], abs=1e-6)
    assert floats[0, 2, 0, 1].item() == pytest.approx((1 - mean[2]) / std[2], abs=1e-6)
    cpu_path, _ = preparer(images, torch.zeros(4))
    torch.testing.assert_close(floats, cpu_path, rtol=0, atol=1e-6)


def test_a_batch_decodes_in_threads_with_the_same_samples_failures_and_warnings(
        tmp_path: Path, monkeypatch, png_with_a_broken_exif_block) -> None:
    root = _dataset(tmp_path)
    odd = root / "square" / "odd_exif.png"
    png_with_a_broken_exif_block(odd)
    good = sorted(str(p) for p in (root / "square").glob("*.jpg"))[:3]
    bad = str(root / "circle" / "truncated.jpg")
    samples = [(good[0], 1), (str(odd), 1), (bad, 0), (good[1], 1), (good[2], 1)]
    indices = [0, 1, 2, 3, 4, 0]  # a sampler may repeat an image within a batch
    transform = build_eval_transform(_config(root, tmp_path, crop_mode="five_crop"))
    decoding_threads: set[str] = set()
    original_decode = data_pipeline.ImageSampleDataset._decode

    def spy(self, index):
        decoding_threads.add(threading.current_thread().name)
        return original_decode(self, index)

    monkeypatch.setattr(data_pipeline.ImageSampleDataset, "_decode", spy)
    # Files this small decode in the calling thread (threads would cost more than they save)...
    monkeypatch.setattr(data_pipeline, "decode_threads", lambda: 4)
    ImageSampleDataset(samples, transform, 40, False, None).__getitems__(indices)
    assert decoding_threads == {threading.current_thread().name}
    # ...larger ones (photos) in threads: here every file counts as large.
    monkeypatch.setattr(data_pipeline, "PARALLEL_DECODE_MIN_BYTES", 0)
    results = {}
    for threads in (1, 4):
        monkeypatch.setattr(data_pipeline, "decode_threads", lambda threads=threads: threads)
        log = tmp_path / f"failures-{threads}.tsv"
        dataset = ImageSampleDataset(samples, transform, 40, False,
                                     str(tmp_path / f"cache-{threads}"), str(log))
        with warnings.catch_warnings(record=True) as escaped:
            warnings.simplefilter("always")
            results[threads] = dataset.__getitems__(indices)
        assert not [w for w in escaped if "Tag data" in str(w.message)]  # in the log only
        assert [(Path(p).name, "cannot decode" in r) for p, r in read_failure_log(str(log))] \
            == [("truncated.jpg", True)]
        assert [(Path(p).name, "Tag data" in w) for p, w in read_warning_log(str(log))] \
            == [("odd_exif.png", True)]
    assert any(name.startswith("workbench-decode") for name in decoding_threads)
    assert [label for _, label in results[4]] == [1, 1, -1, 1, 1, 1]
    for (one, label_one), (many, label_many) in zip(results[1], results[4], strict=True):
        assert torch.equal(one, many) and label_one == label_many
