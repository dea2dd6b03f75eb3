"""A run folder's finished epochs read back for a resumed run: an interrupted attempt's steps
of an unfinished epoch are dropped, each finished epoch keeps the steps of the attempt that
finished it."""

from __future__ import annotations

from pathlib import Path

from workbench.core.runs.events import EpochEnd, RunEnd, RunStart, StepStats
from workbench.core.runs.run_folder import METRICS_FILE, MetricsWriter
from workbench.core.runs.run_history import read_run_history


def run_start(start_epoch: int) -> RunStart:
    return RunStart("run", "cpu", "CPU", None, False, ("a", "b"), 8, 4, 3, start_epoch, 3, 1,
                    False, "8 train / 4 val")


def step(epoch: int, index: int, loss: float) -> StepStats:
    return StepStats(epoch, index, 3, 3 * (epoch - 1) + index, loss, loss, 0.5, 0.5, 0.1,
                     100.0, 0.01, 0.02, None, None, None, None, 2**30)


def epoch_end(epoch: int) -> EpochEnd:
    return EpochEnd(epoch, 3, 0.5, 0.6, 0.4, 0.7, (0.7, 0.7), ((2, 0), (0, 2)), 0.1, 1.0, 100.0,
                    True, epoch, 0.7, f"run/epoch{epoch}.pt")


def write_two_attempts(run_dir: Path) -> None:
    """Attempt 1 finishes epoch 1 and stops in epoch 2; attempt 2 resumes and finishes it."""
    first = MetricsWriter(run_dir / METRICS_FILE)
    first.on_run_start(run_start(0))
    for index in (1, 2, 3):
        first.on_step(step(1, index, 1.0))
    first.on_epoch_end(epoch_end(1))
    for index in (1, 2):
        first.on_step(step(2, index, 9.0))  # the interrupted attempt: never drawn
    first.close()
    second = MetricsWriter(run_dir / METRICS_FILE)
    second.on_run_start(run_start(1))
    for index in (1, 2, 3):
        second.on_step(step(2, index, 0.5))
    second.on_epoch_end(epoch_end(2))
    second.on_step(step(3, 1, 8.0))  # stopped in epoch 3: not finished
    second.on_run_end(RunEnd("cancelled", 2, 2, 0.7, "run", "", "", 1.0))


def test_history_holds_the_finished_epochs_of_every_attempt(tmp_path):
    write_two_attempts(tmp_path)

    history = read_run_history(tmp_path)

    assert history.start is not None and history.start.start_epoch == 0
    assert history.epochs_done == 2
    assert [(type(e).__name__, e.epoch) for e in history.events] == [
        ("StepStats", 1), ("StepStats", 1), ("StepStats", 1), ("EpochEnd", 1),
        ("StepStats", 2), ("StepStats", 2), ("StepStats", 2), ("EpochEnd", 2)]
    assert {e.loss for e in history.events if isinstance(e, StepStats)} == {1.0, 0.5}


def test_a_folder_without_metrics_has_no_history(tmp_path):
    history = read_run_history(tmp_path / "missing")
    assert history.start is None and history.events == [] and history.epochs_done == 0
