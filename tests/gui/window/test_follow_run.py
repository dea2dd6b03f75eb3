"""File > Follow run folder: a real run's folder, delivered in pieces as a sync would, drawn
live in the real window; following ends with the run, or when a local run starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.run_folder import CONFIG_FILE, METRICS_FILE
from workbench.core.training.engine import train
from workbench.gui.window.main_window import MainWindow

WAIT_MS = 10_000


@pytest.fixture(scope="module")
def remote_run(tmp_path_factory) -> tuple[Path, Path]:
    """A finished two-epoch run (standing in for one on another machine) and its data."""
    work = tmp_path_factory.mktemp("remote")
    data = write_shape_dataset(work / "data", classes=("circle", "square"), per_class=8,
                               size=(32, 32), layout="train_val", val_per_class=2)
    end = train(small_config(data, work / "runs"))
    assert end.status == "completed", end.error
    return Path(end.run_dir), data


def small_config(data: Path, output: Path) -> TrainConfig:
    return TrainConfig(data_root=str(data), model="small_cnn", weights="none", finetune="full",
                       crop_mode="standard", resize_size=28, crop_size=28, batch_size=4,
                       epochs=2, workers=0, cache_images=False, output_dir=str(output),
                       run_name="remote")


@pytest.fixture
def window(window: MainWindow) -> MainWindow:
    """The shown window, polling followed run folders every 50 ms."""
    window.run_follow.interval_ms = 50
    return window


def metrics_lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / METRICS_FILE).read_text().splitlines()]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_a_growing_run_folder_is_drawn_live_and_followed_to_its_end(qtbot, window, remote_run,
                                                                   tmp_path):
    run_dir, _ = remote_run
    content = (run_dir / METRICS_FILE).read_bytes()
    lines = metrics_lines(run_dir)
    steps_total = sum(1 for line in lines if line["event"] == "StepStats")
    local = tmp_path / "synced"
    local.mkdir()
    shutil.copy(run_dir / CONFIG_FILE, local / CONFIG_FILE)
    cut = content.index(b'"event": "EpochEnd"')  # inside the first epoch's end line
    (local / METRICS_FILE).write_bytes(content[:cut])
    steps_before_cut = content[:cut].count(b'"event": "StepStats"')

    assert window.follow_run(str(local))
    assert window.run_follow.is_following()
    banner = window.run_follow.banner.text_label.text()
    assert str(local) in banner and "small_cnn" in banner and "batch 4" in banner
    assert "cpu" in banner
    plots = window.plots
    qtbot.waitUntil(lambda: plots.point_count("loss_raw") == steps_before_cut, timeout=WAIT_MS)
    assert plots.point_count("accuracy_val_epoch") == 0  # its line is not complete yet
    assert window.status_panel.device_label.text().startswith("cpu")
    assert window.right_tabs.currentWidget() is window.training_tab

    middle = cut + (len(content) - cut) // 2
    with qtbot.waitSignal(window.run_follow.run_ended, timeout=WAIT_MS) as ended:
        append(local / METRICS_FILE, content[cut:middle])
        qtbot.wait(200)
        append(local / METRICS_FILE, content[middle:])
    assert ended.args[0].status == "completed"
    assert ended.args[0].best_model_path == str(local / "best_model.pt")
    assert plots.point_count("loss_raw") == steps_total
    assert plots.point_count("accuracy_val_epoch") == 2
    assert not window.run_follow.is_following()
    assert window.status_panel.state_label.text().startswith("Completed")
    assert "Followed" in window.run_follow.banner.text_label.text()
    log = window.log_panel.toPlainText()
    assert "not an event" not in log
    assert "Epoch 2/2" in log and f"Stopped following {local}: the run completed" in log


def test_starting_a_local_run_stops_following(qtbot, window, remote_run, tmp_path):
    run_dir, data = remote_run
    local = tmp_path / "synced"
    local.mkdir()
    half = (run_dir / METRICS_FILE).read_bytes()
    (local / METRICS_FILE).write_bytes(half[:len(half) // 2])
    assert window.follow_run(str(local))
    qtbot.waitUntil(lambda: window.plots.point_count("loss_raw") > 0, timeout=WAIT_MS)

    window.apply_config(small_config(data, tmp_path / "local_runs").replace(epochs=1))
    qtbot.waitUntil(lambda: window.controls.start_button.isEnabled(), timeout=30_000)
    with qtbot.waitSignal(window.controller.finished, timeout=120_000):
        assert window.start_training()
        assert not window.run_follow.is_following()
        assert not window.run_follow.banner.isVisible()
        assert not window.file_menu.follow_run.isEnabled()  # one run in the plots at a time
    assert "a run started on this computer" in window.log_panel.toPlainText()
    assert window.plots.point_count("accuracy_val_epoch") == 1  # the local run's epoch only
    assert window.file_menu.follow_run.isEnabled()


def test_a_folder_of_runs_is_refused_with_a_hint(window, remote_run):
    run_dir, _ = remote_run
    assert not window.follow_run(str(run_dir.parent))
    assert "holds runs" in window.last_error and run_dir.name in window.last_error
    assert not window.run_follow.is_following()


def test_an_unreadable_config_is_named_above_the_plots(qtbot, window, remote_run, tmp_path):
    run_dir, _ = remote_run
    (tmp_path / CONFIG_FILE).write_text('{"config": ')  # cut short by a copy
    shutil.copy(run_dir / METRICS_FILE, tmp_path / METRICS_FILE)
    assert window.follow_run(str(tmp_path))
    banner = window.run_follow.banner.text_label
    assert CONFIG_FILE in banner.text() and "cannot read" in banner.text()
    qtbot.waitUntil(lambda: not window.run_follow.is_following(), timeout=WAIT_MS)
    assert window.plots.point_count("accuracy_val_epoch") == 2  # the events are drawn anyway
