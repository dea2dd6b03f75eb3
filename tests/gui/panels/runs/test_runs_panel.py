"""The Runs tab on two real tiny runs: the table, the overlay of both and their config diff."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train
from workbench.gui.panels.runs.run_comparison_plot import RUN_COLOURS
from workbench.gui.panels.runs.runs_panel import RunsPanel

TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def output_with_two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("two-runs")
    data = write_shape_dataset(root / "shapes", per_class=4, size=(32, 32), layout="train_val",
                               val_per_class=2)
    base = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                       crop_mode="standard", resize_size=32, crop_size=28, batch_size=8,
                       workers=0, output_dir=str(root / "runs"), device="cpu", amp=False,
                       cache_images=False, finetune="full")
    train(base.replace(run_name="slow", epochs=2, lr=0.001), Callback())
    train(base.replace(run_name="fast", epochs=3, lr=0.05), Callback())
    return root / "runs"


@pytest.fixture
def panel(qtbot, output_with_two_runs) -> RunsPanel:
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    with qtbot.waitSignal(panel.runs_listed, timeout=TIMEOUT_MS) as listed:
        panel.set_output_dir(str(output_with_two_runs))
    assert listed.args == [2]
    return panel


def test_two_selected_runs_overlay_in_two_colours(qtbot, panel):
    assert [panel.table.item(r, 0).text().split("-")[0] for r in range(2)] == ["fast", "slow"]
    assert panel.table.item(0, 5).text() == "3/3" and panel.table.item(0, 8).text() == "completed"

    with qtbot.waitSignal(panel.curves_shown, timeout=TIMEOUT_MS) as shown:
        qtbot.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton,
                         pos=panel.table.visualItemRect(panel.table.item(0, 0)).center())
        qtbot.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.ControlModifier,
                         pos=panel.table.visualItemRect(panel.table.item(1, 0)).center())
        qtbot.waitUntil(lambda: len(panel.selected_runs()) == 2)
    qtbot.waitUntil(lambda: not panel.is_busy())
    assert [len(c.epochs) for c in panel.comparison.curves()] == [3, 2]
    assert panel.comparison.drawn_colours() == [RUN_COLOURS[0].lower(), RUN_COLOURS[1].lower()]
    assert shown.args[0] in (1, 2)
    diff = panel.config_diff.toPlainText()
    assert "epochs" in diff and "lr" in diff and "batch_size" not in diff
    assert "validated on different images" not in diff  # one val/ folder: one split
    assert not panel.open_button.isEnabled()  # open, resume and export take one run


def test_one_run_can_be_opened_resumed_and_exported(qtbot, panel):
    panel.select_rows([1])
    run = panel.selected_runs()[0]
    assert panel.open_button.isEnabled() and panel.resume_button.isEnabled()
    with qtbot.waitSignal(panel.open_results_requested) as opened:
        qtbot.mouseClick(panel.open_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(panel.resume_requested) as resumed:
        qtbot.mouseClick(panel.resume_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(panel.export_requested) as exported:
        qtbot.mouseClick(panel.export_button, Qt.MouseButton.LeftButton)
    assert opened.args == [run.run_dir]
    assert resumed.args[0].endswith("last.pt") and exported.args[0].endswith("best_model.pt")
    qtbot.waitUntil(lambda: not panel.is_busy())


def test_runs_on_different_splits_are_said_to_be_before_their_differences(qtbot, tmp_path):
    import json

    for name, seed, fingerprint in (("seed0", 0, "0123456789ab"), ("seed1", 1, "ba9876543210")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(
            {"config": {"model": "small_cnn", "seed": seed}, "created": f"2026-12-06T1{seed}:00",
             "dataset": {"split_fingerprint": fingerprint}}))
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.show()
    with qtbot.waitSignal(panel.runs_listed, timeout=TIMEOUT_MS):
        panel.set_output_dir(str(tmp_path))
    panel.table.selectAll()
    qtbot.waitUntil(lambda: len(panel.selected_runs()) == 2)
    qtbot.waitUntil(lambda: "seed" in panel.config_diff.toPlainText())
    lines = panel.config_diff.toPlainText().splitlines()
    assert lines[0].startswith("These runs validated on different images (split seed1: "
                               "ba9876543210, seed0: 0123456789ab)")
    assert lines[2:] == ["seed", "    seed1: 1", "    seed0: 0"]
    qtbot.waitUntil(lambda: not panel.is_busy())
