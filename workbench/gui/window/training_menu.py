"""The Training menu: Start, Pause/Resume, Stop and Stop and keep best as actions with keyboard
shortcuts (other tools, such as the learning-rate finder, add theirs to ``menu``).

Each action clicks its button, so a shortcut does exactly what the button does and nothing when
the button is disabled. The shortcuts are chosen so that typing never triggers them: no bare
Space (it presses the focused button or ticks a box) and no bare Esc (it closes popups and
dialogs); Stop keeps the last finished epoch, so it needs no confirmation.

The two stops differ, and their tooltips say how: Stop ends the run after the current step,
dropping the unfinished epoch (``last.pt`` keeps the last finished one, to resume from); Stop
and keep best lets the epoch finish and be validated, then ends the run as completed with its
best epoch (``best_model.pt``) as the result.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QPushButton

from workbench.gui.panels.training_controls import TrainingControls

START_SHORTCUT = "Ctrl+Return"
PAUSE_SHORTCUT = "Ctrl+P"
STOP_SHORTCUT = "Ctrl+."
KEEP_BEST_SHORTCUT = "Ctrl+B"


class TrainingMenu(QObject):
    """Builds the Training menu of ``window`` for the buttons of ``controls``."""

    def __init__(self, window: QMainWindow, controls: TrainingControls) -> None:
        super().__init__(window)
        self.menu = menu = window.menuBar().addMenu("&Training")
        self.start = self._action(window, "&Start training", START_SHORTCUT,
                                  controls.start_button, "Start a run with these settings")
        self.pause = self._action(window, "&Pause / resume", PAUSE_SHORTCUT,
                                  controls.pause_button,
                                  "Hold the run before its next step, or let it go on")
        self.stop = self._action(window, "S&top", STOP_SHORTCUT, controls.stop_button,
                                 "Stop after the current step: the unfinished epoch is dropped; "
                                 "last.pt keeps the last finished epoch, to resume from")
        self.keep_best = self._action(
            window, "Stop and &keep best", KEEP_BEST_SHORTCUT, controls.keep_best_button,
            "Finish this epoch (training and validation), then end the run as completed with "
            "its best epoch as the result: best_model.pt, used by Results, Export and Predict")
        for action in (self.start, self.pause, self.stop, self.keep_best):
            menu.addAction(action)
        self._buttons = {self.start: controls.start_button, self.pause: controls.pause_button,
                         self.stop: controls.stop_button,
                         self.keep_best: controls.keep_best_button}

    def update_state(self) -> None:
        """Enable each action as its button is enabled (call after ``controls.set_state``)."""
        for action, button in self._buttons.items():
            action.setEnabled(button.isEnabled())

    @staticmethod
    def _action(window: QMainWindow, text: str, shortcut: str, button: QPushButton,
                tip: str) -> QAction:
        action = QAction(text, window)
        action.setShortcut(QKeySequence(shortcut))
        native = QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText)
        button.setToolTip(f"{tip} ({native})")
        action.setToolTip(button.toolTip())
        action.triggered.connect(button.click)
        return action
