"""The config the flags describe: the chosen model's defaults fill the fields nobody set."""

from __future__ import annotations

import json

from workbench.cli import main
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_defaults import MODEL_DEFAULTS


def _saved(tmp_path, *flags: str) -> TrainConfig:
    target = tmp_path / "saved.json"
    assert main(["train", "--data-root", str(tmp_path), *flags,
                 "--save-config", str(target)]) == 0
    return TrainConfig.load(target)


def test_choosing_small_cnn_applies_its_defaults_but_keeps_the_flags_given(tmp_path):
    config = _saved(tmp_path, "--model", "small_cnn", "--lr", "0.02")
    assert config.weights == "none" and config.finetune == "full"
    assert (config.crop_mode, config.resize_size, config.crop_size) == ("standard", 28, 28)
    assert config.train_hflip is False
    assert config.lr == 0.02  # given on the command line, so not the model's 0.05
    assert config.validate() == []


def test_a_config_file_keeps_its_own_fields_and_gets_the_defaults_of_the_others(tmp_path):
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"model": "small_cnn", "crop_size": 24, "epochs": 3}))
    target = tmp_path / "saved.json"
    assert main(["train", "--config", str(partial), "--save-config", str(target)]) == 0
    config = TrainConfig.load(target)
    assert (config.crop_size, config.epochs) == (24, 3)
    assert config.resize_size == MODEL_DEFAULTS["small_cnn"]["resize_size"]


def test_resnet18_gets_the_transfer_learning_tutorial_settings(tmp_path):
    config = _saved(tmp_path)
    assert (config.model, config.weights, config.crop_mode) == ("resnet18", "imagenet",
                                                                "standard")
    assert (config.resize_size, config.crop_size, config.lr, config.lr_step_size) == \
        (256, 224, 0.001, 7)


def test_weights_none_switches_an_unasked_last_layer_to_full_and_says_so(tmp_path, capsys):
    config = _saved(tmp_path, "--weights", "none")
    assert config.finetune == "full"
    assert "finetune set to 'full'" in capsys.readouterr().err


def test_weights_none_with_an_explicit_last_layer_is_refused_with_the_reason(tmp_path,
                                                                             capsys):
    (tmp_path / "a").mkdir()
    code = main(["train", "--data-root", str(tmp_path), "--weights", "none",
                 "--finetune", "last_layer", "--output-dir", str(tmp_path / "runs")])
    assert code == 2
    assert "random, frozen network" in capsys.readouterr().err
