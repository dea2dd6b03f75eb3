"""Open run folder where no file manager answers: a dialog with the path and "Copy path"."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QGuiApplication

from workbench.gui.widgets.path_dialog import PathDialog
from workbench.gui.window.main_window import MainWindow


# Qt's warning that nothing can open files: offscreen always, xcb without xdg-open.
@pytest.mark.qt_log_ignore("does not support QPlatformServices", "Unable to detect a launcher")
def test_open_run_folder_without_a_file_manager_shows_the_path_to_copy(qtbot, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    window = MainWindow()
    qtbot.addWidget(window)
    window.config_form.update_config(output_dir=str(runs))
    window.show()

    window.file_menu.open_run_folder.trigger()

    dialog = window.file_menu.path_dialog
    assert isinstance(dialog, PathDialog) and dialog.isVisible()
    assert dialog.path() == str(runs.resolve())
    assert "could not be opened" in dialog.message_label.text()
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == str(runs.resolve())
    assert dialog.copy_button.text() == "Copied"
    dialog.close()
