"""The runs index read from run folders written by hand, whose right answers are known: every
field of the summary and every cell of the table, the status of each kind of attempt (ended,
resumed, killed, written from another machine), the duration, the curves with a re-run epoch,
and the best epoch when it is neither the first nor the last."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from workbench.core.runs.run_index import (
    best_epoch_events,
    format_duration,
    list_runs,
    read_run_summary,
    run_curves,
    run_table_rows,
)

CREATED = "2026-03-04T05:06:07"
STEP = {"event": "StepStats", "epoch": 1, "step": 3, "loss": 0.9}


def _epoch(number: int, val_accuracy: float | None, best_epoch: int, train_loss: float = 1.0,
           val_loss: float = 1.0, train_accuracy: float = 0.5) -> dict:
    return {"event": "EpochEnd", "epoch": number, "epochs": 5, "train_loss": train_loss,
            "train_accuracy": train_accuracy, "val_loss": val_loss, "val_accuracy": val_accuracy,
            "per_class_accuracy": [0.5, 0.5], "confusion": [[1, 1], [1, 1]], "lr": 0.01,
            "epoch_seconds": 2.0, "images_per_second": 100.0, "is_best": False,
            "best_epoch": best_epoch, "best_val_accuracy": 0.0, "checkpoint_path": ""}


def _start(device: str, writer: dict | None = None) -> dict:
    event = {"event": "RunStart", "run_dir": "", "device": device, "device_name": device,
             "memory_total": None, "amp": False, "class_names": ["a", "b"], "train_samples": 8,
             "val_samples": 4, "epochs": 5, "start_epoch": 0, "steps_per_epoch": 2,
             "crops_per_sample": 1, "feature_cache": False, "dataset_summary": ""}
    if writer is not None:
        event["writer"] = writer
    return event


def _end(status: str, seconds: float | None) -> dict:
    event = {"event": "RunEnd", "status": status, "epochs_completed": 3, "best_epoch": 2,
             "best_val_accuracy": 0.83, "run_dir": "", "best_model_path": "",
             "last_checkpoint_path": "", "error": ""}
    if seconds is not None:
        event["seconds"] = seconds
    return event


def _write(folder: Path, document: dict | None, lines: list | None, age_s: float = 0.0) -> Path:
    """A run folder: config.json holds ``document``; metrics.jsonl ``lines`` (dicts are written
    as JSON, strings as they are), last changed ``age_s`` seconds ago."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(document))
    if lines is not None:
        text = "".join((json.dumps(line) if isinstance(line, dict) else line) + "\n"
                       for line in lines)
        (folder / "metrics.jsonl").write_text(text)
        when = time.time() - age_s
        os.utime(folder / "metrics.jsonl", (when, when))
    return folder


def _this_process() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "started": psutil.Process().create_time()}


def _a_finished_process() -> dict:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = psutil.Process(child.pid).create_time()
    child.wait()
    return {"host": socket.gethostname(), "pid": child.pid, "started": started}


def test_every_field_and_cell_of_a_finished_run(tmp_path) -> None:
    config = {"model": "resnet18", "data_root": "/data/flowers", "epochs": 5, "device": "cuda:0"}
    # The peak is in the middle; step lines sit between the epochs; the log is an hour old.
    folder = _write(tmp_path / "flowers-1", {"config": config, "created": CREATED}, [
        _start("cuda:1"), STEP, _epoch(1, 0.61, 1), STEP, _epoch(2, 0.83, 2), STEP,
        _epoch(3, 0.79, 2), _end("completed", 42.4)], age_s=3600)
    summary = read_run_summary(folder)
    assert (summary.run_dir, summary.name, summary.created) == (str(folder), "flowers-1", CREATED)
    # The device the run started on, not the one its config asked for.
    assert (summary.model, summary.dataset, summary.device) == ("resnet18", "flowers", "cuda:1")
    assert (summary.best_val_accuracy, summary.epochs_completed, summary.epochs) == (0.83, 3, 5)
    assert (summary.seconds, summary.status) == (42.4, "completed")
    assert summary.config == config
    assert run_table_rows([summary]) == [(
        "flowers-1", "2026-03-04 05:06:07", "resnet18", "flowers", "83.0%", "3/5", "42 s",
        "cuda:1", "completed")]


def test_a_run_that_wrote_little_shows_blanks_and_zeros(tmp_path) -> None:
    # No "created", no model, dataset, epochs or device in the config, no RunStart device.
    bare = read_run_summary(_write(tmp_path / "bare", {"config": {}}, [], age_s=3600))
    assert (bare.created, bare.model, bare.dataset, bare.device) == ("", "", "", "")
    assert (bare.epochs_completed, bare.epochs, bare.seconds) == (0, 0, 0.0)
    assert math.isnan(bare.best_val_accuracy) and bare.status == "interrupted"
    assert run_table_rows([bare]) == [("bare", "", "", "", "", "0/0", "0 s", "", "interrupted")]
    # A config.json without its "config" object: still listed, from what it has.
    no_config = read_run_summary(_write(tmp_path / "no-config", {"created": CREATED}, None))
    assert (no_config.model, no_config.config, no_config.status) == ("", {}, "interrupted")
    # epochs written as null counts as 0; without a RunStart the config's device is shown.
    null_epochs = read_run_summary(_write(
        tmp_path / "null", {"config": {"epochs": None, "device": "cpu"}}, [_epoch(1, 0.5, 1)]))
    assert (null_epochs.epochs, null_epochs.device, null_epochs.epochs_completed) == (0, "cpu", 1)


def test_an_unreadable_config_is_listed_with_blanks(tmp_path) -> None:
    folder = tmp_path / "damaged"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    summary = read_run_summary(folder)
    assert (summary.run_dir, summary.name, summary.created, summary.model, summary.dataset) == (
        str(folder), "damaged", "", "", "")
    assert (summary.epochs_completed, summary.epochs, summary.seconds, summary.device) == (
        0, 0, 0.0, "")
    assert summary.status == "unreadable" and math.isnan(summary.best_val_accuracy)


def test_the_duration_without_an_end_is_the_log_age_since_the_start(tmp_path) -> None:
    started = time.time() - 1000
    created = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))
    folder = _write(tmp_path / "killed", {"config": {}, "created": created},
                    [_start("cpu"), _epoch(1, 0.5, 1)])
    written = int(started) + 90
    os.utime(folder / "metrics.jsonl", (written, written))
    assert read_run_summary(folder).seconds == 90.0
    # A log older than the start (a clock set back) counts 0 s, as does a date nobody can read.
    os.utime(folder / "metrics.jsonl", (written - 200, written - 200))
    assert read_run_summary(folder).seconds == 0.0
    garbled = _write(tmp_path / "garbled", {"config": {}, "created": "yesterday"}, [_start("cpu")])
    assert read_run_summary(garbled).seconds == 0.0
    # An end record without seconds (an older version's) falls back to the log's age too.
    ended = _write(tmp_path / "ended", {"config": {}, "created": created},
                   [_start("cpu"), _end("completed", None)])
    os.utime(ended / "metrics.jsonl", (written, written))
    summary = read_run_summary(ended)
    assert (summary.seconds, summary.status) == (90.0, "completed")


def test_the_status_of_an_attempt_without_an_end(tmp_path) -> None:
    # Written on this host: the writing process decides, whatever the log's age.
    alive = _write(tmp_path / "alive", {"config": {}}, [_start("cpu", _this_process())],
                   age_s=3600)
    dead = _write(tmp_path / "dead", {"config": {}}, [_start("cpu", _a_finished_process())])
    assert read_run_summary(alive).status == "running"
    assert read_run_summary(dead).status == "interrupted"
    # Written from another machine: running while its log changed within 120 s.
    other = {"host": "another-" + socket.gethostname(), "pid": os.getpid(), "started": 0.0}
    fresh = _write(tmp_path / "fresh", {"config": {}}, [_start("cpu", other)], age_s=5)
    stale = _write(tmp_path / "stale", {"config": {}}, [_start("cpu", other)], age_s=125)
    assert read_run_summary(fresh).status == "running"
    assert read_run_summary(stale).status == "interrupted"
    # No log at all: interrupted.
    assert read_run_summary(_write(tmp_path / "nolog", {"config": {}}, None)).status == \
        "interrupted"


def test_a_resumed_attempt_is_judged_by_its_own_records(tmp_path) -> None:
    # The first attempt was cancelled by a process long gone; the resumed attempt (this
    # process) has just started: it is running, not "cancelled".
    folder = _write(tmp_path / "resumed", {"config": {}}, [
        _start("cpu", _a_finished_process()), _epoch(1, 0.6, 1), _end("cancelled", 10.0),
        _start("cpu", _this_process())], age_s=3600)
    assert read_run_summary(folder).status == "running"
    # The same log whose resumed attempt ended: that end counts.
    again = _write(tmp_path / "again", {"config": {}}, [
        _start("cpu"), _epoch(1, 0.6, 1), _end("cancelled", 10.0), _start("cpu"),
        _epoch(2, 0.7, 2), _end("failed", 25.0)], age_s=3600)
    assert (read_run_summary(again).status, read_run_summary(again).seconds) == ("failed", 25.0)


def test_a_damaged_log_still_gives_every_epoch(tmp_path) -> None:
    # A line cut short by a crash, then the resumed attempt's records; a bare string and a
    # message that names an event in a field; an epoch line without its number.
    folder = _write(tmp_path / "crashed", {"config": {"epochs": 5}}, [
        _start("cpu"), _epoch(1, 0.6, 1, train_loss=0.9), '{"event": "EpochEnd", "epo',
        '"RunEnd"', {"event": "Message", "text": "resuming", "after": "EpochEnd"},
        _start("cpu"), _epoch(2, 0.8, 2, train_loss=0.7), _epoch(3, 0.7, 2, train_loss=0.6)],
        age_s=3600)
    summary = read_run_summary(folder)
    assert (summary.epochs_completed, summary.best_val_accuracy) == (3, 0.8)
    assert run_curves(folder).epochs == (1, 2, 3)
    assert run_curves(folder).train_loss == (0.9, 0.7, 0.6)
    numberless = _write(tmp_path / "numberless", {"config": {}}, [
        _start("cpu"), _epoch(1, 0.6, 1), {"event": "EpochEnd", "val_accuracy": 0.5}])
    assert read_run_summary(numberless).epochs_completed == 1
    assert run_curves(numberless).epochs == (0, 1)
    # ... and when it names epoch 1 as the best, epoch 1 is shown, not the numberless line.
    named = _write(tmp_path / "named", {"config": {}}, [
        _start("cpu"), _epoch(1, 0.6, 1), {"event": "EpochEnd", "best_epoch": 1}])
    assert best_epoch_events(named)[1].val_accuracy == 0.6
    only = _write(tmp_path / "only", {"config": {}}, [{"event": "EpochEnd", "val_accuracy": 0.5}])
    assert read_run_summary(only).epochs_completed == 0


def test_the_curves_keep_each_columns_figures_and_the_last_report_of_an_epoch(tmp_path) -> None:
    # Epoch 2 is reported twice (a resumed run re-runs it): the later report counts.
    folder = _write(tmp_path / "curves", {"config": {}}, [
        _start("cpu"),
        _epoch(1, 0.61, 1, train_loss=1.5, val_loss=1.4, train_accuracy=0.40),
        _epoch(2, 0.70, 2, train_loss=1.2, val_loss=1.1, train_accuracy=0.55),
        STEP,
        _epoch(2, 0.83, 2, train_loss=1.0, val_loss=0.9, train_accuracy=0.65),
        _epoch(3, 0.79, 2, train_loss=0.8, val_loss=0.95, train_accuracy=0.75)])
    curves = run_curves(folder)
    assert curves.name == "curves"
    assert curves.epochs == (1, 2, 3)
    assert curves.train_loss == (1.5, 1.0, 0.8)
    assert curves.val_loss == (1.4, 0.9, 0.95)
    assert curves.train_accuracy == (0.40, 0.65, 0.75)
    assert curves.val_accuracy == (0.61, 0.83, 0.79)


def test_the_best_epoch_is_the_one_the_last_epoch_names(tmp_path) -> None:
    # The best moved from epoch 2 to epoch 4: the last epoch's record says so, the one before
    # it does not.
    folder = _write(tmp_path / "moved", {"config": {}}, [
        _start("cuda:0"), _epoch(1, 0.5, 1), _epoch(2, 0.8, 2), _epoch(3, 0.7, 2),
        _epoch(4, 0.9, 4), _end("completed", 9.0)])
    start, best, end = best_epoch_events(folder)
    assert start.device == "cuda:0"
    assert (best.epoch, best.val_accuracy) == (4, 0.9)
    assert (end.status, end.seconds) == ("completed", 9.0)
    # The best in the middle of three.
    middle = _write(tmp_path / "middle", {"config": {}}, [
        _start("cpu"), _epoch(1, 0.6, 1), _epoch(2, 0.83, 2), _epoch(3, 0.79, 2)])
    assert best_epoch_events(middle)[1].epoch == 2
    # No epoch was ever best (no validation image decoded): the last epoch is shown.
    never = _write(tmp_path / "never", {"config": {}}, [
        _start("cpu"), _epoch(1, None, 0), _epoch(2, None, 0), _epoch(3, None, 0)])
    assert best_epoch_events(never)[1].epoch == 3
    # Started, no epoch yet: nothing to show but the start.
    started = _write(tmp_path / "started", {"config": {}}, [_start("cpu")])
    first, no_best, no_end = best_epoch_events(started)
    assert (first.device, no_best, no_end) == ("cpu", None, None)


def test_runs_are_listed_newest_first_and_only_run_folders(tmp_path) -> None:
    _write(tmp_path / "b-middle", {"config": {}, "created": "2026-03-04T05:06:08"}, [])
    _write(tmp_path / "c-oldest", {"config": {}, "created": "2026-03-04T05:06:07"}, [])
    _write(tmp_path / "a-newest", {"config": {}, "created": "2026-03-04T05:06:09"}, [])
    # Two runs started within the same second: the later config.json is the newer run.
    _write(tmp_path / "tie-later", {"config": {}, "created": "2026-03-04T05:06:07"}, [])
    os.utime(tmp_path / "tie-later" / "config.json", ns=(2_000_000_000, 2_000_000_001))
    os.utime(tmp_path / "c-oldest" / "config.json", ns=(2_000_000_000, 2_000_000_000))
    (tmp_path / "notes.txt").write_text("not a run")
    (tmp_path / "empty-folder").mkdir()
    assert [run.name for run in list_runs(tmp_path)] == [
        "a-newest", "b-middle", "tie-later", "c-oldest"]
    assert list_runs(tmp_path / "missing") == []


def test_durations_read_as_a_person_writes_them() -> None:
    assert [format_duration(s) for s in (0, 42.4, 59, 59.6, 60, 61, 599, 3599, 3600, 3660,
                                        3661, 7199, 45296)] == [
        "0 s", "42 s", "59 s", "1 min 00 s", "1 min 00 s", "1 min 01 s", "9 min 59 s",
        "59 min 59 s", "1 h 00 min", "1 h 01 min", "1 h 01 min", "1 h 59 min", "12 h 34 min"]
