"""A folder of 2 classes x 8 images trains in the app with the defaults: pick the folder,
Start, and the run completes; the log says once, as information, that the batch was lowered
to the training set."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from workbench.core.data.synthetic_images import write_shape_dataset

RUN_TIMEOUT_MS = 120_000


@pytest.mark.slow
@pytest.mark.parametrize("model", ["resnet18", "small_cnn", "convnext_tiny"])
def test_a_tiny_folder_trains_with_the_app_defaults(qtbot, window, tmp_path: Path,
                                                    plant_imagenet_weights, model: str) -> None:
    if model != "small_cnn":  # default weights: ImageNet's (convnext_tiny: AdamW's recipe)
        plant_imagenet_weights(model)
    data = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=8,
                               size=(32, 32))
    form = window.config_form
    assert form.config().model == "resnet18"  # a new window starts with the default model
    if model != "resnet18":
        form.edit_field("model", model)  # as a user picks it: its defaults fill the form
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=30_000):
        window.open_folder(str(data))
    form.edit_field("epochs", 2)
    form.edit_field("output_dir", str(tmp_path / "runs"))
    if model != "small_cnn":  # 224 px crops would cost seconds an epoch on this CPU
        form.edit_field("resize_size", 32)
        form.edit_field("crop_size", 32)
    batch = {"resnet18": 32, "small_cnn": 16, "convnext_tiny": 32}[model]  # its default
    assert (form.config().batch_size, form.config().crop_mode) == (batch, "standard")
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)  # pre-flight

    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        qtbot.mouseClick(window.controls.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)

    assert ended.args[0].status == "completed", ended.args[0].error
    # 8 images a class: round(8 * 0.2) = 2 validate, so 2 x 6 = 12 train.
    said = (f"Batch size (batch_size) {batch} is more than the 12 training images, so the run "
            "trains with a batch of 12: one step an epoch, every image in it.")
    log = window.log_panel.toPlainText()
    assert log.count(said) == 1, log
    assert f"ERROR: {said}" not in log and f"WARNING: {said}" not in log
    assert window.log_panel.count("error") == 0, log
    assert form.config().batch_size == batch  # the form keeps what the user set
