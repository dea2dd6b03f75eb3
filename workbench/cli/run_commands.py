"""``workbench runs``: every run under an output folder, as a table."""

from __future__ import annotations

import argparse
import math

from workbench.core.runs.config import TrainConfig

COLUMNS = ("name", "date", "model", "dataset", "best val acc", "epochs", "duration", "device",
           "status")


def register(sub: argparse._SubParsersAction) -> None:
    runs = sub.add_parser("runs", help="list the runs under an output folder: name, date, "
                                       "model, dataset, best val accuracy, epochs, duration, "
                                       "device, status")
    runs.add_argument("output_dir", nargs="?", default=TrainConfig().output_dir,
                      help="the folder runs are written to (default: %(default)s)")
    runs.set_defaults(handler=_cmd_runs)


def format_duration(seconds: float) -> str:
    """'42 s', '3 min 05 s' or '2 h 04 min'."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def run_table_rows(runs: list) -> list[tuple[str, ...]]:
    """The cells of the runs table, one tuple a ``RunSummary``, in ``COLUMNS`` order."""
    rows = []
    for run in runs:
        accuracy = "" if math.isnan(run.best_val_accuracy) else \
            f"{100 * run.best_val_accuracy:.1f}%"
        rows.append((run.name, run.created.replace("T", " "), run.model, run.dataset, accuracy,
                     f"{run.epochs_completed}/{run.epochs}", format_duration(run.seconds),
                     run.device, run.status))
    return rows


def _cmd_runs(args: argparse.Namespace) -> int:
    from workbench.core.runs.run_index import list_runs

    runs = list_runs(args.output_dir)
    if not runs:
        print(f"no runs under {args.output_dir}")
        return 0
    rows = [COLUMNS, *run_table_rows(runs)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip())
    return 0
