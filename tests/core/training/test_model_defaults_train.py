"""Each model's own defaults (``MODEL_DEFAULTS``) train: the config is built the way the form
and the command line build it (``apply_model_defaults`` over the fields a user set), only the
folder, output, epochs, device and, where the network allows, a tiny crop are set here.

A default that cannot learn (an lr of 5.0, a schedule that zeroes the lr) fails: the last
epoch's training and validation losses must end below what guessing gives (ln of the class
count) and the validation accuracy well above chance. Measured on a loaded 2-core machine
(seed 0): small_cnn ends at val accuracy 0.92, train loss 0.42; resnet18 at 0.96 and 0.66
(< ln 2 = 0.69); with lr 5.0 small_cnn stays at 0.33, and resnet18's training loss ends at
10.0, blown up on the mislabelled tiles. The family tests below fail the same way with their
recipes' lr set to 5.0 or to 1e-9 (all three families, seen).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import TILE_COLOURS, draw_colour_tile
from workbench.core.data.generated.handwritten_digits import draw_digit
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.model_catalog import catalogue_defaults, scratch_recipe
from workbench.core.runs.model_defaults import (
    MODEL_DEFAULTS,
    apply_model_defaults,
    settings_for_weights,
)
from workbench.core.training.engine import train

RESNET_SCRATCH = scratch_recipe("resnet18")  # ResNet's recipe from random weights


def write_digit_folder(root: Path, digits: tuple[int, ...], per_class: int) -> Path:
    """``root/<digit>/`` of 28 px handwritten digits (the small CNN's own kind of image)."""
    rng = np.random.default_rng(0)
    for digit in digits:
        folder = root / str(digit)
        folder.mkdir(parents=True)
        for index in range(per_class):
            draw_digit(digit, rng).save(folder / f"{index:03d}.png")
    return root


def write_colour_tile_folder(root: Path, classes: int, train_per_class: int,
                             val_per_class: int, mislabelled: int, size: int) -> Path:
    """``root/train/<colour>/`` and ``root/val/<colour>/`` of tiles of one colour a class;
    ``mislabelled`` training tiles of each class have the next class's colour, as real
    folders hold a few wrong images (a learning rate far too large shows on them)."""
    rng = random.Random(0)
    for split, count in (("train", train_per_class), ("val", val_per_class)):
        for label in range(classes):
            folder = root / split / f"colour{label}"
            folder.mkdir(parents=True)
            for index in range(count):
                wrong = split == "train" and index < mislabelled
                colour = TILE_COLOURS[(label + 1) % classes if wrong else label]
                draw_colour_tile(colour, size, rng).save(folder / f"{index:03d}.png")
    return root


class EpochRecorder(Callback):
    def __init__(self) -> None:
        self.epochs: list = []
        self.messages: list[tuple[str, str]] = []

    def on_epoch_end(self, event) -> None:
        self.epochs.append(event)

    def on_message(self, event) -> None:
        self.messages.append((event.level, event.text))


def train_with_model_defaults(model: str, data: Path, output: Path, **given_too: int
                              ) -> tuple[TrainConfig, EpochRecorder, object]:
    given = dict(model=model, data_root=str(data), output_dir=str(output), device="cpu",
                 **given_too)
    config = apply_model_defaults(TrainConfig(**given), explicit=given)
    recorder = EpochRecorder()
    end = train(config, recorder)
    return config, recorder, end


def assert_learned(recorder: EpochRecorder, end, classes: int, min_accuracy: float) -> None:
    assert end.status == "completed", end.error
    losses = [epoch.train_loss for epoch in recorder.epochs]
    assert all(math.isfinite(loss) for loss in losses), losses
    guessing = math.log(classes)  # the loss of equal odds for every class
    assert losses[-1] < losses[0] and losses[-1] < guessing, losses
    assert recorder.epochs[-1].val_loss < guessing, [e.val_loss for e in recorder.epochs]
    # The model a run keeps is its best epoch's; the last epoch of a short run from scratch on
    # 80 validation images swings by an image or two between runs (regnet: 0.7375 after 0.80).
    assert end.best_val_accuracy >= min_accuracy, \
        [epoch.val_accuracy for epoch in recorder.epochs]


@pytest.mark.slow
def test_small_cnn_learns_digits_with_its_own_defaults(tmp_path: Path) -> None:
    data = write_digit_folder(tmp_path / "digits", digits=(0, 1, 7), per_class=60)
    # Its own epochs too: small_cnn's recipe says how long it trains.
    config, recorder, end = train_with_model_defaults("small_cnn", data, tmp_path / "runs")
    defaults = MODEL_DEFAULTS["small_cnn"]
    assert all(getattr(config, name) == value for name, value in defaults.items())
    assert_learned(recorder, end, classes=3, min_accuracy=0.8)  # chance is 1/3


@pytest.mark.slow
def test_resnet18_learns_colours_with_its_own_defaults(tmp_path: Path,
                                                      planted_imagenet_weights: Path) -> None:
    data = write_colour_tile_folder(tmp_path / "tiles", classes=2, train_per_class=48,
                                    val_per_class=12, mislabelled=4, size=16)
    config, recorder, end = train_with_model_defaults("resnet18", data, tmp_path / "runs",
                                                      epochs=8, resize_size=16, crop_size=16)
    tiny = {"resize_size", "crop_size"}
    defaults = MODEL_DEFAULTS["resnet18"]
    assert all(getattr(config, name) == value for name, value in defaults.items()
               if name not in tiny)
    assert config.weights == "imagenet" and config.finetune == "last_layer"
    assert any(f"ImageNet weights loaded from '{planted_imagenet_weights}'" in text
               for _, text in recorder.messages)
    # Frozen seeded features and 24 validation images: seeds 0-7 gave best val accuracies of
    # 0.83 to 1.00 (0.875 for seed 0 inside the suite), an lr of 1e-9 stays near 0.5.
    assert_learned(recorder, end, classes=2, min_accuracy=0.75)  # chance is 1/2


@pytest.mark.slow
def test_resnet18_learns_colours_from_random_weights_with_the_scratch_recipe(
        tmp_path: Path) -> None:
    data = write_colour_tile_folder(tmp_path / "tiles", classes=2, train_per_class=48,
                                    val_per_class=12, mislabelled=4, size=16)
    given = dict(model="resnet18", weights="none", data_root=str(data), device="cpu",
                 output_dir=str(tmp_path / "runs"), epochs=8, resize_size=16, crop_size=16)
    config = apply_model_defaults(TrainConfig(**given), explicit=given)
    config, notes = settings_for_weights(config, explicit=given)  # as the form and CLI do
    assert {name: getattr(config, name) for name in RESNET_SCRATCH} == RESNET_SCRATCH
    assert config.finetune == "full" and len(notes) == 2
    recorder = EpochRecorder()
    assert_learned(recorder, train(config, recorder), classes=2, min_accuracy=0.9)


@pytest.mark.slow
def test_mobilenet_from_random_weights_validates_with_recomputed_batch_norm_statistics(
        tmp_path: Path) -> None:
    """MobileNetV3's BatchNorm momentum of 0.01 leaves a small folder's running averages near
    their start: without recomputing them every validation image got the same output (val
    loss ln 2, accuracy 0.5) while training accuracy climbed."""
    data = write_colour_tile_folder(tmp_path / "tiles", classes=2, train_per_class=48,
                                    val_per_class=12, mislabelled=2, size=64)
    given = dict(model="mobilenet_v3_small", weights="none", data_root=str(data),
                 device="cpu", output_dir=str(tmp_path / "runs"), epochs=4, resize_size=64,
                 crop_size=64)
    config = apply_model_defaults(TrainConfig(**given), explicit=given)
    config, _notes = settings_for_weights(config, explicit=given)
    recorder = EpochRecorder()
    end = train(config, recorder)
    assert end.status == "completed", end.error
    # The failure was every validation image getting one output: loss ln 2 to 4 decimals,
    # accuracy 0.5, in every epoch. Four epochs of 96 images from scratch swing (a val loss of
    # 0.77 at the end in one run), so the best epoch is what is asserted, not the last.
    val_losses = [epoch.val_loss for epoch in recorder.epochs]
    # The bug's signature is ln 2 to four decimals; a learning model can pass near ln 2 in an
    # epoch on its way (0.686 in the fourth epoch of one run), so 1e-3 separates the two.
    assert all(abs(loss - math.log(2)) > 1e-3 for loss in val_losses), val_losses
    assert max(epoch.val_accuracy for epoch in recorder.epochs) >= 0.85, \
        [epoch.val_accuracy for epoch in recorder.epochs]
    assert recorder.epochs[-1].train_loss < math.log(2)
    said = [text for _, text in recorder.messages if "BatchNorm statistics recomputed" in text]
    assert len(said) == 1 and said[0].startswith("Epoch 1: ")


# Each family's smallest model, trained with its own catalogue defaults on 32 px tiles (the
# crop the test sets). shufflenet and regnet get BatchNorm statistics recomputed on other
# generated tiles (``calibrate_batch_norm``, tests/conftest.py); convnext has LayerNorm and
# its constructor weights already give features of RMS 1.0. Measured on the loaded 2-core
# machine (seed 0): shufflenet_v2_x1_0 ends at val accuracy 0.80, train loss 0.56, val 0.49;
# regnet_y_400mf at 0.82, 0.52, 0.41; convnext_tiny at 0.96, 0.49, 0.37.
# The best val accuracy is what a run keeps, and on 80 validation images it swings with the
# seed and with the machine's float rounding: seeds 0-7 gave shufflenet 0.76-0.89, seeds 0-5
# regnet 0.78-0.89, seeds 0-3 convnext 0.96-1.00, and CI's machine 0.7375 for shufflenet at
# seed 0 where this one gives 0.825. The floor is 0.7 (56 of 80; chance is 0.5): an lr of 1e-9
# stays at 0.44-0.50, an lr of 5.0 ends with a training loss of 159-263.
FAMILY_MIN_ACCURACY = 0.7
FAMILIES = [
    # model, tiles a class, epochs, BatchNorm statistics recomputed at the crop
    pytest.param("shufflenet_v2_x1_0", 160, 7, True, id="shufflenet"),
    pytest.param("regnet_y_400mf", 160, 7, True, id="regnet"),
    pytest.param("convnext_tiny", 48, 8, False, id="convnext"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "per_class", "epochs", "calibrate"), FAMILIES)
def test_family_learns_colours_with_its_own_defaults(tmp_path: Path, plant_imagenet_weights,
                                                     model: str, per_class: int, epochs: int,
                                                     calibrate: bool) -> None:
    crop = 32
    planted = plant_imagenet_weights(model, calibrate_at=crop if calibrate else None)
    data = write_colour_tile_folder(tmp_path / "tiles", classes=2, train_per_class=per_class,
                                    val_per_class=per_class // 4, mislabelled=per_class // 12,
                                    size=crop)
    config, recorder, end = train_with_model_defaults(model, data, tmp_path / "runs",
                                                      epochs=epochs, resize_size=crop,
                                                      crop_size=crop)
    tiny = {"resize_size", "crop_size"}
    defaults = catalogue_defaults(model)  # what choosing the model sets
    assert all(getattr(config, name) == value for name, value in defaults.items()
               if name not in tiny)
    assert config.weights == "imagenet" and config.finetune == "last_layer"
    assert any(f"ImageNet weights loaded from '{planted}'" in text
               for _, text in recorder.messages)
    assert_learned(recorder, end, classes=2, min_accuracy=FAMILY_MIN_ACCURACY)
