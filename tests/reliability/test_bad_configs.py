"""Settings that cannot work are refused before training, naming the field; limits hold exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.conftest import write_truncated_png
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train


class _Recorder(Callback):
    def __init__(self) -> None:
        self.names: list[str] = []
        self.messages: list[str] = []
        self.levels: list[str] = []

    def on_run_start(self, event) -> None:
        self.names.append("on_run_start")

    def on_step(self, event) -> None:
        self.names.append("on_step")

    def on_message(self, event) -> None:
        self.messages.append(event.text)
        self.levels.append(event.level)

    def on_run_end(self, event) -> None:
        self.names.append("on_run_end")


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    """Two classes, 5 training and 2 validation images each: 10 training images."""
    return write_shape_dataset(tmp_path_factory.mktemp("shapes"), classes=("circle", "square"),
                               per_class=5, size=(40, 32), layout="train_val", val_per_class=2)


def _config(root: Path, output: Path, **changes) -> TrainConfig:
    base = TrainConfig(
        data_root=str(root), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=4, epochs=1,
        optimizer="sgd", lr=0.01, scheduler="none", workers=0, output_dir=str(output),
        cache_images=False, cache_features=False, seed=2,
    )
    return base.replace(**changes)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"crop_size": 40}, "Crop size (crop_size): 40 is larger than resize_size 32"),
        ({"resize_size": 4, "crop_size": 4},
         "Resize shorter side to (resize_size): must be at least 8"),
        ({"crop_size": 0}, "Crop size (crop_size): must be at least 8"),
        ({"batch_size": 0}, "Batch size (batch_size): must be at least 1"),
        ({"epochs": 0}, "Epochs (epochs): must be at least 1"),
        ({"lr": -0.1}, "Learning rate (lr): must be greater than 0"),
        ({"momentum": 1.5}, "Momentum (momentum): must be in [0, 1)"),
        ({"weight_decay": -1.0}, "Weight decay (weight_decay): must not be negative"),
        ({"workers": -2}, "Loader workers (workers): must not be negative"),
        ({"max_failed_images": -1}, "Max failed images (max_failed_images): must not be negative"),
        ({"loader_timeout": 0.0}, "Loader timeout (loader_timeout): must be more than 0 seconds"),
        ({"val_fraction": 1.5}, "Validation fraction (val_fraction): must be between 0 and 1"),
        ({"crop_mode": "six_crop"}, "Crop mode (crop_mode): 'six_crop' is not one of"),
        ({"device": "tpu"}, "Device (device): 'tpu' is not"),
    ],
    ids=lambda value: "-".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, dict) else "",
)
def test_a_setting_that_cannot_work_is_refused_before_training(
    shapes: Path, tmp_path: Path, changes: dict, expected: str
) -> None:
    recorder = _Recorder()
    end = train(_config(shapes, tmp_path / "runs", **changes), recorder)
    assert end.status == "failed"
    assert expected in end.error
    assert recorder.names == ["on_run_end"]  # nothing started, no step taken
    assert any(expected in text for text in recorder.messages)


def test_a_batch_of_exactly_the_training_set_trains(shapes: Path, tmp_path: Path) -> None:
    recorder = _Recorder()
    end = train(_config(shapes, tmp_path / "runs", batch_size=10), recorder)
    assert end.status == "completed", end.error
    assert recorder.names.count("on_step") == 1


@pytest.mark.parametrize("batch_size", [11, 500])
def test_a_batch_larger_than_the_training_set_trains_on_the_whole_set(
    shapes: Path, tmp_path: Path, batch_size: int
) -> None:
    recorder = _Recorder()
    end = train(_config(shapes, tmp_path / "runs", batch_size=batch_size, epochs=2), recorder)
    assert end.status == "completed", end.error
    assert recorder.names.count("on_step") == 2  # one step an epoch
    said = [(level, text) for level, text in zip(recorder.levels, recorder.messages,
                                                   strict=True) if "batch_size" in text]
    assert said == [("info", f"Batch size (batch_size) {batch_size} is more than the 10 "
                             "training images, so the run trains with a batch of 10: one "
                             "step an epoch, every image in it.")]
    saved = json.loads((Path(end.run_dir) / "config.json").read_text())["config"]
    assert saved["batch_size"] == 10  # the batch the run used


@pytest.mark.parametrize(("broken", "allowed", "status"), [(1, 0, "failed"), (1, 1, "completed")])
def test_max_failed_images_is_a_strict_limit(
    tmp_path: Path, broken: int, allowed: int, status: str
) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=5,
                               size=(40, 32), layout="train_val", val_per_class=2)
    bad = sorted((root / "train" / "square").glob("*.png"))[:broken]
    for path in bad:
        write_truncated_png(path)  # its header reads: the scan keeps it, decoding fails
    end = train(_config(root, tmp_path / "runs", max_failed_images=allowed))
    assert end.status == status
    if status == "failed":
        assert end.error.startswith("max_failed_images: 1 image could not be decoded")
        assert str(bad[0]) in end.error and "image file is truncated" in end.error


def test_a_cache_dir_that_is_a_file_is_refused_naming_it(shapes: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "cache.txt"
    blocker.write_text("not a folder")
    recorder = _Recorder()
    end = train(_config(shapes, tmp_path / "runs", cache_images=True, cache_dir=str(blocker)),
                recorder)
    assert end.status == "failed"
    assert f"Image cache folder (cache_dir): '{blocker}' is a file; choose a folder" in end.error
    assert blocker.read_text() == "not a folder"


def test_a_nearly_full_disk_gets_no_cache_files_and_the_run_still_trains(
    shapes: Path, tmp_path: Path, monkeypatch
) -> None:
    from workbench.core.data import cache_folder

    cache = tmp_path / "cache"
    # As if the disk had less free space than the reserve the cache leaves for checkpoints.
    monkeypatch.setattr(cache_folder, "FREE_SPACE_RESERVE",
                        cache_folder.free_bytes(tmp_path) + 2**30)
    recorder = _Recorder()
    end = train(_config(shapes, tmp_path / "runs", cache_images=True, cache_dir=str(cache),
                        epochs=2), recorder)
    assert end.status == "completed", end.error
    assert any(m.startswith(f"Resized images are cached in {cache}") for m in recorder.messages)
    assert any(m.startswith("cache_dir: the 14 images of this dataset not cached yet take")
               for m in recorder.messages)
    assert cache_folder.cache_usage(cache).files == 0
    assert (Path(end.run_dir) / "last.pt").is_file()  # the checkpoint still got written


def test_a_dataset_already_cached_gets_no_warning_on_a_nearly_full_disk(
    shapes: Path, tmp_path: Path, monkeypatch
) -> None:
    from workbench.core.data import cache_folder
    from workbench.core.data.dataset_scan import scan_dataset
    from workbench.core.training.session_setup import uncached_share

    cache = tmp_path / "cache"
    config = _config(shapes, tmp_path / "runs", cache_images=True, cache_dir=str(cache))
    scan = scan_dataset(str(shapes))
    samples = scan.train + scan.val
    assert uncached_share(samples, config, str(cache)) == 1.0
    assert train(config, _Recorder()).status == "completed"  # fills the cache
    assert uncached_share(samples, config, str(cache)) == 0.0
    # Another resize_size: validation images must be decoded again; the training crops'
    # source (sized from the crop size, see train_source_size) is still in the cache.
    other_resize = config.replace(resize_size=30)
    assert uncached_share(scan.val, other_resize, str(cache)) == 1.0
    assert uncached_share(scan.train, other_resize, str(cache)) == 0.0

    monkeypatch.setattr(cache_folder, "FREE_SPACE_RESERVE",
                        cache_folder.free_bytes(tmp_path) + 2**30)
    recorder = _Recorder()
    assert train(config, recorder).status == "completed"
    assert any(m.startswith(f"Resized images are cached in {cache}") for m in recorder.messages)
    assert not any(m.startswith("cache_dir:") for m in recorder.messages)
