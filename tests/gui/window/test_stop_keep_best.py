"""Stop and keep best on a real tiny run: the epoch under way finishes, the run ends as
completed, and its result (best_model.pt, Results, Predict, the log) is the best epoch."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.core.models.checkpoint_format import read_workbench_file
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import EpochEnd, StepStats

RUN_TIMEOUT_MS = 120_000
EPOCHS = 6


def test_stop_and_keep_best_ends_after_the_epoch_with_the_best_epoch_as_result(
        qtbot, window, shapes_dataset, tmp_path):
    window.apply_config(TrainConfig(
        data_root=str(shapes_dataset), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=4, epochs=EPOCHS,
        lr=0.05, workers=0, device="cpu", amp=False, output_dir=str(tmp_path / "runs"),
        cache_dir=str(tmp_path / "cache")))
    events: list[object] = []
    window.controller.step_finished.connect(events.append)
    window.controller.epoch_ended.connect(events.append)
    controls = window.controls
    assert controls.keep_best_button.toolTip() != controls.stop_button.toolTip()
    assert "best_model.pt" in controls.keep_best_button.toolTip()
    assert "unfinished epoch is dropped" in controls.stop_button.toolTip()
    assert not controls.keep_best_button.isEnabled()

    # Hold the run during its second epoch or so, so that the epoch under way is known.
    with qtbot.waitSignal(window.controller.epoch_ended, timeout=RUN_TIMEOUT_MS):
        assert window.start_training()
    controls.pause_button.click()
    _wait_until_quiet(qtbot, events)
    last = events[-1]
    under_way = last.epoch + 1 if isinstance(last, EpochEnd) else last.epoch
    assert isinstance(last, EpochEnd | StepStats) and under_way < EPOCHS

    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        controls.keep_best_button.click()  # the paused run goes on to finish its epoch
        assert not controls.keep_best_button.isEnabled()
        assert controls.stop_button.isEnabled()  # Stop can still end it sooner
    end = ended.args[0]
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=RUN_TIMEOUT_MS)

    assert end.status == "completed" and end.epochs_completed == under_way
    lines = [json.loads(line) for line in Path(end.run_dir, "metrics.jsonl").read_text()
             .splitlines()]
    epochs = [line for line in lines if line["event"] == "EpochEnd"]
    assert [e["epoch"] for e in epochs] == list(range(1, under_way + 1))
    best = max(epochs, key=lambda e: e["val_accuracy"])  # the first of equals, as the run
    assert end.best_epoch == best["epoch"]
    kept = read_workbench_file(end.best_model_path)
    assert kept["epoch"] == best["epoch"]
    assert kept["val_accuracy"] == pytest.approx(best["val_accuracy"])
    assert window.results_panel.model_file() == end.best_model_path
    assert window.after_training.predict_panel.model_file() == end.best_model_path
    assert window.right_tabs.currentWidget() is window.results_panel
    log = window.log_panel.toPlainText()
    assert f"Stopped on request after epoch {under_way} of {EPOCHS}." in log
    line = re.search(r"Kept epoch (\d+) as the run's result \(val accuracy ([\d.]+)%, "
                     r"val loss ([\d.]+)\)", log)
    assert line, log
    assert int(line[1]) == best["epoch"]
    assert float(line[2]) == pytest.approx(100 * best["val_accuracy"], abs=0.051)  # .1f
    assert float(line[3]) == pytest.approx(best["val_loss"], abs=5.1e-5)  # .4f


def _wait_until_quiet(qtbot, events: list[object], quiet_ms: int = 1500) -> None:
    """Wait until no step or epoch event has arrived for ``quiet_ms`` (the run is held)."""
    while True:
        count = len(events)
        qtbot.wait(quiet_ms)
        if len(events) == count:
            return
