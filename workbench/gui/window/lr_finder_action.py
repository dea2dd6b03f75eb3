"""The window's learning-rate finder: the *Find learning rate…* button under the lr field and
the Training menu's action open :class:`~workbench.gui.panels.lr_finder_dialog.LrFinderDialog`
on the form's settings, and its "Use …" sets the form's lr.

Both use the device, so the finder refuses while a run trains, and the window keeps Start
disabled while a test runs (``busy_reason``). The dialog imports pyqtgraph, so it is created
the first time it is opened, never at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction

if TYPE_CHECKING:
    from workbench.gui.panels.lr_finder_dialog import LrFinderDialog

BUSY_REASON = "the learning-rate finder is running (cancel it, or wait until it ends)"
TRAINING_REASON = ("A run is training on the device; find the learning rate when it has "
                   "ended (its result would compete with the run for the device).")


class LrFinderAction(QObject):
    """Owns the finder's menu action and dialog, wired to ``window``'s form and controls.

    Signals:
        busy_changed(): a test started or ended; the window refreshes Start.
    """

    busy_changed = Signal()

    def __init__(self, window: Any) -> None:
        """``window``: the MainWindow (not imported here: it imports this module)."""
        super().__init__(window)
        self._window = window
        self.dialog: LrFinderDialog | None = None
        self.action = QAction("Find &learning rate\u2026", window)
        self.action.setToolTip(window.config_form.find_lr_button.toolTip())
        window.training_menu.menu.addSeparator()
        window.training_menu.menu.addAction(self.action)

        self.action.triggered.connect(self._on_open_requested)
        window.config_form.find_lr_button.clicked.connect(self._on_open_requested)

    def open(self, steps: int | None = None) -> bool:
        """Show the dialog and run the test on the form's settings; False (and the reason
        shown) when training runs or the settings have a problem."""
        window = self._window
        dialog = self._dialog()
        dialog.show()
        if window.controller.is_running():
            dialog.show_problem(TRAINING_REASON)
            window.statusBar().showMessage(TRAINING_REASON, 10_000)
            return False
        config = window.config_form.config()
        problems = config.validate()
        if problems:
            dialog.show_problem(f"Fix the settings first: {problems[0]}")
            return False
        window.device_tools.cancel()  # they would compete for the device
        dialog.start(config, steps)
        return True

    def is_busy(self) -> bool:
        """True while a test (a cancelled one winding down too) uses the device."""
        return self.dialog is not None and self.dialog.is_busy()

    def busy_reason(self) -> str:
        """Why Start waits, '' when the finder is idle."""
        return BUSY_REASON if self.is_busy() else ""

    def set_training(self, running: bool) -> None:
        """A run holds the device: the finder cannot be opened to run meanwhile."""
        self.action.setEnabled(not running)

    def cancel(self) -> None:
        """Stop a running test (the window is closing)."""
        if self.dialog is not None:
            self.dialog.cancel()

    def _dialog(self) -> LrFinderDialog:
        if self.dialog is None:
            from workbench.gui.panels.lr_finder_dialog import LrFinderDialog

            self.dialog = LrFinderDialog(self._window)
            self.dialog.running_changed.connect(self.busy_changed)
            self.dialog.lr_chosen.connect(self._on_lr_chosen)
        return self.dialog

    def _on_open_requested(self) -> None:
        self.open()

    def _on_lr_chosen(self, lr: float) -> None:
        from workbench.gui.panels.lr_finder_dialog import format_lr

        form = self._window.config_form
        form.edit_field("lr", lr)
        self._window.log_panel.append_text(
            "info", f"Learning rate set to {format_lr(form.config().lr)}, as the range test "
                    "suggested.")
