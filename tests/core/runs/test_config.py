"""TrainConfig: JSON round trip, readable validation messages, clear errors for bad files."""

from __future__ import annotations

import json

import pytest

from workbench.core.runs.config import ConfigError, TrainConfig, fields_set_in_config_file


def test_json_round_trip_keeps_every_field(tmp_path):
    config = TrainConfig(data_root=str(tmp_path), model="small_cnn", weights="none", lr=0.05,
                         crop_mode="ten_crop", amp=False, workers=3, seed=7)
    path = tmp_path / "run.json"
    config.save(path)
    assert TrainConfig.load(path) == config
    assert TrainConfig.from_json(config.to_json()) == config


def test_a_valid_config_has_no_problems(tmp_path):
    assert TrainConfig(data_root=str(tmp_path)).validate() == []


def test_every_problem_is_reported_with_its_field(tmp_path):
    config = TrainConfig(data_root=str(tmp_path / "missing"), lr=0, batch_size=0, epochs=0,
                         resize_size=100, crop_size=224, momentum=1.5, weight_decay=-1,
                         model="vgg", device="gpu", weights="file", val_fraction=1.0)
    problems = config.validate()
    for expected in [
        f"Data folder (data_root): folder '{tmp_path / 'missing'}' does not exist",
        "Learning rate (lr): must be greater than 0 (got 0)",
        "Batch size (batch_size): must be at least 1 (got 0)",
        "Epochs (epochs): must be at least 1",
        "Crop size (crop_size): 224 is larger than resize_size 100",
        "Momentum (momentum): must be in [0, 1)",
        "Weight decay (weight_decay): must not be negative",
        "Model (model): 'vgg' is not one of resnet18, resnet34, resnet50, mobilenet_v3_small",
        "Device (device): 'gpu' is not",
        "Weights file (weights_file): choose a state_dict file",
        "Validation fraction (val_fraction): must be between 0 and 1",
    ]:
        assert any(p.startswith(expected) for p in problems), (expected, problems)


def test_small_cnn_cannot_use_imagenet_weights(tmp_path):
    problems = TrainConfig(data_root=str(tmp_path), model="small_cnn").validate()
    assert problems == ["Starting weights (weights): small_cnn has no ImageNet weights; "
                        "use 'none' or 'file'"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"learning_rate": 0.1}', "unknown field(s) learning_rate"),
        ('{"batch_size": "32"}', "field 'batch_size' must be a whole number"),
        ('{"amp": 1}', "field 'amp' must be true or false"),
    ],
)
def test_bad_config_files_name_the_file_and_the_problem(tmp_path, text, expected):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        TrainConfig.load(path)
    assert str(path) in str(info.value) and expected in str(info.value)


def test_a_run_folders_config_json_loads_as_its_config(tmp_path):
    config = TrainConfig(data_root="x", lr=0.3)
    (tmp_path / "config.json").write_text(json.dumps(
        {"config": config.to_dict(), "environment": {"torch": "2"}, "dataset": {}}))
    assert TrainConfig.load(tmp_path) == config
    assert TrainConfig.load(tmp_path / "config.json") == config


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.json: cannot read config"):
        TrainConfig.load(tmp_path / "nope.json")


def test_derived_values():
    assert TrainConfig(crop_mode="five_crop").crops_per_sample == 5
    assert TrainConfig(crop_mode="ten_crop").crops_per_sample == 10
    assert TrainConfig(crop_mode="standard").crops_per_sample == 1
    assert TrainConfig(model="small_cnn").in_channels == 1
    assert TrainConfig(crop_mode="five_crop").train_transform_is_deterministic
    assert not TrainConfig(crop_mode="standard").train_transform_is_deterministic


def test_augmentations_are_refused_with_five_or_ten_crops_and_their_ranges_checked(tmp_path):
    on = {"color_jitter_brightness": 0.4, "color_jitter_contrast": 0.4,
          "color_jitter_saturation": 0.4, "color_jitter_hue": 0.1, "rotation_degrees": 15.0,
          "auto_augment": "trivial_augment_wide", "mixup_alpha": 0.2, "cutmix_alpha": 1.0}
    standard = TrainConfig(data_root=str(tmp_path), crop_mode="standard", label_smoothing=0.1,
                           **on)
    assert standard.validate() == []
    for mode in ("five_crop", "ten_crop"):
        problems = dict(standard.replace(crop_mode=mode).field_problems())
        assert sorted(problems) == sorted(on)
        assert problems["mixup_alpha"] == (
            f"Mixup alpha (mixup_alpha): applies only with one crop per image (crop_mode "
            f"standard); {mode} crops are fixed, so set it to 0 or choose standard")
        assert problems["auto_augment"].endswith("so set it to none or choose standard")
    # Label smoothing is a loss setting: it works with every crop mode.
    assert TrainConfig(data_root=str(tmp_path), crop_mode="five_crop",
                       label_smoothing=0.2).validate() == []
    bad = TrainConfig(data_root=str(tmp_path), crop_mode="standard", color_jitter_hue=0.6,
                      rotation_degrees=-1.0, label_smoothing=1.0, mixup_alpha=-0.5,
                      rand_augment_num_ops=0, rand_augment_magnitude=31)
    assert sorted(name for name, _ in bad.field_problems()) == [
        "color_jitter_hue", "label_smoothing", "mixup_alpha", "rand_augment_magnitude",
        "rand_augment_num_ops", "rotation_degrees"]


def test_the_fields_a_partial_config_or_a_run_folder_sets_are_listed_in_file_order(tmp_path):
    partial = tmp_path / "partial.json"
    partial.write_text('{"lr": 0.1, "model": "small_cnn", "not_a_field": 1}')
    assert fields_set_in_config_file(partial) == ["lr", "model"]

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(
        {"config": {"epochs": 3, "batch_size": 4}, "environment": {"torch": "2"}}))
    assert fields_set_in_config_file(run) == ["epochs", "batch_size"]

    broken = tmp_path / "broken.json"
    broken.write_text("[1, 2]")
    with pytest.raises(ConfigError, match=f"{broken}: expected a JSON object"):
        fields_set_in_config_file(broken)
    with pytest.raises(ConfigError, match="missing.json: cannot read config"):
        fields_set_in_config_file(tmp_path / "missing.json")
