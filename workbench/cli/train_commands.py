"""``workbench train``, ``workbench demo`` and ``workbench find-batch``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.config_flags import add_config_flags, config_from_args, print_problems
from workbench.cli.model_commands import export_and_report
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_defaults import random_frozen_backbone_problem

# find-batch without a data folder sizes the model's head for this many classes.
ASSUMED_CLASSES = 10


def register(sub: argparse._SubParsersAction) -> None:
    train = sub.add_parser("train", help="train a model from a config file and/or flags")
    train.add_argument("--config",
                       help="a TrainConfig JSON file, a run's config.json or its run folder")
    train.add_argument("--save-config", help="write the final config to this file and exit")
    train.add_argument("--export", action="store_true",
                       help="export the best model to TorchScript when training completes")
    add_config_flags(train)
    train.set_defaults(handler=_cmd_train)
    find = sub.add_parser("find-batch", help="find the largest batch that trains on a GPU "
                                             "(same settings as train; the CPU has no limit "
                                             "to find)")
    find.add_argument("--config",
                      help="a TrainConfig JSON file, a run's config.json or its run folder")
    find.add_argument("--max-batch", type=int, default=None,
                      help="the largest batch to try (default 1024); on the CPU there is no "
                           "memory limit to find and nothing is tried")
    add_config_flags(find)
    find.set_defaults(handler=_cmd_find_batch)
    demo = sub.add_parser("demo", help="train and export on the bundled demo dataset (no network)")
    demo.add_argument("--output-dir", default="runs",
                      help="the folder the demo's run folder is created in (default: runs)")
    demo.add_argument("--epochs", type=int, default=None,
                      help="train this many epochs instead of the demo's own number")
    demo.add_argument("--data-dir", default=None, help="where to generate the demo images")
    demo.set_defaults(handler=_cmd_demo)


def _cmd_train(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if args.save_config:
        config.save(args.save_config)
        print(f"config written to {args.save_config}")
        return 0
    problems = config.validate()
    frozen_random = random_frozen_backbone_problem(config)
    if frozen_random:
        problems.append(frozen_random)
    if problems:
        print_problems(problems)
        return 2
    return _train_and_maybe_export(config, export=args.export)


def _train_and_maybe_export(config: TrainConfig, export: bool) -> int:
    from workbench.cli.terminal_progress import TerminalProgress
    from workbench.core.devices.selection import describe_device_choice
    from workbench.core.training.engine import train

    print(describe_device_choice(config.device), file=sys.stderr)
    fit = _memory_fit_line(config)
    if fit:
        print(fit, file=sys.stderr)
    end = train(config, TerminalProgress(config=config))
    if end.status != "completed":
        return 1
    if export and end.best_model_path:
        from workbench.core.runs.run_folder import EXPORT_FILE

        return export_and_report(end.best_model_path, str(Path(end.run_dir) / EXPORT_FILE))
    return 0


def _memory_fit_line(config: TrainConfig) -> str:
    """Whether the batch fits in the GPU's free memory (a dry step); '' when it cannot be
    judged here: a bad device or data folder is reported by the run itself."""
    from workbench.core.data.dataset_scan import DatasetError, scan_dataset
    from workbench.core.devices.selection import DeviceError, resolve_device
    from workbench.core.training.tuning.memory_fit import check_memory_fit

    try:
        device = resolve_device(config.device)
        # The head's size matters to the peak only on a GPU; the CPU needs no scan.
        classes = len(scan_dataset(config.data_root).class_names) \
            if device.startswith("cuda") else 10
        return check_memory_fit(config, max(classes, 1)).sentence
    except (DeviceError, DatasetError, OSError):
        return ""


def _cmd_find_batch(args: argparse.Namespace) -> int:
    from workbench.core.data.dataset_scan import DatasetError, scan_dataset
    from workbench.core.devices.selection import DeviceError, resolve_device
    from workbench.core.training.tuning.batch_size_finder import find_batch_size, peak_memory_text

    config = config_from_args(args)
    # The data is not read: only the model, crops, precision and device matter here.
    problems = [text for name, text in config.field_problems(check_paths=False)
                if name != "data_root"]
    if problems:
        print_problems(problems)
        return 2
    if config.data_root:
        try:
            classes = len(scan_dataset(config.data_root).class_names)
        except DatasetError as exc:
            print(f"error: data_root: {exc} (find-batch reads the folder for the number of "
                  "classes; leave data_root out to assume 10)", file=sys.stderr)
            return 2
    else:
        classes = ASSUMED_CLASSES
        print(f"no data_root given: assuming {classes} classes (the head's size barely "
              "changes the memory a batch needs)", file=sys.stderr)

    def report(batch: int, fitted: bool, peak: int | None) -> None:
        memory = f", {peak_memory_text(peak, device)}" if fitted and peak else ""
        print(f"  batch {batch:>5}: {'fits' if fitted else 'out of memory'}{memory}",
              file=sys.stderr)

    try:
        device = resolve_device(config.device)
        result = find_batch_size(config, max(classes, 1), args.max_batch, on_try=report)
    except (DeviceError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result.describe())
    return 0 if result.largest_fitting or result.no_memory_limit else 1


def _cmd_demo(args: argparse.Namespace) -> int:
    from workbench.core.data.generated.demo_data import demo_config, ensure_demo_dataset

    data = ensure_demo_dataset(args.data_dir)
    print(f"demo dataset: {data}", file=sys.stderr)
    config = demo_config(data, output_dir=args.output_dir)
    if args.epochs:
        config = config.replace(epochs=args.epochs)
    return _train_and_maybe_export(config, export=True)
