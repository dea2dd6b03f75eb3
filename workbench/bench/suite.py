"""``workbench bench``: every benchmark, one table, one JSON file.

Each group runs in a fresh Python process (its own torch thread pool, loader workers forked
from a clean process, its own memory), one after the other, so no group slows the next. Every
row is a comparison measured side by side within its group's run, or an absolute figure held
to a limit; see ``workbench.bench.report``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.bench.report import BenchRow, format_table

GROUPS = {
    "loader": "workbench.bench.loading.loader_benchmark",
    "training": "workbench.bench.training_benchmark",
    "worker": "workbench.bench.loading.worker_benchmark",
    "ui": "workbench.bench.ui_latency_benchmark",
    "accuracy": "workbench.bench.reference.accuracy_benchmark",
    "health": "workbench.bench.health_benchmark",
    "time_to_accuracy": "workbench.bench.time_to_accuracy",
    "parity": "workbench.bench.reference.parity_benchmark",
}
DEFAULT_OUTPUT = "bench.json"


@dataclass
class SuiteResult:
    """Rows of every group that ran, and the error of every group that failed."""

    rows: list[BenchRow] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def all_met(self) -> bool:
        return not self.errors and all(row.met is not False for row in self.rows)


def parse_groups(text: str) -> list[str]:
    """'loader,ui' -> ['loader', 'ui'] in suite order; unknown names raise ValueError."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in GROUPS]
    if unknown or not names:
        raise ValueError(f"--only: unknown group(s) {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(GROUPS)}")
    return [name for name in GROUPS if name in names]


def run_group_here(group: str, quick: bool, device: str) -> list[BenchRow]:
    """Run one group in this process."""
    module = importlib.import_module(GROUPS[group])
    return module.run(quick=quick, device=device)


def run_group_in_fresh_process(group: str, quick: bool, device: str) -> list[BenchRow]:
    """Run one group in a new Python process and read its rows back."""
    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as tmp:
        rows_file = Path(tmp) / "rows.json"
        command = [sys.executable, "-m", "workbench.bench.suite", "--group", group,
                   "--device", device, "--rows-file", str(rows_file)]
        if quick:
            command.append("--quick")
        env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0 or not rows_file.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
            raise RuntimeError("\n".join(tail) or f"exit status {done.returncode}")
        return [BenchRow.from_dict(row) for row in json.loads(rows_file.read_text())]


def run_suite(groups: list[str], quick: bool, device: str,
              progress: Any = None) -> SuiteResult:
    """Run ``groups`` one after the other, each in a fresh process.

    Args:
        groups: names from ``GROUPS``.
        quick: small sizes, for a smoke test (the figures mean little).
        device: "auto", "cpu", "cuda", "cuda:1"...
        progress: called with a line of text before and after each group.
    """
    result = SuiteResult()
    say = progress or (lambda _text: None)
    for group in groups:
        say(f"running {group} ...")
        started = time.perf_counter()
        try:
            result.rows += run_group_in_fresh_process(group, quick, device)
        except Exception as exc:  # noqa: BLE001 - one failed group must not hide the others
            result.errors[group] = str(exc)
        result.seconds[group] = round(time.perf_counter() - started, 1)
        status = "failed" if group in result.errors else "done"
        say(f"{group} {status} in {result.seconds[group]:.0f} s")
    return result


def machine_description() -> dict[str, Any]:
    import torch

    return {
        "platform": platform.platform(), "python": platform.python_version(),
        "torch": torch.__version__, "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def suite_document(result: SuiteResult, command: str, quick: bool, device: str) -> dict:
    """The JSON written by ``workbench bench``."""
    return {
        "command": command,
        "created": _dt.datetime.now().isoformat(timespec="seconds"),
        "quick": quick,
        "device": device,
        "machine": machine_description(),
        "all_met": result.all_met,
        "group_seconds": result.seconds,
        "errors": result.errors,
        "rows": [row.to_dict() for row in result.rows],
    }


def write_json(document: dict, path: Path) -> None:
    from workbench.core.runs.atomic_io import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(document, indent=2) + "\n")


def run_from_cli(args: argparse.Namespace, command: str) -> int:
    """``workbench bench``: run, print the table, write the JSON; 1 if a group failed."""
    try:
        groups = parse_groups(args.only) if args.only else list(GROUPS)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    output = Path(args.output or DEFAULT_OUTPUT)
    if output.is_dir():
        output = output / DEFAULT_OUTPUT
    result = run_suite(groups, args.quick, args.device,
                       progress=lambda text: print(text, file=sys.stderr, flush=True))
    document = suite_document(result, command, args.quick, args.device)
    machine = document["machine"]
    print(f"\n$ {command}")
    print(f"{machine['platform']}, {machine['cpus']} CPUs, torch {machine['torch']}, "
          f"CUDA: {machine['cuda'] or 'none'}{' (quick sizes)' if args.quick else ''}\n")
    print(format_table(result.rows))
    for group, error in result.errors.items():
        print(f"\n{group} failed:\n{error}")
    write_json(document, output)
    print(f"\nall targets met: {'yes' if result.all_met else 'no'}; written to {output}")
    return 1 if result.errors else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of one group in a fresh process (``run_suite`` starts these)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--group", choices=list(GROUPS), required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--rows-file", required=True)
    args = parser.parse_args(argv)
    rows = run_group_here(args.group, args.quick, args.device)
    Path(args.rows_file).write_text(json.dumps([row.to_dict() for row in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
