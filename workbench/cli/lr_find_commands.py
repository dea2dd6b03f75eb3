"""``workbench lr-find``: the learning-rate range test on the train settings' data and model."""

from __future__ import annotations

import argparse
import sys

from workbench.cli.config_flags import add_config_flags, config_from_args, print_problems


def register(sub: argparse._SubParsersAction) -> None:
    finder = sub.add_parser(
        "lr-find", help="suggest a learning rate: a short run with the lr growing "
                        "exponentially (same settings as train; the model is left untouched)")
    finder.add_argument("--config",
                        help="a TrainConfig JSON file, a run's config.json or its run folder")
    finder.add_argument("--steps", type=int, default=100,
                        help="training steps of the test (default 100)")
    finder.add_argument("--start-lr", type=float, default=1e-7,
                        help="the lr of the first step (default 1e-7)")
    finder.add_argument("--end-lr", type=float, default=10.0,
                        help="the lr of the last step (default 10)")
    add_config_flags(finder)
    finder.set_defaults(handler=_cmd_lr_find)


def _cmd_lr_find(args: argparse.Namespace) -> int:
    from workbench.core.data.dataset_scan import DatasetError
    from workbench.core.devices.selection import DeviceError
    from workbench.core.models.building import WeightsError
    from workbench.core.training.tuning.lr_finder import find_lr_for_config

    config = config_from_args(args)
    problems = config.validate()
    if problems:
        print_problems(problems)
        return 2
    try:
        result = find_lr_for_config(config, args.steps, args.start_lr, args.end_lr)
    except (DatasetError, DeviceError, WeightsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    shown = max(1, len(result.lrs) // 20)
    print(f"{'lr':>10}  loss")
    for lr, loss in list(zip(result.lrs, result.losses, strict=True))[::shown]:
        print(f"{lr:>10.2e}  {loss:.4f}")
    print(result.describe())
    if result.suggestion is not None:
        print(f"use it with: --lr {result.suggestion:.2e}")
    return 0 if result.suggestion is not None else 1
