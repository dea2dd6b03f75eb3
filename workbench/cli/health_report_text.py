"""``workbench scan --health``: the findings of a health check, as lines for a terminal."""

from __future__ import annotations

import argparse
import os
import sys
import time

from workbench.core.data.health.findings import KINDS, HealthReport
from workbench.core.file_names import shown_name

# Files listed a finding before "... and N more".
SHOWN_ITEMS = 10


def run_health_check(args: argparse.Namespace) -> int:
    """Check ``args.folder``, print the findings, write health.json (and the exclusion list
    when ``--leave-out`` names kinds); 0 when the check ran, 2 when it could not."""
    from workbench.core.data.cache_folder import EXCLUDE_FILE, health_folder
    from workbench.core.data.dataset_scan import DatasetError
    from workbench.core.data.health.exclusion_list import write_exclusion_file
    from workbench.core.data.health.health_check import check_health

    kinds = _leave_out_kinds(args.leave_out)
    if kinds is None:
        return 2
    try:
        report = check_health(args.folder, cache_dir=args.cache_dir, report_path=args.report,
                              val_fraction=args.val_fraction, progress=_Progress())
    except (DatasetError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_report(report)
    print(f"health report: {shown_name(report.report_path)}")
    if kinds:
        files = [p for f in report.findings if f.kind in kinds for p in f.leave_out()]
        target = args.exclude_output or health_folder(report.root, args.cache_dir) / EXCLUDE_FILE
        try:
            path = write_exclusion_file(target, report.root, files,
                                        f"leave out: {', '.join(kinds)}")
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{len(files):,} file(s) to leave out written to {shown_name(str(path))}; train "
              f"with --exclude-file {shown_name(str(path))}")
    return 0


def print_report(report: HealthReport) -> None:
    """Each finding: its title, count and reason, then its files (relative to the folder)."""
    reused = f", {report.reused:,} unchanged since the last check" if report.reused else ""
    print(f"{report.images:,} images checked in {report.seconds:.1f} s{reused}")
    problems = report.problem_findings()
    if not problems:
        print("no problems found")
    for finding in problems:
        print(f"{finding.title} [{finding.kind}]: {finding.count:,} -- {finding.explanation}")
        for item in finding.items[:SHOWN_ITEMS]:
            files = ", ".join(_shown(p, report.root) for p in item.files)
            print(f"  {files}: {item.reason}")
        if finding.count > SHOWN_ITEMS:
            print(f"  ... and {finding.count - SHOWN_ITEMS:,} more (see the report)")
    for finding in report.findings:  # a kind that is the folder's norm: one line about it
        if not finding.items and finding.verdict and finding.kind != "imbalance":
            print(f"{finding.title} [{finding.kind}]: {finding.verdict}")
    balance = report.finding("imbalance")
    if balance is not None:
        print(f"Class balance: {balance.verdict}")


def _leave_out_kinds(text: str) -> list[str] | None:
    if not text:
        return []
    choosable = [k for k in KINDS if k != "imbalance"]
    kinds = choosable if text == "all" else [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in choosable]
    if unknown:
        print(f"error: --leave-out: unknown kind(s) {', '.join(unknown)}; choose from "
              f"{', '.join(choosable)} or 'all'", file=sys.stderr)
        return None
    return kinds


def _shown(path: str, root: str) -> str:
    return shown_name(os.path.relpath(path, root) if path.startswith(root + os.sep) else path)


class _Progress:
    """'checked 1,200 / 10,000 images' on stderr, at most a few times a second, rewritten in
    place on a terminal; into a log or a pipe only the last line goes, with no carriage
    returns."""

    def __init__(self) -> None:
        self._last = 0.0
        self._terminal = _is_terminal(sys.stderr)

    def __call__(self, done: int, total: int) -> None:
        if not self._terminal and done < total:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.5:
            return
        self._last = now
        end = "\n" if done >= total else "\r"
        print(f"checked {done:,} / {total:,} images", end=end, file=sys.stderr, flush=True)


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
