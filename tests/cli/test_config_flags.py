"""The training flags explain themselves: every flag of ``train`` and ``find-batch`` has help
text with its default, and the flags with fixed values list them."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from workbench.cli import build_parser
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.config_fields import FIELDS


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
        default = getattr(defaults, field.name)
        if not isinstance(default, bool) and default != "":
            assert f"Default: {default}." in action.help, field.name


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
