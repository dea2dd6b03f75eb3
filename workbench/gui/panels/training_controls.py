"""Start, Pause/Resume and Stop, with the reason Start is disabled right next to it."""

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
        layout.addWidget(self.problem_label, 1)
        self.set_state(running=False, paused=False, stopping=False, problems=[])

    def set_state(self, running: bool, paused: bool, stopping: bool,
                  problems: list[str]) -> None:
        """Enable what makes sense now; say why Start is disabled when the config has problems."""
        self.start_button.setEnabled(not running and not problems)
        self.pause_button.setEnabled(running and not stopping)
        self.pause_button.setText("Resume" if paused else "Pause")
        self.stop_button.setEnabled(running and not stopping)
        if problems and not running:
            others = len(problems) - 1
            more = (f" (and {others} more problem{'s' if others > 1 else ''})" if others
                    else "")
            self.problem_label.setText(f"Cannot start: {problems[0]}{more}")
            self.problem_label.setToolTip("\n".join(problems))
        else:
            self.problem_label.setText("")
            self.problem_label.setToolTip("")
