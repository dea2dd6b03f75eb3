"""ConfigForm: a config survives the round trip through the widgets, and every problem that
``TrainConfig.validate()`` reports is shown next to its own field."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QLineEdit

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.config_fields import FIELDS
from workbench.core.runs.model_catalog import scratch_recipe
from workbench.gui.panels.config_form import ConfigForm
from workbench.gui.widgets.form_fields import FieldRow

RESNET_SCRATCH = scratch_recipe("resnet18")  # ResNet's recipe from random weights


def unusual_config(tmp_path: Path) -> TrainConfig:
    """A config that differs from the defaults in every field the form shows."""
    weights = tmp_path / "weights.pt"
    weights.write_bytes(b"not really weights")
    return TrainConfig(
        data_root=str(tmp_path), val_fraction=0.35, model="small_cnn", weights="file",
        weights_file=str(weights), finetune="full", crop_mode="ten_crop",
        crop_strategy="repeat_labels", resize_size=300, crop_size=250, train_hflip=False,
        epochs=17, batch_size=12, optimizer="adamw", lr=3.5e-5, momentum=0.85,
        weight_decay=2.5e-3, scheduler="cosine", lr_step_size=4, lr_gamma=0.35,
        imbalance="weighted_sampler", amp=False, channels_last=False, workers=3,
        pin_memory=False, cache_images=False, cache_dir=str(tmp_path / "image-cache"),
        cache_features=False, max_steps_per_epoch=9,
        seed=1234, deterministic=True, device="cpu", output_dir=str(tmp_path / "out"),
        run_name="trial-7", resume="",
    )


def test_config_round_trips_through_the_widgets(qtbot, form, tmp_path):
    config = unusual_config(tmp_path)
    assert config != TrainConfig()
    with qtbot.waitSignal(form.config_changed) as blocker:
        form.set_config(config)

    assert blocker.args == [config]
    # A fresh form reads the values back from its widgets, not from a stored copy.
    fresh = ConfigForm()
    qtbot.addWidget(fresh)
    fresh.set_config(config)
    assert fresh.config() == config
    assert form.config() == config
    assert form.problems() == []
    assert TrainConfig.from_json(form.config().to_json()) == config


def test_editing_a_widget_updates_the_config_and_emits_it(qtbot, form):
    spin = form.field_widget("epochs")
    with qtbot.waitSignal(form.config_changed) as blocker:
        spin.setValue(42)
    assert blocker.args[0].epochs == 42
    assert form.config().epochs == 42


def _set_widget(form: ConfigForm, field: str, value: object) -> None:
    """Change ``field`` the way a user does: through its widget's own setter."""
    widget = form.field_widget(field)
    if hasattr(widget, "setValue"):
        widget.setValue(value)
    elif hasattr(widget, "setChecked"):
        widget.setChecked(bool(value))
    elif hasattr(widget, "findData"):  # a combo box lists labels; the value is the item data
        widget.setCurrentIndex(widget.findData(value))
    else:  # a text field, possibly with a browse button
        widget.findChild(QLineEdit).setText(str(value))


INVALID_FIELDS = [
    ("lr", 0.0),
    ("momentum", 1.0),
    ("weight_decay", -0.1),
    ("epochs", 0),
    ("batch_size", 0),
    ("resize_size", 4),
    ("crop_size", 400),
    ("lr_step_size", 0),
    ("lr_gamma", 0.0),
    ("workers", -1),
    ("seed", -5),
    ("val_fraction", 1.0),
    ("max_steps_per_epoch", -1),
]


@pytest.mark.parametrize(("field", "value"), INVALID_FIELDS)
def test_each_invalid_field_shows_the_engine_message_next_to_it(form, field, value):
    _set_widget(form, field, value)

    expected = [text for name, text in form.config().field_problems() if name == field]
    assert len(expected) == 1, form.config().validate()
    assert getattr(form.config(), field) == value
    assert form.field_problem_text(field) == expected[0]
    assert expected[0] in form.problems()
    row = form.findChild(FieldRow, f"field_{field}")
    assert row is not None and row.error_label.isVisible() and row.isEnabled()
    problems = form.config().field_problems()
    for other, _ in INVALID_FIELDS:  # every other field shows exactly its own messages
        own = [text for name, text in problems if name == other]
        assert form.field_problem_text(other) == "\n".join(own)


def test_problem_clears_when_the_value_is_fixed(form):
    _set_widget(form, "lr", 0.0)
    assert form.field_problem_text("lr").startswith("Learning rate (lr): must be greater than 0")
    _set_widget(form, "lr", 0.01)
    assert form.field_problem_text("lr") == ""
    assert form.problems() == []


def test_zero_can_be_typed_into_the_learning_rate(qtbot, form):
    spin = form.field_widget("lr")
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, "0")
    qtbot.keyClick(spin, Qt.Key.Key_Tab)
    assert form.config().lr == 0.0
    assert form.field_problem_text("lr") == "Learning rate (lr): must be greater than 0 (got 0.0)"


def test_text_and_choice_problems_are_shown_at_their_fields(form, tmp_path):
    form.update_config(model="small_cnn", weights="imagenet", output_dir="")
    assert form.field_problem_text("weights").startswith(
        "Starting weights (weights): small_cnn has no ImageNet")
    assert form.field_problem_text("output_dir") == (
        "Output folder (output_dir): choose where runs are saved")

    missing = tmp_path / "missing.pt"
    form.update_config(weights="file", weights_file=str(missing))
    assert form.field_problem_text("weights_file") == (
        f"Weights file (weights_file): file '{missing}' does not exist")


def test_problems_of_fields_the_form_does_not_show_are_listed_on_top(form):
    form.update_config(data_root="")
    assert form.other_problems_text() == "Data folder (data_root): choose an image folder"
    assert "Data folder (data_root): choose an image folder" in form.problems()


def test_the_image_cache_folder_is_greyed_out_while_caching_is_off(form, tmp_path):
    row = form.findChild(FieldRow, "field_cache_dir")
    assert row.isEnabled()  # cache_images is on by default
    form.field_widget("cache_images").setChecked(False)
    assert not row.isEnabled() and form.config().cache_images is False
    form.field_widget("cache_images").setChecked(True)
    _set_widget(form, "cache_dir", str(tmp_path / "images"))
    assert row.isEnabled() and form.config().cache_dir == str(tmp_path / "images")


def test_choosing_a_model_applies_its_defaults_to_the_fields_not_edited(qtbot, form):
    _set_widget(form, "epochs", 5)
    _set_widget(form, "lr", 0.2)
    _set_widget(form, "model", "small_cnn")

    config = form.config()
    assert (config.weights, config.finetune, config.crop_size, config.resize_size) == \
        ("none", "full", 28, 28)
    assert form.field_widget("crop_size").value() == 28  # the widgets show it too
    assert (config.epochs, config.lr) == (5, 0.2)  # edited by the user: kept
    assert "small_cnn defaults applied" in form.defaults_note_text()
    assert form.problems() == []


def test_weights_none_turns_last_layer_into_full_with_a_note(qtbot, form):
    assert form.config().finetune == "last_layer"
    _set_widget(form, "weights", "none")
    assert form.config().finetune == "full"
    assert form.field_widget("finetune").currentText() == FIELDS["finetune"].choices["full"]
    assert "learns next to nothing" in form.defaults_note_text()


def test_the_recipe_follows_the_weights_both_ways_unless_the_user_set_it(qtbot, form):
    fine_tuning = {name: getattr(form.config(), name) for name in RESNET_SCRATCH}
    _set_widget(form, "weights", "none")
    config = form.config()
    assert {name: getattr(config, name) for name in RESNET_SCRATCH} == RESNET_SCRATCH
    assert form.field_widget("optimizer").currentText() == FIELDS["optimizer"].choices["adamw"]
    assert "the recipe for training every layer from random weights" in \
        form.defaults_note_text()
    _set_widget(form, "weights", "imagenet")
    assert {name: getattr(form.config(), name) for name in RESNET_SCRATCH} == fine_tuning
    assert "resnet18's fine-tuning recipe for pretrained weights" in form.defaults_note_text()

    _set_widget(form, "lr", 0.03)  # the user's own lr: the recipe is theirs from now on
    _set_widget(form, "weights", "none")
    assert (form.config().optimizer, form.config().lr) == ("sgd", 0.03)
    assert form.problems() == []


def test_a_loaded_configs_recipe_survives_editing_another_field(qtbot, form):
    """A config loaded from a file or a past run is the user's: editing its epochs must not
    swap its recipe for the one its weights would get."""
    loaded = form.config().replace(model="resnet18", weights="none", finetune="full",
                                   optimizer="sgd", lr=0.05, scheduler="cosine")
    form.set_config(loaded)
    _set_widget(form, "epochs", 7)
    config = form.config()
    assert (config.optimizer, config.lr, config.scheduler, config.epochs) == \
        ("sgd", 0.05, "cosine", 7)
    assert form.defaults_note_text() == ""


def _label_of(form: ConfigForm, field: str) -> str:
    """The text the form shows for ``field``: its row label, or its check box's text."""
    widget = form.field_widget(field)
    if isinstance(widget, QCheckBox):
        return widget.text()
    row = form.findChild(FieldRow, f"field_{field}")
    assert row is not None, f"{field} has no row in the settings form (_LAYOUT)"
    layout = row.parentWidget().layout()
    return layout.labelForField(row).text()


def test_labels_tooltips_and_choices_come_from_the_field_descriptions(form):
    for name, description in FIELDS.items():
        if name in ("data_root", "device", "resume"):
            continue  # edited elsewhere: the dataset panel, the device panel, the menu
        assert _label_of(form, name) == description.label, name
        tooltip = form.field_widget(name).toolTip()
        assert tooltip.startswith(description.help) and "Default: " in tooltip, name
    crop_mode = form.field_widget("crop_mode")
    assert crop_mode.currentText() == FIELDS["crop_mode"].choices["standard"]  # resnet18
    assert [crop_mode.itemText(i) for i in range(crop_mode.count())] == list(
        FIELDS["crop_mode"].choices.values())
    assert form.field_widget("crop_strategy").currentText() == (
        "Average the crops' logits (one prediction per image)")
    assert form.field_widget("finetune").currentText() == "Last layer only (frozen backbone)"
    assert "Unit: pixels." in form.field_widget("crop_size").toolTip()
    assert form.field_widget("crop_strategy").toolTip().endswith(
        "Used only with five or ten crops. Default: Average the crops' logits (one prediction "
        "per image).")


def _enabled(form: ConfigForm, field: str) -> bool:
    return form.findChild(FieldRow, f"field_{field}").isEnabled()


def test_fields_the_settings_ignore_are_greyed_out(form):
    _set_widget(form, "crop_mode", "standard")
    assert not _enabled(form, "crop_strategy") and _enabled(form, "train_hflip")
    _set_widget(form, "crop_mode", "ten_crop")
    assert _enabled(form, "crop_strategy") and not _enabled(form, "train_hflip")

    cuda_only = ("amp", "amp_dtype", "channels_last", "pin_memory", "oom_retry_smaller_batch")
    form.set_cuda_available(False)
    assert not any(_enabled(form, field) for field in cuda_only)
    form.set_cuda_available(True)
    assert all(_enabled(form, field) for field in cuda_only)
    form.update_config(device="cpu")  # a CUDA machine told to train on the CPU
    assert not any(_enabled(form, field) for field in cuda_only)
    form.update_config(device="auto")
    _set_widget(form, "amp", False)
    assert not _enabled(form, "amp_dtype") and _enabled(form, "amp")

    assert _enabled(form, "val_fraction")
    form.set_dataset_split(True)
    assert not _enabled(form, "val_fraction")
    form.set_dataset_split(False)
    assert _enabled(form, "val_fraction")


def test_a_greyed_out_field_with_a_problem_stays_editable(form):
    form.set_dataset_split(True)
    _set_widget(form, "val_fraction", 1.0)
    assert _enabled(form, "val_fraction")
    assert form.field_problem_text("val_fraction").startswith(
        "Validation fraction (val_fraction): must be between 0 and 1")


AUGMENTATION_VALUES = {
    "color_jitter_brightness": 0.4, "color_jitter_contrast": 0.3,
    "color_jitter_saturation": 0.2, "color_jitter_hue": 0.1, "rotation_degrees": 15.0,
    "auto_augment": "rand_augment", "rand_augment_num_ops": 3, "rand_augment_magnitude": 12,
    "mixup_alpha": 0.2, "cutmix_alpha": 1.0, "label_smoothing": 0.1,
}


def test_augmentation_rows_edit_the_config_and_grey_out_with_five_or_ten_crops(form):
    group = form.findChild(FieldRow, "field_mixup_alpha").parentWidget()
    assert group.title() == "Augmentation (training only)"
    _set_widget(form, "crop_mode", "standard")
    assert not _enabled(form, "rand_augment_num_ops")  # no RandAugment chosen yet
    for field, value in AUGMENTATION_VALUES.items():
        assert _enabled(form, field), field
        _set_widget(form, field, value)
    assert {f: getattr(form.config(), f) for f in AUGMENTATION_VALUES} == AUGMENTATION_VALUES
    assert form.problems() == []

    # Five crops are fixed: every pixel augmentation on is refused at its own row, which
    # stays editable so it can be set back to off.
    _set_widget(form, "crop_mode", "five_crop")
    assert form.field_problem_text("rotation_degrees") == (
        "Random rotation (rotation_degrees): applies only with one crop per image (crop_mode "
        "standard); five_crop crops are fixed, so set it to 0 or choose standard")
    assert _enabled(form, "rotation_degrees")
    _set_widget(form, "rotation_degrees", 0.0)
    assert form.field_problem_text("rotation_degrees") == ""
    assert not _enabled(form, "rotation_degrees")
    assert not _enabled(form, "rand_augment_magnitude")  # not a problem, only ignored
    assert _enabled(form, "label_smoothing")  # a loss setting, for every crop mode
    for field in ("color_jitter_brightness", "color_jitter_contrast",
                  "color_jitter_saturation", "color_jitter_hue"):
        _set_widget(form, field, 0.0)
    _set_widget(form, "auto_augment", "none")
    _set_widget(form, "mixup_alpha", 0.0)
    _set_widget(form, "cutmix_alpha", 0.0)
    assert form.problems() == []
    assert not any(_enabled(form, field) for field in AUGMENTATION_VALUES
                   if field != "label_smoothing")


@pytest.mark.parametrize("model", ["resnet18", "small_cnn"])
def test_the_form_trains_what_the_command_line_trains_for_each_model(qtbot, tmp_path, model):
    """A new form with only the model chosen, and ``workbench train --model M`` with no other
    setting, are the same run (one source of defaults, the model's)."""
    from workbench.cli import build_parser
    from workbench.cli.config_flags import config_from_args

    form = ConfigForm()
    qtbot.addWidget(form)
    if model != form.config().model:
        form.edit_field("model", model)
    args = build_parser().parse_args(["train", "--model", model])
    assert form.config() == config_from_args(args)
    assert form.config().crop_mode == "standard"  # MODEL_DEFAULTS of both models


def test_each_tooltip_names_the_default_of_each_model_where_they_differ(qtbot, form):
    lr_help = form.findChild(FieldRow, "field_lr").help_text()
    assert "Default: 0.001 with resnet18, 0.002 with small_cnn." in lr_help
    assert lr_help.endswith("With weights none: 0.001 with ResNet, 0.002 with MobileNet, 0.002 "
                            "with RegNet, 0.01 with ShuffleNet (their recipes for training from "
                            "scratch), unless you set the recipe.")
    optimizer_help = form.findChild(FieldRow, "field_optimizer").help_text()
    assert "With weights none: AdamW with ResNet, AdamW with MobileNet, AdamW with RegNet, SGD " \
           "with momentum with ShuffleNet" in optimizer_help
    crop_help = form.findChild(FieldRow, "field_crop_mode").help_text()
    assert crop_help.endswith("Default: One crop (random when training, centre when "
                              "validating).")
