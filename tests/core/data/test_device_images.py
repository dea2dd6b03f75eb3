"""Small datasets kept on the device: real runs on generated folders, and the same crops as
the loader path."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
import torch
from PIL import Image

from tests.core.conftest import write_truncated_png
from workbench.core.data import device_images
from workbench.core.data.batched_crops import draw_resized_crops
from workbench.core.data.data_pipeline import build_data_pipeline
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.device_images import load_device_images
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.transforms import RandomResizedCropFlip
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train


class StepWatcher(Callback):
    """Messages of the run, and the child processes alive at each step."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.children_at_steps: list[int] = []
        self.start = None

    def on_run_start(self, event) -> None:
        self.start = event

    def on_message(self, event) -> None:
        self.messages.append(event.text)

    def on_step(self, event) -> None:
        self.children_at_steps.append(len(multiprocessing.active_children()))

    def said(self, text: str) -> bool:
        return any(text in message for message in self.messages)


@pytest.fixture(scope="module")
def digits(tmp_path_factory) -> Path:
    return write_shape_dataset(tmp_path_factory.mktemp("digits"), per_class=12, size=(32, 32),
                               layout="train_val", val_per_class=4, image_format="PNG")


def digits_config(data: Path, output: Path, **changes) -> TrainConfig:
    return TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=8, epochs=2,
        optimizer="sgd", lr=0.05, scheduler="none", workers=1, output_dir=str(output),
        cache_dir=str(output / "cache"), seed=1, loader_timeout=60.0,
    ).replace(**changes)


def test_a_small_dataset_trains_on_the_device_without_loader_processes(digits, tmp_path):
    watcher = StepWatcher()
    end = train(digits_config(digits, tmp_path), watcher)

    assert end.status == "completed"
    assert watcher.said("All 48 training and 16 validation images are 32x32 grey after "
                        "resizing, so they stay on cpu")
    assert watcher.children_at_steps and max(watcher.children_at_steps) == 0
    assert watcher.start.images_on_device

    through_loader = StepWatcher()
    end = train(digits_config(digits, tmp_path, images_on_device=False), through_loader)
    assert end.status == "completed"
    assert min(through_loader.children_at_steps) >= 1  # the loader process of workers=1
    assert not through_loader.said("stay on cpu")
    assert not through_loader.start.images_on_device


def test_five_crop_batches_equal_the_loader_batches(digits, tmp_path):
    config = digits_config(digits, tmp_path, crop_mode="five_crop", crop_size=24, workers=0)
    scan = scan_dataset(config.data_root, config.val_fraction, config.seed)
    pipeline = build_data_pipeline(config, scan, "cpu")
    images, report = load_device_images(config, pipeline, "cpu", RunControl())
    assert images is not None, report

    device_val = list(images.val_batches(config.batch_size))
    loader_val = list(pipeline.val_loader)
    assert len(device_val) == len(loader_val) == 2
    for (ours, our_labels), (theirs, their_labels) in zip(device_val, loader_val, strict=True):
        assert ours.shape == (8, 5, 1, 24, 24)
        assert torch.equal(ours, theirs) and torch.equal(our_labels, their_labels)
    order = torch.randperm(len(scan.train), generator=torch.Generator().manual_seed(4))
    for start, (ours, labels) in zip(range(0, len(order), 8),
                                     images.train_batches(order, 8, seed=0), strict=True):
        chosen = order[start:start + 8].tolist()
        expected = torch.stack([pipeline.train_loader.dataset[i][0] for i in chosen])
        assert torch.equal(ours, expected)
        assert labels.tolist() == [scan.train[i][1] for i in chosen]


def test_standard_batches_are_the_loader_transform_for_the_same_draws(digits, tmp_path):
    config = digits_config(digits, tmp_path, workers=0)
    scan = scan_dataset(config.data_root, config.val_fraction, config.seed)
    pipeline = build_data_pipeline(config, scan, "cpu")
    images, _ = load_device_images(config, pipeline, "cpu", RunControl())
    assert images is not None
    order = torch.arange(8)
    (batch, _), = images.train_batches(order, 8, seed=11)
    draws = draw_resized_crops(8, 32, 32, flip_probability=0.5,
                               generator=torch.Generator().manual_seed(11))
    per_image = RandomResizedCropFlip(28, 0.5)
    for index in range(8):
        resized = images.train.images[index]
        one = draws.part(index, index + 1)
        assert torch.equal(batch[index], per_image.apply(resized, one))
    assert len({tuple(batch[i].flatten().tolist()) for i in range(8)}) == 8


def test_images_of_two_sizes_stay_with_the_loader_and_say_so(tmp_path):
    data = write_shape_dataset(tmp_path / "data", per_class=6, size=(40, 32),
                               layout="train_val", val_per_class=2, image_format="PNG")
    wide = next((data / "train").glob("*/*.png"))
    Image.open(wide).resize((50, 32)).save(wide)
    watcher = StepWatcher()
    end = train(digits_config(data, tmp_path, workers=0), watcher)

    assert end.status == "completed"
    assert watcher.said("Images differ in size after resizing (40x32 grey and 50x32 grey), "
                        "so images are read in the training process.")


def test_a_dataset_over_the_budget_stays_with_the_loader(digits, tmp_path, monkeypatch):
    monkeypatch.setattr(device_images, "DEVICE_IMAGES_BYTES", 20_000)
    watcher = StepWatcher()
    end = train(digits_config(digits, tmp_path, workers=0), watcher)

    assert end.status == "completed"
    assert watcher.said("The 64 images would take about 64 KiB on cpu, more than the 20 KiB "
                        "kept there, so images are read in the training process.")


def test_an_undecodable_image_is_named_and_left_out(tmp_path):
    data = write_shape_dataset(tmp_path / "data", per_class=6, size=(32, 32),
                               layout="train_val", val_per_class=2, image_format="PNG")
    broken = next((data / "train").iterdir()) / "broken.png"
    write_truncated_png(broken)  # its header reads: the scan keeps it, decoding fails
    watcher = StepWatcher()
    end = train(digits_config(data, tmp_path, workers=0), watcher)

    assert end.status == "completed"
    assert watcher.said("stay on cpu")
    assert watcher.said("1 image(s) could not be decoded and were left out") \
        and watcher.said("broken.png")

    strict = StepWatcher()
    end = train(digits_config(data, tmp_path, workers=0, max_failed_images=0), strict)
    assert end.status == "failed"
    assert "max_failed_images" in end.error and "broken.png" in end.error


def test_validation_images_of_another_size_stay_on_the_device_beside_the_training_ones(
        tmp_path):
    # Training images are cropped from their own size, validation images from resize_size:
    # the two splits need not match, only each split within itself.
    data = write_shape_dataset(tmp_path / "data", per_class=6, size=(32, 32),
                               layout="train_val", val_per_class=2, image_format="PNG")
    for path in (data / "val").glob("*/*.png"):
        Image.open(path).resize((48, 32)).save(path)
    watcher = StepWatcher()
    end = train(digits_config(data, tmp_path, workers=0), watcher)

    assert end.status == "completed"
    assert watcher.said("are 32x32 grey (training) and 48x32 grey (validation) after resizing, "
                        "so they stay on cpu")
    assert watcher.start.images_on_device


@pytest.mark.parametrize(("workers", "decoding"), [(0, 0), (1, 0), (2, 2)])
def test_images_kept_on_the_device_are_decoded_in_this_process_unless_several_workers_share_it(
        digits, tmp_path, monkeypatch, workers, decoding):
    """One loader process decodes no faster than the training process, which waits for it,
    and costs a process start and a copy of every image back (0.36-0.42 s a run of the
    parity bench's real sets); two or more decode side by side. The images are the same."""
    started: list[int] = []

    class Recording(device_images.DataLoader):
        def __init__(self, *args, **kwargs) -> None:
            started.append(kwargs["num_workers"])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(device_images, "DataLoader", Recording)
    config = digits_config(digits, tmp_path, workers=workers)
    scan = scan_dataset(config.data_root, config.val_fraction, config.seed)
    pipeline = build_data_pipeline(config, scan, "cpu")
    images, _report = load_device_images(config, pipeline, "cpu", RunControl())

    assert started == [decoding, decoding]  # the training split, then the validation split
    monkeypatch.undo()
    reference, _ = load_device_images(digits_config(digits, tmp_path, workers=2),
                                      build_data_pipeline(config, scan, "cpu"), "cpu",
                                      RunControl())
    assert torch.equal(images.train.images, reference.train.images)
    assert torch.equal(images.val.labels, reference.val.labels)
