"""The run folder: config.json, metrics.jsonl, checkpoints and exports of one training run."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import socket
import time
from pathlib import Path
from typing import IO, Any

import psutil

from workbench.core.runs.atomic_io import atomic_write_text
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import (
    Callback,
    EpochEnd,
    Message,
    RunEnd,
    RunStart,
    StepStats,
    event_to_dict,
)

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
LAST_CHECKPOINT = "last.pt"
BEST_MODEL = "best_model.pt"
EXPORT_FILE = "model_torchscript.pt"  # the TorchScript export, from the app and the CLI alike
OLD_EXPORT_FILES = ("model_scripted.pt",)  # its name from the CLI before; still read
ONNX_FILE = "model.onnx"
DECODE_FAILURES = "decode_failures.tsv"
FEATURE_FINDINGS_FILE = "feature_health.json"  # what the best model's features found


def create_run_folder(config: TrainConfig) -> Path:
    """A new, unique folder under ``config.output_dir`` named after the run and the time."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{config.run_name}-{stamp}" if config.run_name else stamp
    root = Path(config.output_dir)
    root.mkdir(parents=True, exist_ok=True)
    candidate = root / base
    suffix = 1
    while True:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            suffix += 1
            candidate = root / f"{base}-{suffix}"


def write_run_config(
    run_dir: Path,
    config: TrainConfig,
    environment: dict[str, Any],
    dataset: dict[str, Any],
    ran: dict[str, Any] | None = None,
) -> None:
    """config.json: the config plus what is needed to reproduce and compare runs; ``ran``:
    what the run does on its device where that differs from what the config asks (the
    precision, memory format and pinning that took effect)."""
    document = {
        "config": config.to_dict(),
        **({"ran": ran} if ran is not None else {}),
        "seed": config.seed,
        "created": _dt.datetime.now().isoformat(timespec="seconds"),
        "environment": environment,
        "dataset": dataset,
    }
    atomic_write_text(run_dir / CONFIG_FILE, json.dumps(document, indent=2, default=str) + "\n")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class MetricsWriter(Callback):
    """Appends every event as one JSON line to metrics.jsonl (NaN written as null).

    Step lines are flushed at least every ``step_flush_s`` seconds, so someone following the
    folder from another machine sees a slow run's steps as they happen, while a fast run's
    thousands of steps a second still cost one write per interval.
    """

    def __init__(self, path: Path, step_flush_s: float = 1.0) -> None:
        self.path = path
        self.step_flush_s = step_flush_s
        self._handle: IO[str] | None = open(path, "a", encoding="utf-8")  # noqa: SIM115
        self._flushed_at = time.monotonic()

    def _write(self, event: Any, flush: bool = False, **extra: Any) -> None:
        if self._handle is None:
            return
        try:
            record = {**event_to_dict(event), **extra}
            self._handle.write(json.dumps(_json_safe(record)) + "\n")
            if flush or time.monotonic() - self._flushed_at >= self.step_flush_s:
                self._handle.flush()
                self._flushed_at = time.monotonic()
        except OSError:
            # A full or read-only disk must not turn reporting into a crash: the run's own
            # save fails the same way and says so; the log just stops here.
            self.close()

    def on_run_start(self, event: RunStart) -> None:
        self._write(event, flush=True, writer=writer_process())

    def on_step(self, event: StepStats) -> None:
        self._write(event)

    def on_epoch_end(self, event: EpochEnd) -> None:
        self._write(event, flush=True)

    def on_message(self, event: Message) -> None:
        self._write(event, flush=True)

    def on_run_end(self, event: RunEnd) -> None:
        self._write(event, flush=True)
        self.close()

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                handle.close()
            except OSError:
                pass  # the final flush hit a full disk; nothing more can be written anyway


def writer_process() -> dict[str, Any]:
    """The process that writes a run's log: its host, pid and start time. A reader on the same
    host tells a live run from one whose process is gone (killed, crashed, power cut) by it."""
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "started": psutil.Process().create_time()}


def writer_is_alive(writer: dict[str, Any]) -> bool:
    """True while the process ``writer_process()`` described still runs (not a later process
    that was given the same pid)."""
    try:
        process = psutil.Process(int(writer["pid"]))
        return (abs(process.create_time() - float(writer["started"])) < 1.0
                and process.status() != psutil.STATUS_ZOMBIE)
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def read_metrics(run_dir: Path | str) -> list[dict[str, Any]]:
    """Every event of a run, in order (lines cut short by a crash are skipped)."""
    events = []
    with open(Path(run_dir) / METRICS_FILE, encoding="utf-8") as handle:
        for line in handle:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return events
