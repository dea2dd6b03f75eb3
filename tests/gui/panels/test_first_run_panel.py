"""The Dataset tab with no data folder open: Open folder, Try the demo dataset (written in the
pool, then opened with its settings) and the recent folders, in the real window."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from workbench.core.data.generated.demo_data import DEMO_CLASSES, default_demo_dir
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.gui.window.main_window import MainWindow
from workbench.gui.window.settings_store import SettingsStore

SCAN_TIMEOUT_MS = 60_000


def test_without_a_folder_the_first_run_page_shows_and_the_demo_opens_with_its_classes(
        qtbot, tmp_path):
    window = MainWindow()
    qtbot.addWidget(window)
    window.config_form.update_config(output_dir=str(tmp_path / "runs"))
    window.show()
    page = window.first_run_panel
    assert page.isVisible() and not window.dataset_panel.isVisible()
    assert page.open_button.text() == "Open folder\u2026"

    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=SCAN_TIMEOUT_MS) as done:
        qtbot.mouseClick(page.demo_button, Qt.MouseButton.LeftButton)
        assert not page.demo_button.isEnabled()  # the click returned; the images are written

    scan = done.args[0]
    assert scan.class_names == sorted(DEMO_CLASSES)
    assert window.dataset_panel.chart.class_names() == sorted(DEMO_CLASSES)
    assert not page.isVisible() and window.dataset_panel.isVisible()
    config = window.config_form.config()
    assert Path(config.data_root) == default_demo_dir()
    assert (config.run_name, config.weights, config.finetune) == ("demo", "none", "full")
    assert config.output_dir == str(tmp_path / "runs")  # the user's output folder is kept
    assert page.demo_button.isEnabled()


def test_recent_folders_are_one_click_away(qtbot, tmp_path):
    data = write_shape_dataset(tmp_path / "shapes", classes=("circle", "square"), per_class=4,
                               size=(32, 32))
    gone = tmp_path / "deleted_since"
    settings = SettingsStore()
    settings.set_recent_folders([str(data), str(gone)])
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.show()
    buttons = window.first_run_panel.recent_buttons
    assert [b.description() for b in buttons] == [str(data), str(gone)]
    assert buttons[0].text() == "shapes"

    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=SCAN_TIMEOUT_MS) as done:
        qtbot.mouseClick(buttons[0], Qt.MouseButton.LeftButton)
    assert done.args[0].class_names == ["circle", "square"]
    assert window.config_form.config().data_root == str(data)
    assert not window.first_run_panel.isVisible()


def test_open_folder_on_the_page_is_the_file_menu_action(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    triggered: list[bool] = []
    window.file_menu.open_folder.triggered.disconnect()
    window.file_menu.open_folder.triggered.connect(lambda: triggered.append(True))
    qtbot.mouseClick(window.first_run_panel.open_button, Qt.MouseButton.LeftButton)
    assert triggered == [True]
