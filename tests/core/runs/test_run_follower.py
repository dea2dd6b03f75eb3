"""Following a run folder that grows elsewhere: metrics.jsonl as a real run wrote it, delivered
in pieces, replaced, truncated, or with lines that are not events."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import (
    EpochEnd,
    Message,
    RunEnd,
    RunStart,
    StepStats,
    event_from_dict,
)
from workbench.core.runs.run_folder import CONFIG_FILE, METRICS_FILE, MetricsWriter
from workbench.core.runs.run_follower import RunFollower
from workbench.core.training.engine import train


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """The folder of a real two-epoch run on a tiny generated dataset."""
    work = tmp_path_factory.mktemp("followed")
    data = write_shape_dataset(work / "data", classes=("circle", "square"), per_class=8,
                               size=(32, 32), layout="train_val", val_per_class=2)
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                         finetune="full", crop_mode="standard", resize_size=28, crop_size=28,
                         batch_size=4, epochs=2, workers=0, cache_images=False,
                         output_dir=str(work / "runs"), run_name="remote")
    end = train(config)
    assert end.status == "completed", end.error
    return Path(end.run_dir)


def kinds(events) -> list[str]:
    return [type(e).__name__ for e in events]


def written_events(run_dir: Path) -> list:
    lines = (run_dir / METRICS_FILE).read_text(encoding="utf-8").splitlines()
    return [event_from_dict(json.loads(line)) for line in lines]


PATH_FIELDS = ("run_dir", "checkpoint_path", "best_model_path", "last_checkpoint_path")


def same_events(followed, written) -> bool:
    """Equal but for the paths the follower relocates; NaN equal to NaN."""
    def comparable(event) -> str:
        fields = {k: v for k, v in event.__dict__.items() if k not in PATH_FIELDS}
        return type(event).__name__ + json.dumps(fields, default=str)

    return [comparable(e) for e in followed] == [comparable(e) for e in written]


def test_a_file_growing_in_odd_pieces_gives_every_event_once(finished_run, tmp_path):
    content = (finished_run / METRICS_FILE).read_bytes()
    local = tmp_path / "copy"
    local.mkdir()
    follower = RunFollower(local)
    assert follower.poll().events == []  # nothing there yet: no error
    assert follower.read_info() is None and follower.config_problem == ""

    shutil.copy(finished_run / CONFIG_FILE, local / CONFIG_FILE)
    followed = []
    cuts = sorted({0, 1, 17, 300, len(content) // 3, len(content) // 2 + 5, len(content) - 2,
                   len(content)})
    for start, stop in zip(cuts, cuts[1:], strict=False):
        with open(local / METRICS_FILE, "ab") as handle:
            handle.write(content[start:stop])
        batch = follower.poll()
        assert not batch.restarted
        followed += batch.events

    written = written_events(finished_run)
    relocated = [e for e in followed if isinstance(e, (RunStart, RunEnd))]
    assert all(e.run_dir == str(local) for e in relocated)
    assert followed[-1].best_model_path == str(local / "best_model.pt")
    assert kinds(followed) == kinds(written)
    steps = [e for e in followed if isinstance(e, StepStats)]
    assert [e for e in written if isinstance(e, StepStats)] == steps
    assert [e.epoch for e in followed if isinstance(e, EpochEnd)] == [1, 2]
    info = follower.read_info()
    assert info is not None and info.environment["world_size"] == 1
    assert "small_cnn" in info.summary() and "batch 4" in info.summary()
    assert "cpu" in info.summary()


def test_half_a_line_waits_for_the_rest(finished_run, tmp_path):
    first_line = (finished_run / METRICS_FILE).read_bytes().split(b"\n")[0] + b"\n"
    path = tmp_path / METRICS_FILE
    path.write_bytes(first_line[:40])
    follower = RunFollower(tmp_path)
    assert follower.poll().events == []
    assert follower.offset == 0
    with open(path, "ab") as handle:
        handle.write(first_line[40:])
    events = follower.poll().events
    assert kinds(events) == [kinds(written_events(finished_run))[0]]
    assert follower.offset == len(first_line)


def test_a_replaced_copy_that_grew_continues_and_a_rewritten_file_restarts(finished_run,
                                                                          tmp_path):
    content = (finished_run / METRICS_FILE).read_bytes()
    half = content.index(b"\n", len(content) // 2) + 1
    path = tmp_path / METRICS_FILE
    path.write_bytes(content[:half])
    follower = RunFollower(tmp_path)
    before = follower.poll().events

    # rsync writes a temporary file and renames it over the old one on every sync.
    temporary = tmp_path / ".metrics.jsonl.tmp"
    temporary.write_bytes(content)
    os.replace(temporary, path)
    batch = follower.poll()
    assert not batch.restarted
    assert same_events(before + batch.events, written_events(finished_run))

    # A new run written into the same folder: shorter, different content.
    path.write_bytes(content[:200].replace(b"remote", b"fresh!") + b"\n")
    batch = follower.poll()
    assert batch.restarted
    assert follower.offset == path.stat().st_size


def test_lines_that_are_not_events_are_reported_once_and_skipped(finished_run, tmp_path):
    lines = (finished_run / METRICS_FILE).read_bytes().splitlines(keepends=True)
    garbage = [b"not json at all\n", b'{"event": "StepStats", "loss": 1.0}\n', b"\xff\xfe\n",
               b'{"event": "EpochEnd", "epoch": "two"}\n']
    path = tmp_path / METRICS_FILE
    path.write_bytes(lines[0] + b"".join(garbage) + b"".join(lines[1:6]))
    follower = RunFollower(tmp_path)
    events = follower.poll().events
    warnings = [e for e in events if isinstance(e, Message) and METRICS_FILE in e.text]
    assert len(warnings) == len(garbage)
    assert "line 2" in warnings[0].text and "field 'epoch' is missing" in warnings[1].text
    assert "'two'" in warnings[3].text
    good = [e for e in events if e not in warnings]
    assert kinds(good) == kinds(written_events(finished_run)[:6])
    with open(path, "ab") as handle:
        handle.write(b"".join(lines[6:]))
    later = follower.poll().events
    assert kinds(later) == kinds(written_events(finished_run)[6:])  # no warning again
    assert isinstance(later[-1], RunEnd)


def test_a_small_read_limit_catches_up_over_several_polls(finished_run, tmp_path):
    shutil.copy(finished_run / METRICS_FILE, tmp_path / METRICS_FILE)
    follower = RunFollower(tmp_path, read_limit=512)
    followed, polls = [], 0
    while True:
        batch = follower.poll()
        followed += batch.events
        polls += 1
        if not batch.more_pending:
            break
    assert polls > 3
    assert same_events(followed, written_events(finished_run))


def test_nan_written_as_null_reads_back_as_nan(finished_run, tmp_path):
    line = json.loads((finished_run / METRICS_FILE).read_text().splitlines()[-1])
    assert line["event"] == "RunEnd"
    epoch = json.loads(next(text for text in (finished_run / METRICS_FILE).read_text()
                            .splitlines() if '"EpochEnd"' in text))
    epoch["train_loss"] = None
    epoch["per_class_accuracy"] = [None, 0.5]
    (tmp_path / METRICS_FILE).write_text(json.dumps(epoch) + "\n")
    (event,) = RunFollower(tmp_path).poll().events
    assert math.isnan(event.train_loss) and math.isnan(event.per_class_accuracy[0])
    assert event.confusion == tuple(tuple(row) for row in epoch["confusion"])


def test_an_unreadable_config_is_named(tmp_path):
    (tmp_path / CONFIG_FILE).write_text("{broken")
    follower = RunFollower(tmp_path)
    assert follower.read_info() is None
    assert CONFIG_FILE in follower.config_problem


@pytest.mark.parametrize(("step_flush_s", "seen_live"), [(0.0, 2), (3600.0, 0)])
def test_step_lines_reach_a_follower_while_the_epoch_runs(finished_run, tmp_path, step_flush_s,
                                                          seen_live):
    steps = [e for e in written_events(finished_run) if isinstance(e, StepStats)][:2]
    writer = MetricsWriter(tmp_path / METRICS_FILE, step_flush_s=step_flush_s)
    follower = RunFollower(tmp_path)
    for step in steps:
        writer.on_step(step)
    assert len(follower.poll().events) == seen_live  # no epoch end has flushed the file yet
    writer.close()
    assert len(follower.poll().events) == 2 - seen_live
