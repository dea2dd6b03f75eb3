"""Every TrainConfig field as a flag, and the config the flags (and ``--config``) describe."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from workbench.core.runs.config import (
    CROP_MODES,
    CROP_STRATEGIES,
    FINETUNE_MODES,
    IMBALANCE_OPTIONS,
    MODELS,
    OPTIMIZERS,
    SCHEDULERS,
    WEIGHTS,
    TrainConfig,
)

_CHOICES = {
    "model": MODELS, "weights": WEIGHTS, "finetune": FINETUNE_MODES, "crop_mode": CROP_MODES,
    "crop_strategy": CROP_STRATEGIES, "optimizer": OPTIMIZERS, "scheduler": SCHEDULERS,
    "imbalance": IMBALANCE_OPTIONS,
}


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("training settings (override --config)")
    for field in dataclasses.fields(TrainConfig):
        flag = "--" + field.name.replace("_", "-")
        kind = type(getattr(TrainConfig(), field.name))
        if kind is bool:
            group.add_argument(flag, dest=field.name, action=argparse.BooleanOptionalAction,
                               default=None)
        else:
            group.add_argument(flag, dest=field.name, type=kind, default=None,
                               choices=_CHOICES.get(field.name), metavar=None
                               if field.name in _CHOICES else field.name.upper())


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    config = TrainConfig.load(args.config) if args.config else TrainConfig()
    overrides = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(TrainConfig)
        if getattr(args, f.name, None) is not None
    }
    return config.replace(**overrides)


def print_problems(problems: list[str]) -> None:
    """The config's problems on stderr, one a line."""
    print("error: the config has problems:", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
