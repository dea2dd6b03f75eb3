"""A folder of a few images a class, the size people start with, trains from the command line
with each model family's own defaults: the batch is lowered to the training set, said once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.data.generated.synthetic_images import SHAPES, write_shape_dataset

# (classes, images a class) -> (training, validation images) of the automatic 20% split,
# worked out by hand: round(8 * 0.2) = 2 and round(15 * 0.2) = 3 images a class validate.
SPLITS = {(2, 8): (12, 4), (3, 15): (36, 9)}
# One model of each family the catalogue offers, the smallest: small_cnn and resnet18 (the
# written-out defaults) and the torchvision families whose defaults come from their weights.
FAMILY_MODELS = ("mobilenet_v3_small", "efficientnet_b0", "regnet_y_400mf",
                 "shufflenet_v2_x1_0", "convnext_tiny", "swin_t", "vit_b_16")
MODELS = ("small_cnn", "resnet18", *FAMILY_MODELS)
# ViT and Swin train at 224 px only: 3 x 15 images cost ~30-40 s a run on this CPU (the two
# together more than doubled these files' time), so they train the 2 x 8 folder; at 3 x 15 the
# only difference, a batch that fits, is the other families' path too.
AT_224_ONLY = ("swin_t", "vit_b_16")
CASES = [pytest.param(model, classes, per_class, id=f"{classes}x{per_class}-{model}")
         for classes, per_class in SPLITS for model in MODELS
         if (classes, per_class) == (2, 8) or model not in AT_224_ONLY]
# The settings that make a family's recipe; the crops are lowered below and the batch clamped.
RECIPE = ("weights", "finetune", "optimizer", "lr", "momentum", "weight_decay", "scheduler",
          "lr_step_size", "lr_gamma", "label_smoothing", "crop_mode")


def tiny_crop(model: str) -> int | None:
    """The smallest crop ``model`` takes, at least 32 px (ViT and Swin: 224 only), so the suite
    keeps its time; None for small_cnn, whose own 28 px already are."""
    if model == "small_cnn":
        return None
    from workbench.core.runs.model_catalog import model_facts

    return max(model_facts(model).min_size, 32)


def clamp_sentence(batch: int, train_images: int) -> str:
    return (f"Batch size (batch_size) {batch} is more than the {train_images} training "
            f"images, so the run trains with a batch of {train_images}: one step an epoch, "
            "every image in it.")


@pytest.mark.slow
@pytest.mark.parametrize(("model", "classes", "per_class"), CASES)
def test_a_tiny_folder_trains_with_each_familys_own_defaults(
        tmp_path: Path, monkeypatch, capsys, plant_imagenet_weights, model: str, classes: int,
        per_class: int) -> None:
    from workbench.core.runs.model_defaults import defaults_for

    defaults = defaults_for(model)
    weights = plant_imagenet_weights(model) if defaults["weights"] == "imagenet" else None
    data = write_shape_dataset(tmp_path / "data", classes=SHAPES[:classes], per_class=per_class,
                               size=(32, 32))
    crop = tiny_crop(model)
    crops = [] if crop is None else ["--resize-size", str(crop), "--crop-size", str(crop)]
    monkeypatch.chdir(tmp_path)

    code = main(["train", "--data-root", str(data), "--model", model, "--epochs", "2",
                 "--device", "cpu", "--output-dir", str(tmp_path / "runs"), *crops])

    err = capsys.readouterr().err
    assert code == 0, err
    assert "run completed" in err
    if weights is not None:
        assert f"ImageNet weights loaded from '{weights}'" in err
    train_images, val_images = SPLITS[(classes, per_class)]
    batch = defaults["batch_size"]
    lines = err.splitlines()
    if batch > train_images:
        assert lines.count(clamp_sentence(batch, train_images)) == 1, err
    else:
        assert not any("is more than the" in line for line in lines), err
    points = round(100 / val_images)
    expectation = [line for line in lines if line.startswith("Small dataset: ")]
    assert len(expectation) == 1, err
    assert expectation[0].startswith(
        f"Small dataset: {train_images} training and {val_images} validation images. Each "
        f"validation image is ~{points} points of val accuracy")
    saved = json.loads((next((tmp_path / "runs").iterdir()) / "config.json").read_text())
    config = saved["config"]
    assert config["model"] == model
    assert config["batch_size"] == min(batch, train_images)
    recipe = {name: config[name] for name in RECIPE if name in defaults}
    assert recipe == {name: defaults[name] for name in recipe}
    assert recipe.keys() >= {"weights", "finetune", "optimizer", "lr", "scheduler"}
