"""The run follower on folders written by hand, whose right answers are known: the one-line
summary of a run's config.json for one process and for several, what is read from a config
that is whole, partial or broken, the paths relocated into the local folder, the warnings for
unreadable lines (five, then silence, counted afresh after a rewrite), a short file rewritten,
and a read limit that stops at a line end."""

from __future__ import annotations

import json
from pathlib import Path

from tests.core.runs.test_run_index_known_answers import _end, _epoch, _start
from workbench.core.runs.events import EpochEnd, Message, RunEnd, RunStart
from workbench.core.runs.run_folder import CONFIG_FILE, METRICS_FILE
from workbench.core.runs.run_follower import RunFollower, RunInfo

CONFIG = {"model": "resnet18", "finetune": "last_layer", "epochs": 5, "optimizer": "sgd",
          "lr": 0.01, "batch_size": 32, "data_root": "/data/flowers"}


def _info(environment: dict, config: dict = CONFIG) -> RunInfo:
    return RunInfo(config=config, environment=environment, dataset={}, created="")


def test_the_summary_names_model_rate_batch_device_and_data() -> None:
    assert _info({"device": "cuda", "device_name": "NVIDIA A100"}).summary() == (
        "resnet18 (last_layer), 5 epochs, sgd lr 0.01, batch 32; cuda (NVIDIA A100); "
        "data /data/flowers")
    assert _info({"device": "cuda", "device_name": "NVIDIA A100", "world_size": 4,
                  "global_batch_size": 128}).summary() == (
        "resnet18 (last_layer), 5 epochs, sgd lr 0.01, batch 32 per process x 4 processes = "
        "128; cuda (4 x NVIDIA A100); data /data/flowers")
    # Two CPU processes without a device name or a written global batch; one process with a
    # world size of None; nothing known at all.
    assert _info({"device": "cpu", "world_size": 2}).summary() == (
        "resnet18 (last_layer), 5 epochs, sgd lr 0.01, batch 32 per process x 2 processes = ?; "
        "cpu; data /data/flowers")
    assert _info({"device": "cuda", "device_name": "T4", "world_size": 2,
                  "global_batch_size": 64}).summary() == (
        "resnet18 (last_layer), 5 epochs, sgd lr 0.01, batch 32 per process x 2 processes = "
        "64; cuda (2 x T4); data /data/flowers")
    assert _info({"device": "cpu", "world_size": None, "device_name": ""}).summary() == (
        "resnet18 (last_layer), 5 epochs, sgd lr 0.01, batch 32; cpu; data /data/flowers")
    assert _info({}, {}).summary() == "? (?), ? epochs, ? lr ?, batch ?; ?; data ?"


def test_a_config_is_read_whole_partly_or_not_and_says_why(tmp_path: Path) -> None:
    follower = RunFollower(tmp_path)
    assert follower.config_problem == ""
    assert follower.read_info() is None and follower.config_problem == ""  # not there yet
    path = tmp_path / CONFIG_FILE
    path.write_text(json.dumps({"config": CONFIG, "environment": {"device": "cpu"},
                                "dataset": {"classes": 2}, "created": "2026-03-04T05:06:07"}))
    assert follower.read_info() == RunInfo(config=CONFIG, environment={"device": "cpu"},
                                           dataset={"classes": 2},
                                           created="2026-03-04T05:06:07")
    # Only the config: the rest empty. Sections that are not objects count as missing.
    path.write_text(json.dumps({"config": {"model": "small_cnn"}}))
    assert follower.read_info() == RunInfo({"model": "small_cnn"}, {}, {}, "")
    path.write_text(json.dumps({"config": {}, "environment": [1], "dataset": "x"}))
    assert follower.read_info() == RunInfo({}, {}, {}, "")
    for document in ([CONFIG], {"config": [1]}, {"environment": {}}):
        path.write_text(json.dumps(document))
        assert follower.read_info() is None, document
        assert follower.config_problem == (
            f"{path}: cannot read the run's config (it has no 'config' object)"), document
    # Read again after a problem: the problem is gone.
    path.write_text(json.dumps({"config": {}}))
    assert follower.read_info() is not None and follower.config_problem == ""
    path.write_text(json.dumps([1]))
    follower.read_info()
    path.unlink()
    assert follower.read_info() is None and follower.config_problem == ""


def _lines(path: Path, events: list) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for event in events:
            handle.write((json.dumps(event) if isinstance(event, dict) else event) + "\n")


def test_paths_inside_the_run_folder_are_relocated_here_and_others_left(tmp_path: Path) -> None:
    remote = "/cloud/runs/r1"
    epoch = {**_epoch(1, 0.5, 1), "checkpoint_path": f"{remote}/last.pt"}
    elsewhere = {**epoch, "checkpoint_path": "/elsewhere/last.pt"}
    end = {**_end("completed", 3.0), "run_dir": remote, "best_model_path":
           f"{remote}/best_model.pt", "last_checkpoint_path": f"{remote}/last.pt"}
    # An epoch before any RunStart: its checkpoint is taken to be in the run folder.
    _lines(tmp_path / METRICS_FILE,
           [epoch, {**_start("cuda"), "run_dir": remote}, epoch, elsewhere, end])
    events = RunFollower(tmp_path).poll().events
    assert [type(e) for e in events] == [EpochEnd, RunStart, EpochEnd, EpochEnd, RunEnd]
    assert events[0].checkpoint_path == str(tmp_path / "last.pt")
    assert events[1].run_dir == str(tmp_path)
    assert events[2].checkpoint_path == str(tmp_path / "last.pt")
    assert events[3].checkpoint_path == "/elsewhere/last.pt"  # outside the run folder
    assert events[4].run_dir == str(tmp_path)
    assert events[4].best_model_path == str(tmp_path / "best_model.pt")
    assert events[4].last_checkpoint_path == str(tmp_path / "last.pt")


def _bad_lines_reported(events: list) -> list[str]:
    assert all(isinstance(e, Message) and e.level == "warning" for e in events)
    return [e.text for e in events]


def test_five_unreadable_lines_are_reported_then_none_and_afresh_after_a_rewrite(
        tmp_path: Path) -> None:
    path = tmp_path / METRICS_FILE
    _lines(path, ["{not json"] * 7)
    follower = RunFollower(tmp_path)
    texts = _bad_lines_reported(follower.poll().events)
    assert len(texts) == 5
    for number, text in enumerate(texts, start=1):
        assert text.startswith(f"{path} line {number}: not an event (Expecting "), text
    assert [text.endswith("); skipped") for text in texts] == [True] * 4 + [False]
    assert texts[4].endswith("); skipped; further unreadable lines are skipped without a word")
    # A new run writes the folder again (shorter): it counts afresh from its first line.
    path.write_text("\n".join(["[1]"] * 5) + "\n")
    batch = follower.poll()
    assert batch.restarted
    texts = _bad_lines_reported(batch.events)
    assert [text.split(": not an event")[0] for text in texts] == [
        f"{path} line {n}" for n in range(1, 6)]
    assert "(expected a JSON object, got list)" in texts[0]
    assert texts[4].endswith("further unreadable lines are skipped without a word")


def test_a_short_file_rewritten_is_read_again_from_its_first_byte(tmp_path: Path) -> None:
    path = tmp_path / METRICS_FILE
    first = {"event": "Message", "level": "info", "text": "one"}
    _lines(path, [first])
    follower = RunFollower(tmp_path)
    assert follower.poll().events == [Message("info", "one")]
    # Rewritten, longer, and not starting with what was read: a restart from byte 0.
    path.write_text(json.dumps({"event": "Message", "level": "info", "text": "two"}) + "\n"
                    + json.dumps(first) + "\n")
    batch = follower.poll()
    assert batch.restarted and batch.events == [Message("info", "two"), Message("info", "one")]
    assert (follower.offset, follower.lines_read) == (path.stat().st_size, 2)
    # Appended to after the restart: only the new line, no second restart.
    _lines(path, [{"event": "Message", "level": "info", "text": "three"}])
    batch = follower.poll()
    assert not batch.restarted and batch.events == [Message("info", "three")]


def test_a_read_limit_stops_after_the_first_whole_line_it_reaches(tmp_path: Path) -> None:
    path = tmp_path / METRICS_FILE
    texts = ["a" * 40, "b", "c"]
    _lines(path, [{"event": "Message", "level": "info", "text": text} for text in texts])
    follower = RunFollower(tmp_path, read_limit=10)  # shorter than any line
    seen = []
    for _ in texts:
        batch = follower.poll()
        assert len(batch.events) == 1
        seen.append(batch.events[0].text)
    assert seen == texts
    assert not batch.more_pending and follower.poll().events == []


def test_a_metrics_path_that_cannot_be_read_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / METRICS_FILE).mkdir()
    batch = RunFollower(tmp_path).poll()
    assert len(batch.events) == 1 and batch.events[0].level == "warning"
    assert batch.events[0].text.startswith(f"{tmp_path / METRICS_FILE}: cannot read (")
