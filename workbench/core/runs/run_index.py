"""Every run under an output folder, summarised from its config.json and metrics.jsonl.

``list_runs`` gives one ``RunSummary`` a run folder (newest first) for the app's Runs tab and
``workbench runs``; ``run_curves`` gives the per-epoch curves of one run, for overlaying several;
``config_differences`` gives the config fields in which runs differ. Step lines of
metrics.jsonl are skipped without being parsed, so a long run's log reads quickly.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.runs.events import event_from_dict
from workbench.core.runs.run_folder import (
    BEST_MODEL,
    CONFIG_FILE,
    LAST_CHECKPOINT,
    METRICS_FILE,
    writer_is_alive,
)

# A run without a RunEnd whose log changed this recently is taken to be still running.
RUNNING_IF_WRITTEN_WITHIN_S = 120.0
_WANTED_EVENTS = ('"RunStart"', '"EpochEnd"', '"RunEnd"')
RUN_TABLE_COLUMNS = ("name", "date", "model", "dataset", "best val acc", "epochs", "duration",
                     "device", "status")


@dataclass(frozen=True)
class RunSummary:
    """One run folder, as the runs table shows it.

    Attributes:
        run_dir: the folder.
        name: the folder's name.
        created: when the run started (ISO 8601, seconds), '' if unknown.
        model: the model's name, e.g. 'resnet18' (model_catalog.MODEL_NAMES).
        dataset: the dataset folder's name.
        best_val_accuracy: 0..1, NaN before the first epoch.
        epochs_completed: epochs finished.
        epochs: epochs asked for.
        seconds: wall time of the run (to its last event when it has not ended).
        device: the device it trained on.
        status: how the run's latest attempt ended: 'completed', 'cancelled' or 'failed'
            from its end record; without one, 'running' (its log changed recently) or
            'interrupted' (killed, crashed or powered off). An end record an earlier attempt
            wrote before a resume says nothing about the resumed attempt.
        config: the run's config as written in config.json.
        split_fingerprint: a hash of the run's validation files ('' in runs written before
            it was recorded); runs with different ones were not validated on the same images.
    """

    run_dir: str
    name: str
    created: str
    model: str
    dataset: str
    best_val_accuracy: float
    epochs_completed: int
    epochs: int
    seconds: float
    device: str
    status: str
    config: dict[str, Any] = field(default_factory=dict, compare=False)
    split_fingerprint: str = ""

    @property
    def best_model_path(self) -> str:
        """best_model.pt of the run, '' when it has none."""
        path = Path(self.run_dir) / BEST_MODEL
        return str(path) if path.is_file() else ""

    @property
    def last_checkpoint_path(self) -> str:
        """last.pt of the run (to resume from), '' when it has none."""
        path = Path(self.run_dir) / LAST_CHECKPOINT
        return str(path) if path.is_file() else ""


@dataclass(frozen=True)
class RunCurves:
    """Per-epoch figures of one run, for plotting several runs on one chart."""

    name: str
    epochs: tuple[int, ...]
    train_loss: tuple[float, ...]
    val_loss: tuple[float, ...]
    train_accuracy: tuple[float, ...]
    val_accuracy: tuple[float, ...]


def list_runs(output_dir: str | os.PathLike[str]) -> list[RunSummary]:
    """Every run folder directly under ``output_dir`` (one holding config.json), newest first.

    A folder whose files cannot be read is listed with status 'unreadable' instead of hiding it.
    """
    root = Path(output_dir)
    if not root.is_dir():
        return []
    runs = [read_run_summary(folder) for folder in root.iterdir()
            if folder.is_dir() and (folder / CONFIG_FILE).is_file()]
    return sorted(runs, key=_start_order, reverse=True)


def _start_order(run: RunSummary) -> tuple[str, int]:
    """When a run started: ``created`` has whole seconds only, so two runs started within one
    second are told apart by their config.json's write time (nanoseconds)."""
    try:
        written = (Path(run.run_dir) / CONFIG_FILE).stat().st_mtime_ns
    except OSError:
        written = 0
    return run.created, written


def read_run_summary(run_dir: str | os.PathLike[str]) -> RunSummary:
    """The summary of one run folder."""
    folder = Path(run_dir)
    try:
        document = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
        config = dict(document.get("config", {}))
    except (OSError, ValueError, AttributeError):
        return RunSummary(str(folder), folder.name, "", "", "", math.nan, 0, 0, 0.0, "",
                          "unreadable")
    events = _summary_events(folder)
    start = next((e for e in events if e["event"] == "RunStart"), {})
    latest_start = next((e for e in reversed(events) if e["event"] == "RunStart"), {})
    epochs = [e for e in events if e["event"] == "EpochEnd"]
    end = _end_of_latest_attempt(events)
    # An epoch none of whose validation images decoded has a NaN accuracy: max() would
    # return it when it comes first, hiding the best epoch.
    accuracies = (_number(e.get("val_accuracy")) for e in epochs)
    best = max((a for a in accuracies if not math.isnan(a)), default=math.nan)
    created = str(document.get("created", ""))
    return RunSummary(
        run_dir=str(folder), name=folder.name, created=created,
        model=str(config.get("model", "")),
        dataset=Path(str(config.get("data_root", ""))).name,
        best_val_accuracy=best,
        epochs_completed=max((int(e.get("epoch", 0)) for e in epochs), default=0),
        epochs=int(config.get("epochs", 0) or 0),
        seconds=_duration(folder, created, end),
        device=str(start.get("device") or config.get("device", "")),
        status=str(end["status"]) if end else _status_without_end(folder, latest_start),
        config=config,
        split_fingerprint=str(_dict(document.get("dataset")).get("split_fingerprint") or ""),
    )


def split_differences(runs: Sequence[RunSummary]) -> str:
    """A sentence when ``runs`` were not validated on the same images (their accuracies are
    then not comparable as equals); '' when they were, or when a run does not say."""
    prints = [run.split_fingerprint for run in runs]
    if len(runs) < 2 or not all(prints) or len(set(prints)) == 1:
        return ""
    named = ", ".join(f"{run.name}: {fingerprint}" for run, fingerprint in zip(
        runs, prints, strict=True))
    return (f"These runs validated on different images (split {named}): a different folder, "
            "seed, val_fraction, exclusion list or health check's copies. Their accuracies "
            "are not measured on the same test, so compare them with care.")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def run_curves(run_dir: str | os.PathLike[str]) -> RunCurves:
    """The per-epoch losses and accuracies of a run (the last report of each epoch counts)."""
    folder = Path(run_dir)
    by_epoch: dict[int, dict[str, Any]] = {}
    for event in _summary_events(folder):
        if event["event"] == "EpochEnd":
            by_epoch[int(event.get("epoch", 0))] = event
    epochs = sorted(by_epoch)

    def column(key: str) -> tuple[float, ...]:
        return tuple(_number(by_epoch[e].get(key)) for e in epochs)

    return RunCurves(folder.name, tuple(epochs), column("train_loss"), column("val_loss"),
                     column("train_accuracy"), column("val_accuracy"))


def config_differences(configs: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """The config fields whose values are not the same in every one of ``configs``
    (a field one config lacks counts as None), each with its values in order."""
    keys = sorted({key for config in configs for key in config})
    differences = {}
    for key in keys:
        values = [config.get(key) for config in configs]
        if any(value != values[0] for value in values[1:]):
            differences[key] = values
    return differences


def run_table_rows(runs: Sequence[RunSummary]) -> list[tuple[str, ...]]:
    """The cells of the runs table, one tuple a run, in ``RUN_TABLE_COLUMNS`` order."""
    rows = []
    for run in runs:
        accuracy = "" if math.isnan(run.best_val_accuracy) else \
            f"{100 * run.best_val_accuracy:.1f}%"
        rows.append((run.name, run.created.replace("T", " "), run.model, run.dataset, accuracy,
                     f"{run.epochs_completed}/{run.epochs}", format_duration(run.seconds),
                     run.device, run.status))
    return rows


def format_duration(seconds: float) -> str:
    """'42 s', '3 min 05 s' or '2 h 04 min'."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _summary_events(folder: Path) -> list[dict[str, Any]]:
    """RunStart, EpochEnd and RunEnd events of metrics.jsonl, in order (steps skipped)."""
    events = []
    try:
        with open(folder / METRICS_FILE, encoding="utf-8") as handle:
            for line in handle:
                if not any(kind in line for kind in _WANTED_EVENTS):
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a crash
                if isinstance(event, dict) and event.get("event") in ("RunStart", "EpochEnd",
                                                                      "RunEnd"):
                    events.append(event)
    except OSError:
        return []
    return events


def _end_of_latest_attempt(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The RunEnd written after the last RunStart, None when that attempt has none (a resumed
    run appends to the same log, so an earlier attempt's end is still in it)."""
    for event in reversed(events):
        if event["event"] == "RunEnd":
            return event
        if event["event"] == "RunStart":
            return None
    return None


def _duration(folder: Path, created: str, end: dict[str, Any] | None) -> float:
    if end is not None and end.get("seconds") is not None:
        return float(end["seconds"])
    try:
        started = _dt.datetime.fromisoformat(created).timestamp()
        return max(0.0, (folder / METRICS_FILE).stat().st_mtime - started)
    except (OSError, ValueError):
        return 0.0


def _status_without_end(folder: Path, start: dict[str, Any]) -> str:
    """'running' or 'interrupted' for an attempt that wrote no end. On the host that runs it,
    its process says which; a run written from another machine (a shared folder) counts as
    running while its log keeps changing."""
    writer = start.get("writer")
    if isinstance(writer, dict) and writer.get("host") == socket.gethostname():
        return "running" if writer_is_alive(writer) else "interrupted"
    try:
        age = time.time() - (folder / METRICS_FILE).stat().st_mtime
    except OSError:
        return "interrupted"
    return "running" if age < RUNNING_IF_WRITTEN_WITHIN_S else "interrupted"


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else math.nan


def best_epoch_events(run_dir: str | os.PathLike[str]) -> tuple[Any, Any, Any]:
    """(RunStart, best EpochEnd, RunEnd) of a run, each None when the log has none, for
    showing a finished run's results again."""
    events = _summary_events(Path(run_dir))
    start = next((e for e in events if e["event"] == "RunStart"), None)
    end = _end_of_latest_attempt(events)
    epochs = [e for e in events if e["event"] == "EpochEnd"]
    best = None
    if epochs:
        best_number = int(epochs[-1].get("best_epoch") or 0)
        best = next((e for e in reversed(epochs) if int(e.get("epoch", 0)) == best_number),
                    epochs[-1])
    return tuple(None if e is None else event_from_dict(e) for e in (start, best, end))
