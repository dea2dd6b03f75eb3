"""The training flags: every flag of ``train`` and ``find-batch`` explains itself (help text
with its default, the values of flags with fixed values), and the config the flags describe gets
the chosen model's defaults in the fields nobody set."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from workbench.cli import build_parser, main
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.config_fields import FIELDS
from workbench.core.runs.model_catalog import scratch_recipe
from workbench.core.runs.model_defaults import MODEL_DEFAULTS, apply_model_defaults

RESNET_SCRATCH = scratch_recipe("resnet34")  # ResNet's recipe from random weights


def _subcommand(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", ["train", "find-batch"])
def test_every_flag_has_help_and_every_setting_its_default(command):
    parser = _subcommand(command)
    flags = [a for a in parser._actions if a.option_strings]
    assert flags
    for action in flags:
        assert action.help and len(action.help) > 10, action.option_strings
    defaults = TrainConfig()
    by_dest = {a.dest: a for a in flags}
    for field in dataclasses.fields(TrainConfig):
        action = by_dest[field.name]
        assert action.help.startswith(FIELDS[field.name].help), field.name
        assert "Default: " in action.help, field.name
        # What choosing each model sets, read from the table itself, else the field's default.
        by_model = {model: MODEL_DEFAULTS[model].get(field.name, getattr(defaults, field.name))
                    for model in MODEL_DEFAULTS}
        values = list(by_model.values())
        if any(isinstance(value, bool) or value == "" for value in values):
            continue
        if len(set(values)) == 1:
            assert f"Default: {values[0]}." in action.help, field.name
        else:
            for model, value in by_model.items():
                assert f"{value} with {model}" in action.help, (field.name, model)


def test_help_lists_the_values_of_device_and_amp_dtype(capsys):
    parser = _subcommand("train")
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert "--device auto|cpu|cuda|cuda:N" in text
    assert "--amp-dtype {auto,float16,bfloat16}" in text
    assert "cuda:N = CUDA GPU number N" in text
    assert "bfloat16 = bfloat16" in text and "Default: auto." in text
    assert "--crop-mode {standard,five_crop,ten_crop}" in text
    assert "five_crop = Five crops (corners + centre)" in text


def test_a_value_outside_the_choices_is_refused_by_argparse(capsys):
    parser = _subcommand("train")
    with pytest.raises(SystemExit):
        parser.parse_args(["--amp-dtype", "float8"])
    assert "invalid choice: 'float8'" in capsys.readouterr().err


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
    assert config.lr == 0.02  # given on the command line, so not the model's 0.002
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
    said = capsys.readouterr().err
    assert "Fine-tune set to \u201cWhole network (full fine-tuning)\u201d" in said


def test_weights_none_gives_a_resnet_the_from_scratch_recipe_and_says_so(tmp_path, capsys):
    config = _saved(tmp_path, "--model", "resnet34", "--weights", "none")
    assert {name: getattr(config, name) for name in RESNET_SCRATCH} == RESNET_SCRATCH
    err = capsys.readouterr().err
    assert "note: AdamW at learning rate 0.001, warm-up, then cosine schedule: the recipe for " \
           "training every layer from random weights" in err
    # Pretrained weights keep the family's fine-tuning recipe.
    config = _saved(tmp_path, "--model", "resnet34")
    assert (config.optimizer, config.lr, config.scheduler) == ("sgd", 0.001, "step")
    # ConvNeXt's own AdamW recipe won from random weights too: it stays.
    capsys.readouterr()
    config = _saved(tmp_path, "--model", "convnext_tiny", "--weights", "none")
    assert (config.optimizer, config.lr, config.weight_decay) == ("adamw", 1e-4, 0.05)
    assert "from random weights" not in capsys.readouterr().err


def test_a_recipe_field_given_keeps_the_whole_recipe_as_the_user_has_it(tmp_path, capsys):
    config = _saved(tmp_path, "--weights", "none", "--lr", "0.05")
    # Not adamw at the user's SGD-sized lr: the optimiser stays resnet18's sgd, step.
    assert (config.optimizer, config.lr, config.scheduler) == ("sgd", 0.05, "step")
    assert "from random weights" not in capsys.readouterr().err


def test_weights_none_with_an_explicit_last_layer_is_refused_with_the_reason(tmp_path,
                                                                             capsys):
    (tmp_path / "a").mkdir()
    code = main(["train", "--data-root", str(tmp_path), "--weights", "none",
                 "--finetune", "last_layer", "--output-dir", str(tmp_path / "runs")])
    assert code == 2
    assert "random, frozen network" in capsys.readouterr().err


def test_a_new_config_is_the_default_model_with_its_own_defaults():
    config = TrainConfig()
    assert apply_model_defaults(config) == config
    assert all(getattr(config, name) == value
               for name, value in MODEL_DEFAULTS[config.model].items())


@pytest.mark.parametrize("model", ["resnet18", "small_cnn"])
def test_help_shows_the_default_a_run_of_each_model_uses(tmp_path, model):
    """Read back from --help: the default it names for each setting a model sets is what
    ``train --model M`` with nothing else trains with."""
    run = _saved(tmp_path, "--model", model)
    flags = {a.dest: " ".join(a.help.split()) for a in _subcommand("train")._actions
             if a.option_strings}
    names = {name for defaults in MODEL_DEFAULTS.values() for name in defaults}
    for name in sorted(names):
        value = getattr(run, name)
        shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
        text = flags[name]
        assert f"Default: {shown}." in text or f"{shown} with {model}" in text, (name, text)
