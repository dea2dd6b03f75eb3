"""Start, Pause/Resume, Stop and Stop and keep best, with the reason Start is disabled right
next to it."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from workbench.gui.widgets.elided_label import ElidedLabel


class TrainingControls(QWidget):
    """Buttons only; the window connects their ``clicked`` signals and calls ``set_state``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.start_button = QPushButton("Start training", self)
        self.start_button.setObjectName("startButton")
        self.pause_button = QPushButton("Pause", self)
        self.stop_button = QPushButton("Stop", self)
        self.keep_best_button = QPushButton("Stop and keep best", self)
        self.keep_best_button.setObjectName("keepBestButton")
        # One line beside the buttons, however long the problem (a path can be); the tooltip
        # lists every problem.
        self.problem_label = ElidedLabel("", self)
        self.problem_label.setObjectName("startProblems")
        self.problem_label.setProperty("role", "error")
        self.problem_label.setStyleSheet("color: #c62828;")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.start_button)
        layout.addWidget(self.pause_button)
        layout.addWidget(self.stop_button)
        layout.addWidget(self.keep_best_button)
        layout.addWidget(self.problem_label, 1)
        self.set_state(running=False, paused=False, stopping=False, problems=[])

    def set_state(self, running: bool, paused: bool, stopping: bool, problems: list[str],
                  keep_best_requested: bool = False, busy: str = "") -> None:
        """Enable what makes sense now; say why Start is disabled.

        Args:
            stopping: Stop was asked for; nothing but waiting is left.
            keep_best_requested: Stop and keep best was asked for: the epoch finishes first,
                and Stop can still end the run sooner.
            busy: other work holding the device (the learning-rate finder), '' when none.
        """
        self.start_button.setEnabled(not running and not problems and not busy)
        self.pause_button.setEnabled(running and not stopping and not keep_best_requested)
        self.pause_button.setText("Resume" if paused else "Pause")
        self.stop_button.setEnabled(running and not stopping)
        self.keep_best_button.setEnabled(running and not stopping and not keep_best_requested)
        reasons = [] if running else ([busy] if busy else []) + problems
        if reasons:
            others = len(reasons) - 1
            more = (f" (and {others} more problem{'s' if others > 1 else ''})" if others
                    else "")
            self.problem_label.setText(f"Cannot start: {reasons[0]}{more}")
            self.problem_label.setToolTip("\n".join(reasons))
        else:
            self.problem_label.setText("")
            self.problem_label.setToolTip("")
