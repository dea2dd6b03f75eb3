"""Command line: ``workbench`` opens the desktop app; subcommands train, export, predict headless.

Every TrainConfig field is also a flag (``--batch-size 64``, ``--no-amp``); flags override the
``--config`` file. Exit status: 0 success, 1 a run or export that failed, 2 bad input. Each
module here registers its subcommands (``register``) and handles them.
"""

from __future__ import annotations

import argparse
import sys

from workbench import __version__
from workbench.cli import (
    catalogue_commands,
    data_commands,
    device_commands,
    lr_find_commands,
    model_commands,
    probe_commands,
    run_commands,
    shortcut_commands,
    train_commands,
)
from workbench.core.runs.config import ConfigError
from workbench.core.warnings import quiet_covered_library_warnings

COMMAND_MODULES = (train_commands, lr_find_commands, model_commands, catalogue_commands,
                   data_commands, device_commands, run_commands, probe_commands,
                   shortcut_commands)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench", description="Fine-tune image classifiers on your own GPU.")
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    parser.add_argument("--demo", action="store_true",
                        help="open the desktop app on the bundled demo dataset")
    parser.add_argument("--folder", help="open the desktop app on this image folder")
    sub = parser.add_subparsers(dest="command")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    _never_fail_on_a_file_name()
    args = build_parser().parse_args(argv)
    quiet_covered_library_warnings()
    if args.command is None:
        from workbench.gui.app import main as gui_main

        gui_argv = ["--demo"] if args.demo else []
        if args.folder:
            gui_argv += ["--folder", args.folder]
        return gui_main(gui_argv)
    try:
        return args.handler(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _never_fail_on_a_file_name() -> None:
    """A file name with bytes that are not UTF-8 reaches a message as lone surrogates; under a
    strict UTF-8 locale printing it would end the command, so such a character is printed as
    an escape (messages escape names themselves; this covers any that do not)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "") == "strict":
            reconfigure(errors="backslashreplace")


if __name__ == "__main__":
    sys.exit(main())
