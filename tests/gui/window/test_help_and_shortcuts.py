"""The Help menu (README, keyboard shortcuts, About with versions and the device) and the
Training menu's shortcuts, which start, pause and stop a real tiny run."""

from __future__ import annotations

import importlib

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

import workbench
from workbench.gui.widgets.path_dialog import PathDialog
from workbench.gui.window.help_menu import ShortcutsDialog, readme_path
from workbench.gui.window.main_window import MainWindow

RUN_TIMEOUT_MS = 120_000


@pytest.fixture
def window(qtbot) -> MainWindow:
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    return window


def test_about_names_every_version_and_the_device_in_use(qtbot, window):
    window.device_panel.start_detection()
    qtbot.waitUntil(window.device_panel.is_detected, timeout=60_000)
    window.help_menu.about.trigger()
    box = window.help_menu.dialog
    assert isinstance(box, QMessageBox) and box.isVisible()
    text = box.text()
    assert f"workbench {workbench.__version__}" in text
    for name in ("torch", "torchvision", "PySide6", "pyqtgraph"):
        version = importlib.import_module(name).__version__.split("+")[0]  # local build aside
        assert f"\n{name} {version}" in text
    assert "Python 3." in text
    assert f"Device: {window.device_panel.choice_text()}" in text
    assert "cpu" in window.device_panel.choice_text().lower()
    box.close()


def test_the_shortcuts_dialog_lists_start_pause_stop_and_the_buttons_say_them(window):
    window.help_menu.shortcuts.trigger()
    dialog = window.help_menu.dialog
    assert isinstance(dialog, ShortcutsDialog) and dialog.isVisible()
    rows = {action: keys for _menu, action, keys in dialog.shortcut_rows()}
    assert rows["Start training"] == "Ctrl+Return"
    assert rows["Pause / resume"] == "Ctrl+P"
    assert rows["Stop"] == "Ctrl+."
    assert rows["Open image folder"] == "Ctrl+O"
    assert "(Ctrl+Return)" in window.controls.start_button.toolTip()
    assert "(Ctrl+P)" in window.controls.pause_button.toolTip()
    assert "(Ctrl+.)" in window.controls.stop_button.toolTip()
    dialog.close()


# Qt's warning that nothing can open files: offscreen always, xcb without xdg-open.
@pytest.mark.qt_log_ignore("does not support QPlatformServices", "Unable to detect a launcher")
def test_readme_without_a_viewer_shows_its_path(window):
    window.help_menu.readme.trigger()
    dialog = window.help_menu.dialog
    assert isinstance(dialog, PathDialog) and dialog.isVisible()
    assert dialog.path() == str(readme_path()) and readme_path().is_file()
    dialog.close()


def test_shortcuts_start_pause_and_stop_a_real_run(qtbot, window, tiny_config, reraise_errors):
    reraise_errors(window.controller)
    window.config_form.set_config(tiny_config.replace(epochs=50))
    window.config_form.setFocus()
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)

    with qtbot.waitSignal(window.controller.run_started, timeout=RUN_TIMEOUT_MS):
        qtbot.keyClick(window.config_form, Qt.Key.Key_Return,
                       Qt.KeyboardModifier.ControlModifier)
        assert window.controller.is_running()
    qtbot.keyClick(window.config_form, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    assert window.controller.is_paused() and window.controls.pause_button.text() == "Resume"
    qtbot.keyClick(window.config_form, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    assert not window.controller.is_paused()
    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        qtbot.keyClick(window.config_form, Qt.Key.Key_Period,
                       Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=RUN_TIMEOUT_MS)
    assert ended.args[0].status == "cancelled"
    assert ended.args[0].epochs_completed < 50


def test_shortcuts_do_nothing_when_their_button_is_disabled(qtbot, window):
    window.config_form.update_config(data_root="")  # a problem: Start is disabled
    assert not window.controls.start_button.isEnabled()
    qtbot.keyClick(window.config_form, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert not window.controller.is_running()
    assert not window.training_menu.start.isEnabled()
