"""The runs table and curves of real tiny runs, and of folders a crash left behind."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.run_index import config_differences, list_runs, run_curves
from workbench.core.training.engine import train


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs-index")
    data = write_shape_dataset(root / "shapes", per_class=4, size=(32, 32), layout="train_val",
                               val_per_class=2)
    base = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                       crop_mode="standard", resize_size=32, crop_size=28, batch_size=8,
                       workers=0, output_dir=str(root / "runs"), device="cpu", amp=False,
                       cache_images=False, finetune="full")
    ends = [train(base.replace(run_name="first", epochs=1, lr=0.01), Callback()),
            train(base.replace(run_name="second", epochs=2, lr=0.02), Callback())]
    return root / "runs", ends


def test_every_run_is_listed_newest_first(two_runs):
    output, ends = two_runs
    (output / "not-a-run").mkdir()
    runs = list_runs(output)
    assert [r.name.split("-")[0] for r in runs] == ["second", "first"]
    second, first = runs
    assert (second.model, second.dataset, second.device, second.status) == (
        "small_cnn", "shapes", "cpu", "completed")
    assert (second.epochs_completed, second.epochs, first.epochs) == (2, 2, 1)
    assert second.best_val_accuracy == pytest.approx(ends[1].best_val_accuracy)
    assert second.seconds == pytest.approx(ends[1].seconds)
    assert second.best_model_path and second.last_checkpoint_path
    curves = run_curves(second.run_dir)
    assert curves.epochs == (1, 2) and len(curves.val_accuracy) == 2
    assert max(curves.val_accuracy) == pytest.approx(second.best_val_accuracy)
    assert config_differences([first.config, second.config]) == {
        "epochs": [1, 2], "lr": [0.01, 0.02], "run_name": ["first", "second"]}


def test_a_run_without_an_end_and_a_damaged_config(tmp_path):
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / "config.json").write_text(json.dumps(
        {"config": {"model": "resnet18", "epochs": 5}, "created": "2026-01-02T03:04:05"}))
    (killed / "metrics.jsonl").write_text('{"epoch": 1, "val_accuracy": 0.5, "event": "EpochEnd"}'
                                          '\n{"epoch": 2, "val_acc')
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "config.json").write_text("{not json")
    by_name = {r.name: r for r in list_runs(tmp_path)}
    # No process is named in its log (a folder another machine writes): it counts as running
    # while its log keeps changing, and it was written just now.
    assert by_name["killed"].status == "running"
    assert by_name["killed"].epochs_completed == 1 and by_name["killed"].best_val_accuracy == 0.5
    assert by_name["damaged"].status == "unreadable"
    assert math.isnan(by_name["damaged"].best_val_accuracy)


def test_workbench_runs_prints_the_table(two_runs):
    output, _ = two_runs
    done = subprocess.run([sys.executable, "-m", "workbench", "runs", str(output)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["name", "date", "model", "dataset"]
    assert lines[1].startswith("second-") and "small_cnn" in lines[1]
    assert "2/2" in lines[1] and "completed" in lines[1] and "cpu" in lines[1]
    assert lines[2].startswith("first-") and "1/1" in lines[2]


def test_a_killed_run_is_listed_as_interrupted_at_once(tmp_path):
    # A real run in its own process, as `workbench train` runs it, killed mid-run: its log
    # changed a moment ago, yet it is not "running" any more.
    data = write_shape_dataset(tmp_path / "shapes", per_class=6, size=(32, 32))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[3]),
               WORKBENCH_CACHE_DIR=str(tmp_path / "cache"))
    child = subprocess.Popen(
        [sys.executable, "-m", "workbench", "train", "--data-root", str(data), "--model",
         "small_cnn", "--weights", "none", "--epochs", "500", "--batch-size", "4",
         "--workers", "0", "--output-dir", str(tmp_path / "runs")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not any('"EpochEnd"' in path.read_text()
                      for path in (tmp_path / "runs").glob("*/metrics.jsonl")):
            assert child.poll() is None and time.monotonic() < deadline, "no epoch ended"
            time.sleep(0.2)
        [running] = list_runs(tmp_path / "runs")
        assert running.status == "running"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    [killed] = list_runs(tmp_path / "runs")
    assert killed.status == "interrupted"
    assert killed.epochs_completed >= 1
