"""``workbench runs``: every run under an output folder, as a table."""

from __future__ import annotations

import argparse

from workbench.core.runs.config import TrainConfig


def register(sub: argparse._SubParsersAction) -> None:
    runs = sub.add_parser("runs", help="list the runs under an output folder: name, date, "
                                       "model, dataset, best val accuracy, epochs, duration, "
                                       "device, status")
    runs.add_argument("output_dir", nargs="?", default=TrainConfig().output_dir,
                      help="the folder runs are written to (default: %(default)s)")
    runs.set_defaults(handler=_cmd_runs)

    report = sub.add_parser("report", help="write one self-contained HTML report of a run "
                                           "(config, curves, confusion matrix, per-class "
                                           "figures, top losses, exports), images inlined")
    report.add_argument("run_dir", help="the run folder")
    report.add_argument("-o", "--output", help="the HTML file (default: RUN_DIR/report.html)")
    report.set_defaults(handler=_cmd_report)


def _cmd_runs(args: argparse.Namespace) -> int:
    from workbench.core.runs.run_index import RUN_TABLE_COLUMNS, list_runs, run_table_rows

    runs = list_runs(args.output_dir)
    if not runs:
        print(f"no runs under {args.output_dir}")
        return 0
    rows = [RUN_TABLE_COLUMNS, *run_table_rows(runs)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(RUN_TABLE_COLUMNS))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip())
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    import sys

    from workbench.core.data.cache_folder import health_report_of_run
    from workbench.core.runs.run_report import write_run_report

    try:
        path = write_run_report(args.run_dir, args.output, health_report_of_run(args.run_dir))
    except (FileNotFoundError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB); open it in any browser")
    return 0
