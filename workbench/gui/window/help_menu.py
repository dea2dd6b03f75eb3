"""The Help menu: the README, the keyboard shortcuts and the versions in use.

The shortcuts dialog lists what the menu bar holds, so it cannot fall out of date. Versions come
from the installed packages' metadata: showing them does not import torch.
"""

from __future__ import annotations

import importlib
import platform
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

import workbench
from workbench.gui.widgets.path_dialog import PathDialog, open_path

VERSIONED_PACKAGES = ("torch", "torchvision", "PySide6", "pyqtgraph")


def readme_path() -> Path:
    """README.md of the source tree this package runs from (absent in a plain wheel install)."""
    return Path(workbench.__file__).resolve().parent.parent / "README.md"


def package_versions() -> list[tuple[str, str]]:
    """(name, version) of workbench, its main libraries and Python; 'not installed' if absent."""
    versions = [("workbench", workbench.__version__)]
    for name in VERSIONED_PACKAGES:
        versions.append((name, _version_of(name)))
    versions.append(("Python", platform.python_version()))
    return versions


def _version_of(name: str) -> str:
    """A loaded module's own ``__version__`` (torch's names its build, e.g. '+cu130'), else the
    installed metadata, else the module imported just for it."""
    loaded = sys.modules.get(name)
    if loaded is not None and hasattr(loaded, "__version__"):
        return str(loaded.__version__)
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        pass  # e.g. PySide6 installed as its Essentials wheel, under another name
    try:
        return str(importlib.import_module(name).__version__)
    except (ImportError, AttributeError):
        return "not installed"


def menu_shortcuts(window: QMainWindow) -> list[tuple[str, str, str]]:
    """(menu, action, shortcut) for every action of the menu bar that has a shortcut."""
    rows: list[tuple[str, str, str]] = []
    for top in window.menuBar().actions():
        menu = top.menu()
        if not isinstance(menu, QMenu):
            continue
        for action in menu.actions():
            keys = [k.toString(QKeySequence.SequenceFormat.NativeText)
                    for k in action.shortcuts() if not k.isEmpty()]
            if keys:
                rows.append((_plain(top.text()), _plain(action.text()), " or ".join(keys)))
    return rows


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("\u2026.")


class ShortcutsDialog(QDialog):
    """A table of the menu bar's shortcuts."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setWindowTitle("Keyboard shortcuts")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        rows = menu_shortcuts(window)
        self.table = QTableWidget(len(rows), 3, self)
        self.table.setHorizontalHeaderLabels(["Menu", "Action", "Shortcut"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for row, values in enumerate(rows):
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(value))
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setStretchLastSection(True)
        note = QLabel("The shortcuts work anywhere in the window, also while typing in a field.")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.resize(520, 420)

    def shortcut_rows(self) -> list[tuple[str, str, str]]:
        """The table's rows as text."""
        return [tuple(self.table.item(r, c).text() for c in range(3))
                for r in range(self.table.rowCount())]


class HelpMenu(QObject):
    """Builds the Help menu of ``window``; ``device_text`` says which device training uses."""

    def __init__(self, window: QMainWindow, device_text: Callable[[], str]) -> None:
        super().__init__(window)
        self._window = window
        self._device_text = device_text
        self.dialog: QWidget | None = None  # the dialog opened last, for tests and screenshots
        menu = window.menuBar().addMenu("&Help")
        self.readme = QAction("&Read me (README)", window)
        self.readme.setShortcut(QKeySequence.StandardKey.HelpContents)
        self.shortcuts = QAction("&Keyboard shortcuts", window)
        self.about = QAction("&About Workbench", window)
        for action in (self.readme, self.shortcuts, self.about):
            menu.addAction(action)
        self.readme.triggered.connect(self._on_readme_triggered)
        self.shortcuts.triggered.connect(self._on_shortcuts_triggered)
        self.about.triggered.connect(self._on_about_triggered)

    def about_text(self) -> str:
        """The About box's text: versions and the device in use."""
        lines = [f"{name} {version}" for name, version in package_versions()]
        return ("Workbench trains image classifiers on your own folders of images.\n\n"
                + "\n".join(lines) + f"\n\nDevice: {self._device_text()}")

    def _on_readme_triggered(self) -> None:
        path = readme_path()
        if path.is_file():
            self.dialog = open_path(path, "The README", self._window)
            return
        dialog = PathDialog("README not found",
                            "The README is part of the source tree and was not installed with "
                            "this copy; it is expected here:", str(path), self._window)
        dialog.open()
        self.dialog = dialog

    def _on_shortcuts_triggered(self) -> None:
        dialog = ShortcutsDialog(self._window)
        dialog.open()
        self.dialog = dialog

    def _on_about_triggered(self) -> None:
        box = QMessageBox(QMessageBox.Icon.Information, "About Workbench", self.about_text(),
                          QMessageBox.StandardButton.Ok, self._window)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.open()
        self.dialog = box
