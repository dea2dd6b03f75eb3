"""Every TrainConfig field as a flag, and the config the flags (and ``--config``) describe."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from workbench.core.runs.config import (
    TrainConfig,
    defaults_by_model,
    fields_set_in_config_file,
)
from workbench.core.runs.config_fields import describe, help_text
from workbench.core.runs.model_defaults import (
    apply_model_defaults,
    settings_for_weights,
)


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field, with the field's help, values and default in ``--help``:
    the default a run uses, per model where the models' defaults differ."""
    group = parser.add_argument_group(
        "training settings (each overrides --config; a setting given neither way keeps its "
        "default)")
    defaults = TrainConfig()
    for field in dataclasses.fields(TrainConfig):
        name = field.name
        flag = "--" + name.replace("_", "-")
        default = getattr(defaults, name)
        description = describe(name)
        # argparse formats help with %: a literal % must be doubled.
        text = help_text(name, default, per_model=defaults_by_model(name)).replace("%", "%%")
        if isinstance(default, bool):
            group.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction,
                               default=None, help=text)
        elif description.choices and not description.open_choices:
            group.add_argument(flag, dest=name, type=type(default), default=None,
                               choices=description.values(), help=text)
        else:
            metavar = "|".join(description.values()) if description.choices else name.upper()
            group.add_argument(flag, dest=name, type=type(default), default=None,
                               metavar=metavar, help=text)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The config file (if any) with the flags over it, and the chosen model's defaults in
    every field neither sets (``workbench.core.runs.model_defaults``).

    weights 'none' with a 'last_layer' nobody asked for becomes 'full', and an ImageNet
    model's recipe follows its weights (the from-scratch recipe for 'none') unless a recipe
    field was given; each change is said on stderr.
    """
    config = TrainConfig.load(args.config) if args.config else TrainConfig()
    overrides = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(TrainConfig)
        if getattr(args, f.name, None) is not None
    }
    in_file = fields_set_in_config_file(args.config) if args.config else []
    explicit = set(overrides) | set(in_file)
    config = apply_model_defaults(config.replace(**overrides), explicit)
    config, notes = settings_for_weights(config, explicit)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return config


def print_problems(problems: list[str]) -> None:
    """The config's problems on stderr, one a line."""
    print("error: the config has problems:", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
