"""Known answers of the images kept on the device: the budget, the
batches in their order with reproducible draws, the collation and every sentence of the log."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image

from workbench.core.data import device_images
from workbench.core.data.data_pipeline import build_data_pipeline
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.device_images import (
    DeviceImages,
    DeviceImageSet,
    device_images_budget,
    load_device_images,
    stack_if_same_size,
)
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.image_cache import wait_for_cache_writes
from workbench.core.data.multicrop import IGNORE_LABEL
from workbench.core.data.transforms import CenterCrop, RandomResizedCropFlip
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.training.session_setup import epoch_seed


def test_the_budget_is_512_mib_or_an_eighth_of_a_smaller_card(monkeypatch):
    assert device_images_budget("cpu") == 512 * 2**20
    assert device_images_budget("mps") == 512 * 2**20
    cards = {"cuda:0": 2 * 2**30, "cuda:1": 16 * 2**30}  # stand-ins for the cards' own sizes
    monkeypatch.setattr(device_images, "memory_total", cards.__getitem__)
    assert device_images_budget("cuda:0") == 256 * 2**20
    assert device_images_budget("cuda:1") == 512 * 2**20


def _images(count: int, channels: int, side: int) -> DeviceImages:
    pixels = torch.arange(count * channels * side * side, dtype=torch.int64) % 251
    return DeviceImages(pixels.to(torch.uint8).reshape(count, channels, side, side),
                        torch.arange(count) * 10)


def test_sizes_in_bytes_and_images():
    train, val = _images(3, 1, 4), _images(2, 3, 4)
    assert len(train) == 3 and len(val) == 2
    assert train.nbytes == 48 and val.nbytes == 96
    floats = DeviceImages(torch.zeros(2, 1, 2, 2), torch.zeros(2))
    assert floats.nbytes == 32  # four bytes a float pixel
    both = DeviceImageSet(train, val, RandomResizedCropFlip(4, 0.5), CenterCrop(2))
    assert both.nbytes == 144


def test_training_batches_follow_the_order_and_flip_exactly_as_drawn():
    # The whole image is the crop (scale and ratio 1) and every image is flipped: known pixels.
    data = _images(5, 1, 4)
    flip_all = RandomResizedCropFlip(4, 1.0, scale=(1.0, 1.0), ratio=(1.0, 1.0))
    images = DeviceImageSet(data, data, flip_all, CenterCrop(2))
    order = torch.tensor([3, 0, 4, 1, 2])
    batches = list(images.train_batches(order, 2, seed=5))
    assert [labels.tolist() for _, labels in batches] == [[30, 0], [40, 10], [20]]
    pixels = torch.cat([batch for batch, _ in batches])
    assert pixels.dtype == torch.uint8 and pixels.shape == (5, 1, 4, 4)
    assert torch.equal(pixels, data.images[order].flip(-1))


def test_each_seed_gives_its_own_draws_and_the_same_seed_the_same_ones():
    data = _images(6, 3, 12)
    images = DeviceImageSet(data, data, RandomResizedCropFlip(8, 0.5), CenterCrop(8))
    order = torch.arange(6)

    def epoch(seed: int) -> torch.Tensor:
        batches = list(images.train_batches(order, 4, seed))
        assert [batch.shape for batch, _ in batches] == [(4, 3, 8, 8), (2, 3, 8, 8)]
        return torch.cat([batch for batch, _ in batches])

    first = epoch(epoch_seed(0, 0, "crops"))
    torch.manual_seed(123)  # the process-wide generator plays no part
    assert torch.equal(epoch(epoch_seed(0, 0, "crops")), first)
    assert not torch.equal(epoch(epoch_seed(0, 1, "crops")), first)
    # The draws of the first batch come from a fresh generator with the seed itself.
    generator = torch.Generator().manual_seed(epoch_seed(0, 0, "crops"))
    own = RandomResizedCropFlip(8, 0.5).batch(data.images[:4], generator)
    assert torch.equal(first[:4], own)


def test_validation_batches_are_center_crops_of_every_image_in_order():
    data = _images(5, 1, 6)
    images = DeviceImageSet(data, data, RandomResizedCropFlip(4, 0.5), CenterCrop(2))
    batches = list(images.val_batches(2))
    assert [labels.tolist() for _, labels in batches] == [[0, 10], [20, 30], [40]]
    pixels = torch.cat([batch for batch, _ in batches])
    assert torch.equal(pixels, data.images[:, :, 2:4, 2:4])


def test_same_sizes_are_stacked_and_two_sizes_are_named():
    a = torch.full((1, 4, 5), 1, dtype=torch.uint8)
    b = torch.full((1, 4, 5), 2, dtype=torch.uint8)
    stacked, labels = stack_if_same_size([(a, 3), (b, 1)])
    assert torch.equal(stacked, torch.stack([a, b]))
    assert labels.dtype == torch.long and labels.tolist() == [3, 1]

    wide = torch.zeros((3, 4, 6), dtype=torch.uint8)
    colour = torch.zeros((3, 4, 5), dtype=torch.uint8)
    assert stack_if_same_size([(colour, 0), (wide, 1)])[0] == "5x4 and 6x4"
    text, labels = stack_if_same_size([(a, 0), (b, 0), (wide, 1)])
    assert text == "5x4 grey and 6x4" and labels.tolist() == [0, 0, 1]


def test_an_undecodable_images_stand_in_takes_its_neighbours_size_as_zeros():
    stand_in = torch.full((1, 8, 8), 9, dtype=torch.uint8)  # its nominal size, not the real one
    a = torch.full((1, 4, 5), 7, dtype=torch.uint8)
    stacked, labels = stack_if_same_size([(stand_in, IGNORE_LABEL), (a, 2)])
    assert stacked.shape == (2, 1, 4, 5) and stacked.dtype == torch.uint8
    assert int(stacked[0].sum()) == 0 and torch.equal(stacked[1], a)
    assert labels.tolist() == [IGNORE_LABEL, 2]
    # Nothing decoded: the stand-ins keep their own size.
    alone, _ = stack_if_same_size([(stand_in, IGNORE_LABEL), (stand_in, IGNORE_LABEL)])
    assert alone.shape == (2, 1, 8, 8) and int(alone.sum()) == 0
    single, _ = stack_if_same_size([(stand_in, IGNORE_LABEL)])
    assert single.shape == (1, 1, 8, 8)


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> Path:
    """48 training and 16 validation grey images of 48x32: 1,536 bytes each at resize 32."""
    return write_shape_dataset(tmp_path_factory.mktemp("wide"), per_class=12, size=(48, 32),
                               layout="train_val", val_per_class=4, image_format="PNG")


def _load(data: Path, tmp_path: Path, control: RunControl | None = None, **changes):
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", crop_mode="standard",
        resize_size=32, crop_size=28, batch_size=8, workers=0, output_dir=str(tmp_path),
        cache_dir=str(tmp_path / "cache"), seed=1,
    ).replace(**changes)
    scan = scan_dataset(config.data_root, config.val_fraction, config.seed)
    pipeline = build_data_pipeline(config, scan, "cpu")
    return load_device_images(config, pipeline, "cpu", control or RunControl())


def test_images_that_fit_stay_and_the_log_says_their_size_and_bytes(wide, tmp_path):
    images, report = _load(wide, tmp_path)
    assert report == ("All 48 training and 16 validation images are 48x32 grey after resizing, "
                      "so they stay on cpu (96 KiB) and are cropped there a batch at a time, "
                      "with no loader processes.")
    assert images.train.images.shape == (48, 1, 32, 48)
    assert images.val.images.shape == (16, 1, 32, 48)
    assert images.train.images.dtype == torch.uint8 and images.nbytes == 64 * 1536
    assert torch.bincount(images.train.labels).tolist() == [12, 12, 12, 12]
    assert isinstance(images.eval_transform, CenterCrop) and images.eval_transform.size == 28
    assert images.train_transform.size == 28


def test_the_estimate_at_validation_size_and_the_real_sizes_are_checked(
        wide, tmp_path, monkeypatch):
    # The estimate counts 32x32 (65,536 bytes); the real images take 1,536 bytes each.
    monkeypatch.setattr(device_images, "DEVICE_IMAGES_BYTES", 65_535)
    assert _load(wide, tmp_path, workers=2) == (None, (
        "The 64 images would take about 64 KiB on cpu, more than the 64 KiB kept there, so "
        "images are read by 2 loader process(es)."))
    monkeypatch.setattr(device_images, "DEVICE_IMAGES_BYTES", 65_536)  # the estimate exactly
    assert _load(wide, tmp_path) == (None, (
        "The images would take 72 KiB, more than the 64 KiB left, so images are read in the "
        "training process."))
    monkeypatch.setattr(device_images, "DEVICE_IMAGES_BYTES", 80_000)  # 6,272 left for val
    assert _load(wide, tmp_path) == (None, (
        "The images would take 24 KiB, more than the 6 KiB left, so images are read in the "
        "training process."))
    monkeypatch.setattr(device_images, "DEVICE_IMAGES_BYTES", 65_536 + 32_768)
    assert _load(wide, tmp_path)[0] is not None


def test_a_cancel_while_loading_stops_the_decoding(wide, tmp_path):
    control = RunControl()
    control.request_cancel()
    assert _load(wide, tmp_path, control) == (None, (
        "The run was stopped while its images were loading, so images are read in the "
        "training process."))


def test_colour_images_count_three_bytes_a_pixel_in_the_estimate(wide, tmp_path, monkeypatch):
    # 64 colour images at 32x32: 196,608 bytes estimated.
    monkeypatch.setattr(device_images, "DEVICE_IMAGES_BYTES", 196_607)
    assert _load(wide, tmp_path, model="resnet18") == (None, (
        "The 64 images would take about 192 KiB on cpu, more than the 192 KiB kept there, so "
        "images are read in the training process."))


def test_small_images_are_enlarged_for_validation_only_and_the_log_names_both_sizes(tmp_path):
    data = write_shape_dataset(tmp_path / "data", per_class=2, size=(24, 24),
                               layout="train_val", val_per_class=1, image_format="PNG")
    images, report = _load(data, tmp_path, crop_size=20, workers=1)  # one loader process
    assert report.startswith("All 8 training and 4 validation images are 24x24 grey "
                             "(training) and 32x32 grey (validation) after resizing, so")
    assert images.train.images.shape == (8, 1, 24, 24)
    assert images.val.images.shape == (4, 1, 32, 32)


def test_a_second_size_is_named_within_a_hand_over_and_between_two(tmp_path, monkeypatch):
    data = write_shape_dataset(tmp_path / "data", per_class=2, size=(32, 32),
                               layout="train_val", val_per_class=1, image_format="PNG")
    last = sorted((data / "train").glob("*/*.png"))[-1]
    Image.open(last).resize((40, 32)).save(last)
    expected = ("Images differ in size after resizing (32x32 grey and 40x32 grey), so images "
                "are read in the training process.")
    assert _load(data, tmp_path) == (None, expected)
    monkeypatch.setattr(device_images, "LOAD_BATCH", 1)  # one image a hand-over
    assert _load(data, tmp_path) == (None, expected)
    monkeypatch.setattr(device_images, "LOAD_BATCH", 7)  # the wide one alone in the second
    assert _load(data, tmp_path) == (None, expected)


def test_the_decoding_uses_the_configs_interpolation_and_fills_the_disk_cache(tmp_path):
    data = write_shape_dataset(tmp_path / "data", per_class=2, size=(24, 24),
                               layout="train_val", val_per_class=1, image_format="PNG")
    smooth, _ = _load(data, tmp_path / "bilinear", cache_images=True)
    sharp, _ = _load(data, tmp_path / "bicubic", interpolation="bicubic")
    # Validation images are enlarged from 24 to 32: the two filters give other pixels.
    assert not torch.equal(smooth.val.images, sharp.val.images)
    assert torch.equal(smooth.train.images, sharp.train.images)  # kept at 24x24, not resized
    wait_for_cache_writes()  # the files are written by a background thread (a run's end waits)
    cached = list((tmp_path / "bilinear" / "cache").rglob("*.npy"))
    assert len(cached) == 12  # 8 training and 4 validation images
