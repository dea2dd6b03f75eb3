"""A whole session on a 1366x768 laptop keeps the window on its screen: opening a folder, the
health check, the preview, a run, its results and leaving files out never grow the window past
the screen's available area (a window taller than the screen hides its status bar, the export
messages and the bottom plot)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, Qt

from tests.core.data.health.conftest import write_problem_folder
from tests.gui.window.test_data_health import select_finding
from tests.gui.window.test_small_screen_layout import LAPTOP, show_at_laptop_size
from workbench.core.runs.config import TrainConfig

TIMEOUT_MS = 120_000
AVAILABLE = QRect(0, 0, LAPTOP.width(), LAPTOP.height())  # the laptop's screen, no task bar


def assert_on_screen(qtbot, window, step: str) -> None:
    qtbot.wait(60)  # layouts settle on the next passes; a grown minimum resizes the window
    frame = window.frameGeometry()
    assert AVAILABLE.contains(frame), f"after {step}: the window's frame {frame} is not " \
                                      f"within the screen's {AVAILABLE}"


def test_a_whole_session_stays_on_a_laptop_screen(qtbot, window, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    show_at_laptop_size(qtbot, window)
    window.move(0, 0)
    assert_on_screen(qtbot, window, "the start")

    root = tmp_path / "photos"
    write_problem_folder(root)
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=TIMEOUT_MS):
        window.apply_config(TrainConfig(
            data_root=str(root), model="small_cnn", weights="none", finetune="full",
            crop_mode="standard", resize_size=48, crop_size=40, batch_size=8, epochs=1,
            workers=0, device="cpu", amp=False, channels_last=False,
            output_dir=str(tmp_path / "runs")))
    assert_on_screen(qtbot, window, "opening a folder")

    dataset = window.dataset_panel
    health = dataset.health_panel
    dataset.problem_tabs.setCurrentWidget(health)
    with qtbot.waitSignal(health.report_ready, timeout=TIMEOUT_MS):
        qtbot.mouseClick(health.check_button, Qt.MouseButton.LeftButton)
    select_finding(health, "Near duplicates")
    assert_on_screen(qtbot, window, "the health check")
    tree = health.findings_tree  # the findings list opens at a readable height
    assert tree.viewport().height() >= 4 * tree.fontMetrics().height(), tree.viewport().height()

    preview = window.preview_panel
    with qtbot.waitSignal(preview.preview_ready, timeout=TIMEOUT_MS):
        dataset.thumbnails.select_row(0)
    window.left_tabs.setCurrentWidget(preview)
    assert_on_screen(qtbot, window, "the preview")

    window.right_tabs.setCurrentWidget(window.training_tab)
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=TIMEOUT_MS)
    with qtbot.waitSignal(window.controller.run_ended, timeout=TIMEOUT_MS) as ended:
        qtbot.mouseClick(window.controls.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)
    assert ended.args[0].status == "completed", ended.args[0].error
    assert_on_screen(qtbot, window, "training")

    window.right_tabs.setCurrentWidget(window.results_panel)
    window.left_tabs.setCurrentIndex(0)
    assert_on_screen(qtbot, window, "the results")

    select_finding(health, "Unreadable images")
    with qtbot.waitSignal(dataset.exclude_file_chosen, timeout=TIMEOUT_MS):
        qtbot.mouseClick(health.leave_out_button, Qt.MouseButton.LeftButton)
    assert not health.excluded_label.isHidden()
    assert_on_screen(qtbot, window, "leaving files out")
