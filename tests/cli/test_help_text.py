"""Every option of every subcommand says what it does, and an option that takes one of a few
values lists them: the command line's help is the manual a user reads first."""

from __future__ import annotations

import argparse

from workbench.cli import build_parser
from workbench.core.data.health.findings import KINDS


def _subcommands(parser: argparse.ArgumentParser, name: str = "workbench"
                 ) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child_name, child in action.choices.items():
                found.extend(_subcommands(child, f"{name} {child_name}"))
    return found


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in parser._actions
            if not isinstance(action, (argparse._HelpAction, argparse._VersionAction,
                                       argparse._SubParsersAction))]


def test_every_option_and_argument_of_every_subcommand_has_help() -> None:
    commands = _subcommands(build_parser())
    assert {"workbench train", "workbench scan", "workbench demo", "workbench predict",
            "workbench export"} <= {name for name, _ in commands}
    missing = [f"{name} {'/'.join(action.option_strings) or action.dest}"
               for name, parser in commands for action in _options(parser)
               if not action.help or action.help == argparse.SUPPRESS
               or not action.help.strip()]
    assert missing == []


def test_an_option_with_choices_lists_them_in_its_help() -> None:
    for name, parser in _subcommands(build_parser()):
        text = " ".join(parser.format_help().split())
        for action in _options(parser):
            for choice in action.choices or ():
                assert str(choice) in text, (name, action.option_strings, choice)


def test_scan_leave_out_lists_the_kinds_it_takes() -> None:
    (scan,) = [parser for name, parser in _subcommands(build_parser())
               if name == "workbench scan"]
    text = " ".join(scan.format_help().split())
    for kind in KINDS:
        if kind != "imbalance":  # a property of the folder, not files to leave out
            assert kind in text, kind
