"""A folder of a few images a class, the size people start with, trains from the command line
with each model's own defaults: the batch is lowered to the training set, said once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.data.synthetic_images import SHAPES, write_shape_dataset

# (classes, images a class) -> (training, validation images) of the automatic 20% split,
# worked out by hand: round(8 * 0.2) = 2 and round(15 * 0.2) = 3 images a class validate.
SPLITS = {(2, 8): (12, 4), (3, 15): (36, 9)}
BATCH_DEFAULTS = {"small_cnn": 16, "resnet18": 32}  # MODEL_DEFAULTS' batch_size
# resnet18 at its 224 px crops would cost seconds an epoch here; its other defaults stay.
TINY_CROPS = {"small_cnn": [], "resnet18": ["--resize-size", "32", "--crop-size", "32"]}


@pytest.mark.slow
@pytest.mark.parametrize("model", ["small_cnn", "resnet18"])
@pytest.mark.parametrize(("classes", "per_class"), [(2, 8), (3, 15)], ids=["2x8", "3x15"])
def test_a_tiny_folder_trains_with_the_model_defaults(
        tmp_path: Path, monkeypatch, capsys, request, model: str, classes: int,
        per_class: int) -> None:
    if model == "resnet18":
        request.getfixturevalue("planted_imagenet_weights")  # its default weights: imagenet
    data = write_shape_dataset(tmp_path / "data", classes=SHAPES[:classes], per_class=per_class,
                               size=(32, 32))
    monkeypatch.chdir(tmp_path)
    code = main(["train", "--data-root", str(data), "--model", model, "--epochs", "2",
                 "--device", "cpu", "--output-dir", str(tmp_path / "runs"), *TINY_CROPS[model]])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "run completed" in err
    train_images, val_images = SPLITS[(classes, per_class)]
    batch = BATCH_DEFAULTS[model]
    clamp = (f"Batch size (batch_size) {batch} is more than the {train_images} training "
             f"images, so the run trains with a batch of {train_images}: one step an epoch, "
             "every image in it.")
    lines = err.splitlines()
    if batch > train_images:
        assert lines.count(clamp) == 1, err
    else:
        assert not any("is more than the" in line for line in lines), err
    points = round(100 / val_images)
    expectation = [line for line in lines if line.startswith("Small dataset: ")]
    assert len(expectation) == 1, err
    assert expectation[0].startswith(
        f"Small dataset: {train_images} training and {val_images} validation images. Each "
        f"validation image is ~{points} points of val accuracy")
    run_dir = next((tmp_path / "runs").iterdir())
    saved = json.loads((run_dir / "config.json").read_text())["config"]
    assert saved["batch_size"] == min(batch, train_images)
    assert (saved["model"], saved["crop_mode"]) == (model, "standard")


# The smallest model of each other family (resnet18 and small_cnn are above). ViT and Swin take
# 224 px only; the others train at 32 px here.
FAMILY_MODELS = ("mobilenet_v3_small", "efficientnet_b0", "regnet_y_400mf",
                 "shufflenet_v2_x1_0", "convnext_tiny", "swin_t", "vit_b_16")


@pytest.mark.slow
@pytest.mark.parametrize("model", FAMILY_MODELS)
def test_a_tiny_folder_trains_with_each_familys_own_defaults(
        tmp_path: Path, monkeypatch, capsys, plant_imagenet_weights, model: str) -> None:
    from workbench.core.runs.model_catalog import catalogue_defaults, model_facts

    weights = plant_imagenet_weights(model)
    data = write_shape_dataset(tmp_path / "data", classes=SHAPES[:2], per_class=8, size=(32, 32))
    crop = str(max(model_facts(model).min_size, 32))
    monkeypatch.chdir(tmp_path)

    code = main(["train", "--data-root", str(data), "--model", model, "--epochs", "2",
                 "--device", "cpu", "--output-dir", str(tmp_path / "runs"),
                 "--resize-size", crop, "--crop-size", crop])

    err = capsys.readouterr().err
    assert code == 0, err
    assert "run completed" in err
    assert f"ImageNet weights loaded from '{weights}'" in err
    defaults = catalogue_defaults(model)
    clamp = (f"Batch size (batch_size) {defaults['batch_size']} is more than the 12 training "
             "images, so the run trains with a batch of 12: one step an epoch, every image "
             "in it.")
    assert err.splitlines().count(clamp) == 1, err
    saved = json.loads((next((tmp_path / "runs").iterdir()) / "config.json").read_text())
    recipe = {name: saved["config"][name] for name in ("weights", "finetune", "optimizer",
                                                        "lr", "weight_decay", "scheduler")}
    assert recipe == {name: defaults[name] for name in recipe}
