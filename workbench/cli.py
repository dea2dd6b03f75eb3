"""Command line: ``workbench`` opens the desktop app; subcommands train, export, predict headless.

Every TrainConfig field is also a flag (``--batch-size 64``, ``--no-amp``); flags override the
``--config`` file. Exit status: 0 success, 1 a run or export that failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from workbench import __version__
from workbench.core.runs.config import (
    CROP_MODES,
    CROP_STRATEGIES,
    FINETUNE_MODES,
    IMBALANCE_OPTIONS,
    MODELS,
    OPTIMIZERS,
    SCHEDULERS,
    WEIGHTS,
    ConfigError,
    TrainConfig,
)

_CHOICES = {
    "model": MODELS, "weights": WEIGHTS, "finetune": FINETUNE_MODES, "crop_mode": CROP_MODES,
    "crop_strategy": CROP_STRATEGIES, "optimizer": OPTIMIZERS, "scheduler": SCHEDULERS,
    "imbalance": IMBALANCE_OPTIONS,
}


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench", description="Fine-tune image classifiers on your own GPU.")
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    parser.add_argument("--demo", action="store_true",
                        help="open the desktop app on the bundled demo dataset")
    parser.add_argument("--folder", help="open the desktop app on this image folder")
    sub = parser.add_subparsers(dest="command")

    train = sub.add_parser("train", help="train a model from a config file and/or flags")
    train.add_argument("--config",
                       help="a TrainConfig JSON file, a run's config.json or its run folder")
    train.add_argument("--save-config", help="write the final config to this file and exit")
    train.add_argument("--export", action="store_true",
                       help="export the best model to TorchScript when training completes")
    _add_config_flags(train)

    export = sub.add_parser("export", help="export a trained model to verified TorchScript")
    export.add_argument("model", help="a run folder, best_model.pt or a checkpoint (last.pt)")
    export.add_argument("-o", "--output",
                        help="output file (default: <run folder>/model_scripted.pt)")

    predict = sub.add_parser("predict", help="classify images with an exported model")
    predict.add_argument("model", help="an exported TorchScript file; TorchScript is a program "
                                        "and runs when loaded, so use only files you trust")
    predict.add_argument("images", nargs="+", help="image files")
    predict.add_argument("--topk", type=int, default=3)

    find = sub.add_parser("find-batch", help="find the largest batch that trains on the device "
                                             "(same settings as train)")
    find.add_argument("--config",
                      help="a TrainConfig JSON file, a run's config.json or its run folder")
    find.add_argument("--max-batch", type=int, default=None,
                      help="the largest batch to try (default 1024 on CUDA, 64 on the CPU)")
    _add_config_flags(find)

    sub.add_parser("devices", help="list devices and say which one training would use")

    scan = sub.add_parser("scan", help="show the classes, counts and problems of an image folder")
    scan.add_argument("folder")
    scan.add_argument("--val-fraction", type=float, default=0.2)

    cache = sub.add_parser("cache", help="show where resized images are cached and how much "
                                         "they take; --clear deletes them")
    cache.add_argument("--cache-dir", default="",
                       help="the cache folder (default: the one runs use when cache_dir is empty)")
    cache.add_argument("--clear", action="store_true", help="delete the cached images")

    demo = sub.add_parser("demo", help="train and export on the bundled demo dataset (no network)")
    demo.add_argument("--output-dir", default="runs")
    demo.add_argument("--epochs", type=int, default=None)
    demo.add_argument("--data-dir", default=None, help="where to generate the demo images")

    bench = sub.add_parser("bench", help="run the benchmarks: a table of side-by-side ratios "
                                         "against the targets, also written as JSON")
    bench.add_argument("--quick", action="store_true",
                       help="small sizes, a smoke test in under a minute (figures mean little)")
    bench.add_argument("--only", help="comma-separated groups: loader,training,worker,ui")
    bench.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    bench.add_argument("-o", "--output", help="JSON file or folder (default ./bench.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        from workbench.gui.app import main as gui_main

        gui_argv = ["--demo"] if args.demo else []
        if args.folder:
            gui_argv += ["--folder", args.folder]
        return gui_main(gui_argv)
    handler = {
        "train": _cmd_train, "export": _cmd_export, "predict": _cmd_predict,
        "devices": _cmd_devices, "scan": _cmd_scan, "demo": _cmd_demo,
        "find-batch": _cmd_find_batch, "bench": _cmd_bench, "cache": _cmd_cache,
    }[args.command]
    try:
        return handler(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    config = TrainConfig.load(args.config) if args.config else TrainConfig()
    overrides = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(TrainConfig)
        if getattr(args, f.name, None) is not None
    }
    return config.replace(**overrides)


def _cmd_train(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if args.save_config:
        config.save(args.save_config)
        print(f"config written to {args.save_config}")
        return 0
    problems = config.validate()
    if problems:
        print("error: the config has problems:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 2
    return _train_and_maybe_export(config, export=args.export)


def _train_and_maybe_export(config: TrainConfig, export: bool) -> int:
    from workbench.core.devices.selection import describe_device_choice
    from workbench.core.training.engine import train
    from workbench.terminal_progress import TerminalProgress

    print(describe_device_choice(config.device), file=sys.stderr)
    end = train(config, TerminalProgress(config=config))
    if end.status != "completed":
        return 1
    if export and end.best_model_path:
        return _export(end.best_model_path, str(Path(end.run_dir) / "model_scripted.pt"))
    return 0


def _export(model_file: str, output: str) -> int:
    from workbench.core.models.checkpoint_format import CheckpointError
    from workbench.core.models.export import ExportError, export_model_file

    try:
        result = export_model_file(model_file, output)
    except (ExportError, CheckpointError, OSError) as exc:
        print(f"error: export failed: {exc}", file=sys.stderr)
        return 1
    print(f"exported {result.path} ({len(result.class_names)} classes, "
          f"{result.input_size}x{result.input_size} input) in {result.seconds:.1f} s")
    print(f"verified: reloaded max abs diff {result.max_abs_diff:.2e}, "
          f"fresh process max abs diff {result.subprocess_max_abs_diff:.2e}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from workbench.core.runs.run_folder import BEST_MODEL, EXPORT_FILE

    source = Path(args.model)
    if source.is_dir():
        if not (source / BEST_MODEL).is_file():
            print(f"error: {source} has no {BEST_MODEL}; is it a run folder?", file=sys.stderr)
            return 2
        output = args.output or str(source / EXPORT_FILE)
        source = source / BEST_MODEL
    else:
        output = args.output or str(source.with_name(EXPORT_FILE))
    return _export(str(source), output)


def _cmd_predict(args: argparse.Namespace) -> int:
    from workbench.core.models.export import ExportError
    from workbench.core.models.prediction import predict_images

    try:
        predictions = predict_images(args.model, args.images, topk=args.topk)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for prediction in predictions:
        if prediction.error:
            failed += 1
            print(f"{prediction.path}: error: {prediction.error}")
            continue
        ranked = ", ".join(f"{name} {prob:.3f}" for name, prob in prediction.top)
        print(f"{prediction.path}: {ranked}")
    return 1 if failed else 0


def _cmd_find_batch(args: argparse.Namespace) -> int:
    from workbench.core.data.dataset_scan import DatasetError, scan_dataset
    from workbench.core.devices.selection import DeviceError, resolve_device
    from workbench.core.training.batch_size_finder import find_batch_size, peak_memory_text

    config = config_from_args(args)
    # The data is not read: only the model, crops, precision and device matter here.
    problems = [p for p in config.validate(check_paths=False) if not p.startswith("data_root")]
    if problems:
        print("error: the config has problems:\n" + "\n".join(f"  - {p}" for p in problems),
              file=sys.stderr)
        return 2
    try:
        classes = len(scan_dataset(config.data_root).class_names) if config.data_root else 10
    except DatasetError:
        classes = 10

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
    return 0 if result.largest_fitting else 1


def _cmd_devices(args: argparse.Namespace) -> int:
    from workbench.core.devices.selection import describe_device_choice, list_devices

    for device in list_devices():
        print(device.label)
    print(describe_device_choice("auto"))
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    from workbench.core.data.cache_folder import (
        cache_usage,
        clear_cache,
        default_cache_dir,
        usage_summary,
    )
    from workbench.core.units import byte_amount

    folder = Path(args.cache_dir or default_cache_dir())
    if folder.exists() and not folder.is_dir():
        print(f"error: cache-dir: {folder} is a file, not a cache folder", file=sys.stderr)
        return 2
    if args.clear:
        deleted = clear_cache(folder)
        print(f"deleted {deleted.files:,} cached image(s), {byte_amount(deleted.bytes)}, "
              f"from {folder}")
    print(f"image cache: {folder}")
    print(f"  {usage_summary(cache_usage(folder), folder)}")
    return 0


def _cmd_scan(args: argparse.Namespace) -> int:
    from workbench.core.data.dataset_scan import DatasetError, scan_dataset

    try:
        scan = scan_dataset(args.folder, val_fraction=args.val_fraction)
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(scan.describe())
    for name, train_count, val_count in zip(scan.class_names, scan.train_counts(),
                                            scan.val_counts(), strict=True):
        print(f"  {name:<24} train {train_count:>7,}  val {val_count:>6,}")
    for warning in scan.warnings():
        print(f"warning: {warning}")
    for skipped in scan.skipped[:20]:
        print(f"skipped: {skipped.path}: {skipped.reason}")
    if len(scan.skipped) > 20:
        print(f"... and {len(scan.skipped) - 20} more skipped files")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from workbench.core.data.demo_data import demo_config, ensure_demo_dataset

    data = ensure_demo_dataset(args.data_dir)
    print(f"demo dataset: {data}", file=sys.stderr)
    config = demo_config(data, output_dir=args.output_dir)
    if args.epochs:
        config = config.replace(epochs=args.epochs)
    return _train_and_maybe_export(config, export=True)


def _cmd_bench(args: argparse.Namespace) -> int:
    from workbench.bench.suite import run_from_cli

    command = ["workbench", "bench"]
    if args.quick:
        command.append("--quick")
    for flag, value in (("--only", args.only), ("--device", args.device),
                        ("--output", args.output)):
        if value and value != "auto":
            command += [flag, value]
    return run_from_cli(args, " ".join(command))


if __name__ == "__main__":
    sys.exit(main())
