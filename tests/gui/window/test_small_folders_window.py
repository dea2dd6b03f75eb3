"""A tiny folder (2 classes x 8 images, 3 x 15) trains in the app with a model family's
defaults: pick the model so its defaults fill the form, open the folder, Start, and the run
completes with the family's recipe; where the default batch exceeds the training set the log
says once, as information, that the batch was lowered to it.

Every family's defaults filling the form is checked without training; two runs go through
Start (a batch lowered to the training set, and one that fits). Every family trains from the
command line in tests/cli/test_small_folders.py: the same engine, so the window does not train
them all again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from tests.cli.test_small_folders import (
    MODELS,
    RECIPE,
    SPLITS,
    clamp_sentence,
    tiny_crop,
)
from workbench.core.data.generated.synthetic_images import SHAPES, write_shape_dataset

RUN_TIMEOUT_MS = 120_000
# (model, classes, images a class): mobilenet's batch of 32 is lowered to 12 training images;
# small_cnn's 16 fits 36.
TRAINED_CASES = [("mobilenet_v3_small", 2, 8), ("small_cnn", 3, 15)]


@pytest.mark.parametrize("model", MODELS)
def test_picking_a_model_fills_the_form_with_its_familys_defaults(window, model: str) -> None:
    from workbench.core.runs.model_defaults import defaults_for

    defaults = defaults_for(model)
    form = window.config_form
    assert form.config().model == "resnet18"  # a new window starts with the default model
    if model != "resnet18":
        form.edit_field("model", model)  # as a user picks it
    shown = form.config()
    assert shown.batch_size == defaults["batch_size"]
    recipe = {name: getattr(shown, name) for name in RECIPE if name in defaults}
    assert recipe == {name: defaults[name] for name in recipe}


@pytest.mark.slow
@pytest.mark.parametrize(("model", "classes", "per_class"), TRAINED_CASES)
def test_a_tiny_folder_trains_with_a_familys_app_defaults(
        qtbot, window, tmp_path: Path, plant_imagenet_weights, model: str, classes: int,
        per_class: int) -> None:
    from workbench.core.runs.model_defaults import defaults_for

    defaults = defaults_for(model)
    if defaults["weights"] == "imagenet":
        plant_imagenet_weights(model)
    data = write_shape_dataset(tmp_path / "data", classes=SHAPES[:classes], per_class=per_class,
                               size=(32, 32))
    form = window.config_form
    assert form.config().model == "resnet18"  # a new window starts with the default model
    if model != "resnet18":
        form.edit_field("model", model)  # as a user picks it: its defaults fill the form
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=30_000):
        window.open_folder(str(data))
    form.edit_field("epochs", 2)
    form.edit_field("output_dir", str(tmp_path / "runs"))
    crop = tiny_crop(model)
    if crop is not None:  # the weights' 224 px crops would cost seconds an epoch on this CPU
        form.edit_field("resize_size", crop)
        form.edit_field("crop_size", crop)
    batch = defaults["batch_size"]
    shown = form.config()
    assert (shown.batch_size, shown.crop_mode) == (batch, "standard")
    assert {name: getattr(shown, name) for name in ("optimizer", "lr", "scheduler",
                                                    "finetune")} == {
        name: defaults[name] for name in ("optimizer", "lr", "scheduler", "finetune")}
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)  # pre-flight

    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        qtbot.mouseClick(window.controls.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)

    assert ended.args[0].status == "completed", ended.args[0].error
    train_images = SPLITS[(classes, per_class)][0]
    log = window.log_panel.toPlainText()
    if batch > train_images:
        said = clamp_sentence(batch, train_images)
        assert log.count(said) == 1, log
        assert f"ERROR: {said}" not in log and f"WARNING: {said}" not in log
    else:
        assert "is more than the" not in log, log
    assert window.log_panel.count("error") == 0, log
    assert form.config().batch_size == batch  # the form keeps what the user set
    saved = json.loads((next((tmp_path / "runs").iterdir()) / "config.json").read_text())
    config = saved["config"]
    assert (config["model"], config["batch_size"]) == (model, min(batch, train_images))
    recipe = {name: config[name] for name in RECIPE if name in defaults}
    assert recipe == {name: defaults[name] for name in recipe}
