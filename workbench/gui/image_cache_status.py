"""One line under the image cache folder: how many resized images it holds, the space they
take and the space left, with Refresh and Clear buttons.

A cache can hold tens of thousands of files, so counting and deleting run in the thread pool;
the line says "Counting…" or "Deleting…" meanwhile and the window never waits for the disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QThreadPool
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

from workbench.core.cache_folder import (
    FREE_SPACE_RESERVE,
    CacheUsage,
    cache_usage,
    clear_cache,
    default_cache_dir,
    free_bytes,
)
from workbench.core.units import byte_amount
from workbench.gui.pool_tasks import LatestRequestRunner


@dataclass(frozen=True)
class CacheState:
    """What a pool job found: the folder's cached images, the disk's free bytes, and what a
    clearing deleted (None when nothing was cleared)."""

    folder: Path
    usage: CacheUsage
    free: int
    deleted: CacheUsage | None = None


def measure_cache(folder: Path) -> CacheState:
    """Pool job: count the cached images in ``folder``."""
    return CacheState(folder, cache_usage(folder), free_bytes(folder))


def clear_and_measure_cache(folder: Path) -> CacheState:
    """Pool job: delete the cached images in ``folder``, then count what is left."""
    deleted = clear_cache(folder)
    return CacheState(folder, cache_usage(folder), free_bytes(folder), deleted)


class ImageCacheStatus(QWidget):
    """Shows (and clears) the image cache of the folder given to ``set_folder``.

    It counts whenever it is shown and whenever its folder changes while shown.
    """

    def __init__(self, parent: QWidget | None = None, pool: QThreadPool | None = None) -> None:
        super().__init__(parent)
        self._folder = ""
        self._state: CacheState | None = None
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
        self._runner = LatestRequestRunner(self, pool)
        self._runner.result_ready.connect(self._show_state)
        self._runner.failed.connect(self._show_failure)
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
        """Count the cached images again, in the pool."""
        self._busy(f"Counting the cached images in {self.folder()}\u2026")
        self._runner.submit(measure_cache, self.folder())

    def wait_for_done(self, msecs: int = -1) -> bool:
        """Block until the pool jobs are over (for closing and for tests)."""
        return self._runner.wait_for_done(msecs)

    def confirm_clear(self, state: CacheState) -> bool:
        """Ask before deleting; tests replace this."""
        answer = QMessageBox.question(
            self, "Clear the image cache",
            f"Delete the {state.usage.files:,} resized image(s) ({byte_amount(state.usage.bytes)})"
            f" in {state.folder}? Runs decode their images again when they need them; nothing "
            "else in the folder is touched.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.refresh()

    def _on_clear_clicked(self) -> None:
        state = self._state
        if state is None or state.folder != self.folder() or not self.confirm_clear(state):
            return
        self._busy(f"Deleting the cached images in {state.folder}\u2026")
        self._runner.submit(clear_and_measure_cache, state.folder)

    def _busy(self, text: str) -> None:
        self.label.setText(text)
        self.clear_button.setEnabled(False)

    def _show_state(self, state: CacheState) -> None:
        self._state = state
        deleted = ""
        if state.deleted is not None:
            deleted = (f"Deleted {state.deleted.files:,} image(s), "
                       f"{byte_amount(state.deleted.bytes)}. ")
        self.label.setText(
            f"{deleted}{state.usage.files:,} resized image(s), {byte_amount(state.usage.bytes)};"
            f" {byte_amount(state.free)} free on that disk (the cache leaves "
            f"{byte_amount(FREE_SPACE_RESERVE)} free).")
        self.label.setToolTip(str(state.folder))
        self.clear_button.setEnabled(state.usage.files > 0)

    def _show_failure(self, message: str) -> None:
        self._state = None
        self.label.setText(f"Cannot read the image cache in {self.folder()}: {message}")
