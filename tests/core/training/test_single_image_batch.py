"""An epoch whose image count leaves one over: its last training batch holds a single image.

At a small crop a BatchNorm layer then sees a 1x1 map of one image, and torch refuses it
("Expected more than 1 value per channel when training"): a run of resnet18 at a 32 px crop
on 33 images with batch 32 failed in its first epoch with that as an unexpected error. The
step loop skips that batch (and says so once); a batch size of 1, the user's choice, trains.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback

SKIPPED = "its last training batch held a single image"


def write_grey_levels(root: Path, train_per_class: tuple[int, ...], size: int) -> Path:
    """``root/train|val/level<k>/``: grey noise around one level a class."""
    rng = np.random.default_rng(0)
    for split, counts in (("train", train_per_class), ("val", (2,) * len(train_per_class))):
        for label, count in enumerate(counts):
            folder = root / split / f"level{label}"
            folder.mkdir(parents=True)
            for index in range(count):
                level = 40 + 170 * label / max(1, len(counts) - 1)
                pixels = np.clip(level + rng.normal(0, 15, (size, size)), 0, 255)
                Image.fromarray(pixels.astype(np.uint8)).convert("RGB").save(
                    folder / f"{index}.png")
    return root


class Recorder(Callback):
    def __init__(self) -> None:
        self.steps: list = []
        self.epochs: list = []
        self.messages: list[tuple[str, str]] = []

    def on_step(self, event) -> None:
        self.steps.append(event)

    def on_epoch_end(self, event) -> None:
        self.epochs.append(event)

    def on_message(self, event) -> None:
        self.messages.append((event.level, event.text))


def _train(data: Path, output: Path, batch_size: int, crop: int, workers: int = 0,
           model: str = "resnet18") -> tuple[Recorder, object]:
    from workbench.core.training.engine import train

    config = TrainConfig(data_root=str(data), model=model, weights="none", finetune="full",
                         resize_size=crop, crop_size=crop, epochs=2, batch_size=batch_size,
                         workers=workers, device="cpu", amp=False, output_dir=str(output),
                         cache_dir=str(output / "cache"))
    recorder = Recorder()
    return recorder, train(config, recorder)


def test_the_one_image_left_over_is_skipped_and_said_once(tmp_path: Path) -> None:
    data = write_grey_levels(tmp_path / "data", (11, 11, 11), size=16)   # 33 images
    recorder, end = _train(data, tmp_path / "runs", batch_size=16, crop=16)
    assert end.status == "completed", end.error
    # 16 + 16 trained, the 33rd skipped, in each of the two epochs.
    assert [(s.epoch, s.step, s.images) for s in recorder.steps] == [
        (1, 1, 16), (1, 2, 16), (2, 1, 16), (2, 2, 16)]
    said = [text for level, text in recorder.messages if SKIPPED in text]
    assert said == [
        "Epoch 1: its last training batch held a single image, which the network's BatchNorm "
        "layers cannot train on, so it was skipped. The order is shuffled each epoch, so it is "
        "another image each time; a batch size that does not leave one image over avoids it."]


def test_a_loader_process_run_skips_it_too(tmp_path: Path) -> None:
    data = write_grey_levels(tmp_path / "data", (17, 16), size=32)       # 33 images
    recorder, end = _train(data, tmp_path / "runs", batch_size=32, crop=32, workers=1,
                           model="mobilenet_v3_small")
    assert end.status == "completed", end.error
    assert [s.images for s in recorder.steps] == [32, 32]
    assert sum(SKIPPED in text for _, text in recorder.messages) == 1


def test_a_left_over_batch_of_two_and_a_batch_size_of_one_train(tmp_path: Path) -> None:
    data = write_grey_levels(tmp_path / "two", (9, 9), size=16)           # 18 = 16 + 2
    recorder, end = _train(data, tmp_path / "runs", batch_size=16, crop=16)
    assert end.status == "completed", end.error
    assert [s.images for s in recorder.steps] == [16, 2, 16, 2]
    assert not [text for _, text in recorder.messages if SKIPPED in text]

    # Batch size 1 is every batch a single image: nothing is skipped (at 64 px resnet18's last
    # BatchNorm map is 2x2, which torch accepts).
    data = write_grey_levels(tmp_path / "three", (2, 1), size=64)
    recorder, end = _train(data, tmp_path / "runs1", batch_size=1, crop=64)
    assert end.status == "completed", end.error
    assert [s.images for s in recorder.steps] == [1, 1, 1, 1, 1, 1]
    assert not [text for _, text in recorder.messages if SKIPPED in text]
