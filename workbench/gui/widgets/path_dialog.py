"""Opening a local file or folder with the desktop, and the dialog shown where that cannot work.

Without a file manager or browser (a bare server, a minimal desktop, Xvfb)
``QDesktopServices.openUrl`` returns False and nothing happens on screen; the user then gets
the path, selectable, with a "Copy path" button, so they can open it some other way.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


class PathDialog(QDialog):
    """A sentence, the path in a read-only field, "Copy path" and Close. Deletes itself on close."""

    def __init__(self, title: str, text: str, path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.message_label = QLabel(text, self)
        self.message_label.setWordWrap(True)
        self.path_field = QLineEdit(path, self)
        self.path_field.setReadOnly(True)
        self.path_field.setMinimumWidth(min(720, max(360, 8 * len(path))))
        self.copy_button = QPushButton("Copy path", self)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message_label)
        layout.addWidget(self.path_field)
        layout.addWidget(buttons)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        buttons.rejected.connect(self.reject)

    def path(self) -> str:
        """The path shown."""
        return self.path_field.text()

    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.path())
        self.copy_button.setText("Copied")


def open_path(path: str | Path, what: str, parent: QWidget | None = None) -> PathDialog | None:
    """Open ``path`` with the desktop's file manager or viewer; when none answers, show a
    :class:`PathDialog` (window-modal, not blocking) and return it.

    Args:
        path: an existing local file or folder.
        what: names it in the dialog, e.g. "The run folder".
        parent: the dialog's parent window.
    """
    resolved = str(Path(path).resolve())
    if QDesktopServices.openUrl(QUrl.fromLocalFile(resolved)):
        return None
    dialog = PathDialog(
        "Open it yourself",
        f"{what} could not be opened here: no file manager or viewer answered. Its path is "
        "below; copy it to open it in a terminal or another program.",
        resolved, parent)
    dialog.open()
    return dialog
