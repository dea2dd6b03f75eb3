"""``workbench probe``: time real steps of the configured run per precision, layout and batch."""

from __future__ import annotations

import argparse
import sys

from workbench.cli.config_flags import add_config_flags, config_from_args, print_problems


def register(sub: argparse._SubParsersAction) -> None:
    probe = sub.add_parser(
        "probe", help="time a few real training steps of your model and data for float32 vs "
                      "mixed precision, channels_last off/on and a couple of batch sizes")
    probe.add_argument("--config",
                       help="a TrainConfig JSON file, a run's config.json or its run folder")
    probe.add_argument("--batch-sizes",
                       help="comma-separated batches to time (default: batch_size and twice it)")
    probe.add_argument("--steps", type=int, default=None,
                       help="timed steps per row (default 5 on CUDA, 2 on the CPU)")
    probe.add_argument("--save-config",
                       help="write the config with the fastest combination applied to this file")
    add_config_flags(probe)
    probe.set_defaults(handler=_cmd_probe)


def _batch_sizes(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--batch-sizes: '{text}' is not a comma-separated list of batches "
                         "of at least 1")
    return sizes


def _cmd_probe(args: argparse.Namespace) -> int:
    from workbench.core.data.dataset_scan import DatasetError
    from workbench.core.devices.selection import DeviceError
    from workbench.core.training.tuning.speed_probe import probe_speed

    config = config_from_args(args)
    problems = config.validate()
    if problems:
        print_problems(problems)
        return 2

    def report(row: object) -> None:
        speed = (f"{row.images_per_second:,.1f} images/s" if row.images_per_second is not None
                 else row.error)
        print(f"  {row.precision.label}, channels_last {'on' if row.channels_last else 'off'}, "
              f"batch {row.batch_size}: {speed}", file=sys.stderr)

    try:
        result = probe_speed(config, _batch_sizes(args.batch_sizes), args.steps, on_row=report)
    except (DeviceError, DatasetError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result.table())
    print(result.describe())
    if result.fastest is None:
        return 1
    if args.save_config:
        result.apply_to(config).save(args.save_config)
        print(f"config with the fastest combination written to {args.save_config}")
    return 0
