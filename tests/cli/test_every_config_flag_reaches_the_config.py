"""Every training flag of ``workbench train``, one at a time, at a value other than its default
and at 0 / False: the config the flags describe holds that value, and so does the config.json a
run writes from it (a value of 0 or False is a value, not "not given")."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from workbench.cli import build_parser
from workbench.cli.config_flags import config_from_args, print_problems
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.config_fields import describe

DEFAULTS = TrainConfig()
FIELDS = [field.name for field in dataclasses.fields(TrainConfig)]


def _train_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["train"]


def _other_value(name: str):
    """A value of field ``name`` that is not its default."""
    default = getattr(DEFAULTS, name)
    description = describe(name)
    if isinstance(default, bool):
        return not default
    if description.choices and not description.open_choices:
        return next(value for value in reversed(description.values()) if value != default)
    if isinstance(default, int):
        return default + 3
    if isinstance(default, float):
        return round(default + 0.25, 6)
    return f"/elsewhere/{name}" if "dir" in name or "file" in name or "root" in name else \
        f"{name}-value"


def _flags(name: str, value) -> list[str]:
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return [flag if value else "--no-" + name.replace("_", "-")]
    return [flag, str(value)]


@pytest.mark.parametrize("name", FIELDS)
def test_each_flag_at_a_value_other_than_its_default_reaches_the_config(name, tmp_path) -> None:
    value = _other_value(name)
    assert value != getattr(DEFAULTS, name)
    config = config_from_args(_train_parser().parse_args(_flags(name, value)))
    assert getattr(config, name) == value
    config.save(tmp_path / "config.json")
    assert getattr(TrainConfig.load(tmp_path / "config.json"), name) == value


ZERO_FIELDS = [name for name in FIELDS
               if isinstance(getattr(DEFAULTS, name), (bool, int, float))
               and not describe(name).choices]


@pytest.mark.parametrize("name", ZERO_FIELDS)
def test_each_number_or_switch_at_zero_or_false_reaches_the_config(name, tmp_path) -> None:
    default = getattr(DEFAULTS, name)
    zero = False if isinstance(default, bool) else type(default)(0)
    config = config_from_args(_train_parser().parse_args(_flags(name, zero)))
    assert getattr(config, name) == zero and type(getattr(config, name)) is type(default)
    config.save(tmp_path / "config.json")
    assert getattr(TrainConfig.load(tmp_path / "config.json"), name) == zero


def test_the_walk_covers_every_switch_and_number() -> None:
    # The two walks above reach every field; the switches and numbers that default to a true
    # value are the ones a dropped 0 / False would lose.
    assert len(FIELDS) == len(dataclasses.fields(TrainConfig))
    true_by_default = {name for name in ZERO_FIELDS if getattr(DEFAULTS, name)}
    assert {"amp", "train_hflip", "cache_images", "pin_memory", "epochs", "lr",
            "head_epochs"} <= true_by_default


def test_help_groups_the_settings_and_names_each_value(capsys) -> None:
    with pytest.raises(SystemExit):
        _train_parser().parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal width
    assert ("training settings (each overrides --config; a setting given neither way keeps "
            "its default):") in shown
    # A free number shows its name as the value; an open set of choices lists its examples;
    # a closed set is given as argparse's choices; a switch has its --no- form.
    assert "--batch-size BATCH_SIZE " in shown
    assert "--device auto|cpu|cuda|cuda:N " in shown
    assert "--optimizer {sgd,adamw} " in shown
    assert "--amp, --no-amp " in shown


def test_the_problems_of_a_config_are_listed_on_stderr(capsys) -> None:
    print_problems(["Epochs (epochs): must be at least 1", "Learning rate (lr): must be > 0"])
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("error: the config has problems:\n"
                   "  - Epochs (epochs): must be at least 1\n"
                   "  - Learning rate (lr): must be > 0\n")
