"""config_fields: every TrainConfig field is described once, its choices are the ones validation
accepts, and "when it applies" follows the settings, the device and the dataset."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.config_fields import FIELDS, FieldContext, applies, help_text


def test_every_config_field_has_one_description_and_no_description_is_stale():
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    assert sorted(FIELDS) == sorted(names)
    for name in names:
        description = FIELDS[name]
        assert description.name == name
        assert description.label and description.label[0].isupper(), name
        assert description.help.endswith("."), name
    labels = [d.label for d in FIELDS.values()]
    assert len(set(labels)) == len(labels), "two fields share a label"


def test_choice_values_are_exactly_what_validation_accepts(tmp_path):
    for name, description in FIELDS.items():
        if not description.choices or description.open_choices:
            continue
        for value in description.choices:
            config = TrainConfig(data_root=str(tmp_path), **{name: value})
            if name == "model" and value == "small_cnn":
                config = config.replace(weights="none")
            if name == "weights" and value == "file":
                continue  # needs a file; the choice itself is checked below
            if name == "auto_augment":
                config = config.replace(crop_mode="standard")  # augments the one random crop
            assert [n for n, _ in config.field_problems()] == [], (name, value)
        bad = TrainConfig(data_root=str(tmp_path), **{name: "no-such-value"})
        assert name in [n for n, _ in bad.field_problems()], name


def test_human_labels_of_the_raw_identifiers():
    assert FIELDS["crop_mode"].choice_label("five_crop") == "Five crops (corners + centre)"
    assert FIELDS["crop_strategy"].choice_label("average_logits") == (
        "Average the crops' logits (one prediction per image)")
    assert FIELDS["finetune"].choice_label("last_layer") == "Last layer only (frozen backbone)"
    assert FIELDS["amp_dtype"].choice_label("auto").startswith("Automatic")


@pytest.mark.parametrize(("field", "changes", "context", "expected"), [
    ("crop_strategy", {"crop_mode": "five_crop"}, FieldContext(), True),
    ("crop_strategy", {"crop_mode": "ten_crop"}, FieldContext(), True),
    ("crop_strategy", {"crop_mode": "standard"}, FieldContext(), False),
    ("train_hflip", {"crop_mode": "standard"}, FieldContext(), True),
    ("train_hflip", {"crop_mode": "five_crop"}, FieldContext(), False),
    ("val_fraction", {}, FieldContext(has_split=False), True),
    ("val_fraction", {}, FieldContext(has_split=None), True),
    ("val_fraction", {}, FieldContext(has_split=True), False),
    ("amp", {}, FieldContext(cuda_available=True), True),
    ("amp", {}, FieldContext(cuda_available=False), False),
    ("amp", {"device": "cpu"}, FieldContext(cuda_available=True), False),
    ("amp_dtype", {"amp": False}, FieldContext(cuda_available=True), False),
    ("amp_dtype", {"amp": True}, FieldContext(cuda_available=True), True),
    ("channels_last", {}, FieldContext(cuda_available=False), False),
    ("pin_memory", {}, FieldContext(cuda_available=False), False),
    ("oom_retry_smaller_batch", {}, FieldContext(cuda_available=False), False),
    ("weights_file", {"weights": "imagenet"}, FieldContext(), False),
    ("weights_file", {"weights": "file"}, FieldContext(), True),
    ("momentum", {"optimizer": "adamw"}, FieldContext(), False),
    ("lr_gamma", {"scheduler": "cosine"}, FieldContext(), False),
    ("cache_dir", {"cache_images": False}, FieldContext(), False),
    ("cache_features", {"finetune": "full"}, FieldContext(), False),
    ("loader_timeout", {"workers": 0}, FieldContext(), False),
    ("epochs", {}, FieldContext(cuda_available=False, has_split=True), True),
])
def test_when_a_field_applies(field, changes, context, expected):
    assert applies(field, TrainConfig(**changes), context) is expected


def test_help_text_has_the_unit_values_condition_and_default():
    text = help_text("crop_size", 224)
    assert "Unit: pixels." in text and text.endswith("Default: 224.")
    text = help_text("amp", True)
    assert "Used only with a CUDA GPU" in text and text.endswith("Default: on.")
    text = help_text("crop_mode", "five_crop")
    assert "five_crop = Five crops (corners + centre)" in text
    assert help_text("run_name", "").endswith("Default: empty.")
    text = help_text("crop_mode", "five_crop", list_values=False)  # a combo lists the values
    assert "five_crop" not in text and text.endswith("Default: Five crops (corners + centre).")


def test_validation_messages_name_the_label_and_the_json_field(tmp_path):
    problems = TrainConfig(data_root=str(tmp_path / "gone"), crop_size=4).validate()
    assert f"Data folder (data_root): folder '{tmp_path / 'gone'}' does not exist" in problems
    assert "Crop size (crop_size): must be at least 8 pixels (got 4)" in problems
