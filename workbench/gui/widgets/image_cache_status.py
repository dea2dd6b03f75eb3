"""One line under the image cache folder: how many resized images it holds, the space they
take and the space left, with Refresh and Clear buttons.

A cache can hold tens of thousands of files. They are counted (or deleted) on the GUI thread,
one cache subfolder per timer tick (about 1/256 of the cache, a millisecond or so), so the
window keeps answering; the line says "Counting…" or "Deleting…" meanwhile. Not in the thread
pool: the pool's Python code would let the garbage collector run there and delete widgets off
the GUI thread.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

from workbench.core.data.cache_folder import (
    CacheUsage,
    cache_subfolders,
    clear_subfolder,
    default_cache_dir,
    subfolder_usage,
    usage_summary,
)
from workbench.core.units import byte_amount

_NOTHING = CacheUsage(0, 0)


class ImageCacheStatus(QWidget):
    """Shows (and clears) the image cache of the folder given to ``set_folder``.

    It counts whenever it is shown and whenever its folder changes while shown.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._folder = ""
        self._usage: CacheUsage | None = None  # of the last finished count
        self._walk_folder = Path()
        self._pending: list[Path] = []
        self._clearing = False
        self._found = _NOTHING
        self._deleted = _NOTHING
        self.label = QLabel("", self)
        self.label.setWordWrap(True)
        self.refresh_button = QPushButton("Refresh", self)
        self.clear_button = QPushButton("Clear\u2026", self)
        self.clear_button.setEnabled(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.refresh_button)
        layout.addWidget(self.clear_button)
        self._timer = QTimer(self)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._step)
        self.refresh_button.clicked.connect(self.refresh)
        self.clear_button.clicked.connect(self._on_clear_clicked)

    def folder(self) -> Path:
        """The folder shown: the one given, or the default cache folder when none was."""
        return Path(self._folder) if self._folder else default_cache_dir()

    def set_folder(self, folder: str) -> None:
        """Show the cache in ``folder`` ("" for the default one)."""
        if folder == self._folder:
            return
        self._folder = folder
        if self.isVisible():
            self.refresh()

    def refresh(self) -> None:
        """Count the cached images again (a walk the timer finishes)."""
        self._begin(clearing=False, deleted=_NOTHING)

    def is_busy(self) -> bool:
        """True while counting or deleting."""
        return self._timer.isActive()

    def confirm_clear(self, usage: CacheUsage, folder: Path) -> bool:
        """Ask before deleting; tests replace this."""
        answer = QMessageBox.question(
            self, "Clear the image cache",
            f"Delete the {usage.files:,} resized image(s) ({byte_amount(usage.bytes)}) in "
            f"{folder}? Runs decode their images again when they need them; nothing else in "
            "the folder is touched.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.refresh()

    def _on_clear_clicked(self) -> None:
        usage = self._usage
        if usage is None or self.is_busy() or not self.confirm_clear(usage, self.folder()):
            return
        self._begin(clearing=True, deleted=_NOTHING)

    def _begin(self, clearing: bool, deleted: CacheUsage) -> None:
        self._walk_folder = self.folder()
        self._pending = cache_subfolders(self._walk_folder)
        self._clearing = clearing
        self._found = _NOTHING
        self._deleted = deleted
        verb = "Deleting" if clearing else "Counting"
        self.label.setText(f"{verb} the cached images in {self._walk_folder}\u2026")
        self.clear_button.setEnabled(False)
        self._timer.start()

    def _step(self) -> None:
        if self._pending:
            subfolder = self._pending.pop()
            if self._clearing:
                self._deleted += clear_subfolder(subfolder)
            else:
                self._found += subfolder_usage(subfolder)
            return
        self._timer.stop()
        if self._clearing:  # count what is left, and say what went
            self._begin(clearing=False, deleted=self._deleted)
            return
        self._show(self._found, self._deleted)

    def _show(self, usage: CacheUsage, deleted: CacheUsage) -> None:
        self._usage = usage
        said = ""
        if deleted.files:
            said = f"Deleted {deleted.files:,} image(s), {byte_amount(deleted.bytes)}. "
        self.label.setText(f"{said}{usage_summary(usage, self._walk_folder)}.")
        self.label.setToolTip(str(self._walk_folder))
        self.clear_button.setEnabled(usage.files > 0)
