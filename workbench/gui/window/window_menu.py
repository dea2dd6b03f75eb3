"""The main window's File menu: its actions, the file dialogs they open, and what they call.

The menu only asks for paths; the work is done by the window's public methods
(``open_folder``, ``load_config_from``, ``save_config_to``, ``follow_run``, ``show_error``) and
the results panel's ``export_to``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMenu, QMenuBar, QTabWidget

from workbench.gui.panels.config_form import ConfigForm
from workbench.gui.panels.results_panel import ResultsPanel
from workbench.gui.widgets.path_dialog import PathDialog, open_path


class MenuHost(Protocol):
    """What the menu needs of the window it sits in (a ``QMainWindow``; the main window is one)."""

    config_form: ConfigForm
    results_panel: ResultsPanel
    right_tabs: QTabWidget

    def menuBar(self) -> QMenuBar: ...  # noqa: N802 - Qt's name
    def close(self) -> bool: ...
    def open_folder(self, path: str) -> None: ...
    def load_config_from(self, path: str) -> bool: ...
    def save_config_to(self, path: str) -> bool: ...
    def resume_from(self, checkpoint: str) -> bool: ...
    def follow_run(self, run_dir: str) -> bool: ...
    def show_error(self, title: str, text: str) -> None: ...
    def recent_folders(self) -> list[str]: ...


class FileMenu(QObject):
    """Builds the File menu of ``window`` and handles its actions."""

    def __init__(self, window: MenuHost) -> None:
        super().__init__(window)
        self._window = window
        self.path_dialog: PathDialog | None = None  # shown where no file manager answered
        menu = window.menuBar().addMenu("&File")
        self.open_folder = QAction("&Open image folder\u2026", window)
        self.open_folder.setShortcut(QKeySequence.StandardKey.Open)
        self.recent_menu = QMenu("Open &recent", window)
        self.load_config = QAction("&Load config\u2026", window)
        self.save_config = QAction("&Save config\u2026", window)
        self.save_config.setShortcut(QKeySequence.StandardKey.Save)
        self.resume_run = QAction("&Resume from checkpoint\u2026", window)
        self.follow_run = QAction("Fo&llow run folder\u2026", window)
        self.follow_run.setToolTip("Watch a run written elsewhere (copied, synced or mounted) "
                                   "live in the plots")
        self.export_model = QAction("&Export model (TorchScript)\u2026", window)
        self.open_run_folder = QAction("Open run &folder", window)
        self.quit = QAction("&Quit", window)
        self.quit.setShortcut(QKeySequence.StandardKey.Quit)
        for item in (self.open_folder, self.recent_menu, None, self.load_config,
                     self.save_config, self.resume_run, self.follow_run, None, self.export_model,
                     self.open_run_folder, None, self.quit):
            if item is None:
                menu.addSeparator()
            elif isinstance(item, QMenu):
                menu.addMenu(item)
            else:
                menu.addAction(item)

        self.open_folder.triggered.connect(self._on_open_folder_triggered)
        self.recent_menu.aboutToShow.connect(self._update_recent_menu)
        self.load_config.triggered.connect(self._on_load_config_triggered)
        self.save_config.triggered.connect(self._on_save_config_triggered)
        self.resume_run.triggered.connect(self._on_resume_run_triggered)
        self.follow_run.triggered.connect(self._on_follow_run_triggered)
        self.export_model.triggered.connect(self._on_export_triggered)
        self.open_run_folder.triggered.connect(self._on_open_run_folder_triggered)
        self.quit.triggered.connect(window.close)

    def set_training(self, running: bool) -> None:
        """Changing the folder or the config during a run would not affect it; disable both.
        Following another run would share the plots with this one; disable that too."""
        for action in (self.open_folder, self.load_config, self.resume_run, self.follow_run):
            action.setEnabled(not running)
        self.recent_menu.setEnabled(not running)

    # ------------------------------------------------------------------ slots
    def _on_open_folder_triggered(self) -> None:
        start = self._window.config_form.config().data_root
        path = QFileDialog.getExistingDirectory(self._window, "Open image folder", start)
        if path:
            self._window.open_folder(path)

    def _on_load_config_triggered(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self._window, "Load config", "",
                                              "Config (*.json);;All files (*)")
        if path:
            self._window.load_config_from(path)

    def _on_resume_run_triggered(self) -> None:
        start = self._window.config_form.config().output_dir
        path, _ = QFileDialog.getOpenFileName(self._window, "Resume from checkpoint", start,
                                              "Checkpoint (last.pt *.pt);;All files (*)")
        if path:
            self._window.resume_from(path)

    def _on_follow_run_triggered(self) -> None:
        start = self._window.config_form.config().output_dir
        path = QFileDialog.getExistingDirectory(self._window, "Follow run folder", start)
        if path:
            self._window.follow_run(path)

    def _on_save_config_triggered(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self._window, "Save config",
                                              "workbench_config.json",
                                              "Config (*.json);;All files (*)")
        if path:
            self._window.save_config_to(path)

    def _on_export_triggered(self) -> None:
        results = self._window.results_panel
        model_file = results.model_file()
        if not model_file:
            model_file, _ = QFileDialog.getOpenFileName(
                self._window, "Model to export (best_model.pt or last.pt)",
                self._window.config_form.config().output_dir, "Model (*.pt);;All files (*)")
        if not model_file:
            return
        out_path = results.ask_export_path()
        if out_path:
            self._window.right_tabs.setCurrentWidget(results)
            results.export_to(out_path, model_file)

    def _on_open_run_folder_triggered(self) -> None:
        folder = self._window.results_panel.run_dir() or \
            self._window.config_form.config().output_dir
        if folder and Path(folder).is_dir():
            self.path_dialog = open_path(folder, "The run folder", self._window)
        else:
            self._window.show_error("No run folder", f"'{folder}' does not exist yet; "
                                                     "train a model first.")

    def _update_recent_menu(self) -> None:
        self.recent_menu.clear()
        for folder in self._window.recent_folders():
            action = self.recent_menu.addAction(folder)
            action.setData(folder)
            action.triggered.connect(self._on_recent_folder_triggered)

    def _on_recent_folder_triggered(self) -> None:
        action = self.sender()
        if isinstance(action, QAction) and action.data():
            self._window.open_folder(str(action.data()))
