"""Start, Pause/Resume, Stop and Stop and keep best, with the reason Start is disabled (or what
to know before starting) right next to it, and after that the offer to download the ImageNet
weights when a run would have to download them first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from workbench.gui.panels.weights_download_offer import WeightsDownloadOffer
from workbench.gui.widgets.elided_label import ElidedLabel

CHECKING_TEXT = "Checking the data folder and settings\u2026"
# The label's colour says which it is: a problem (Start disabled), a note, or a check going on.
_COLOURS = {"error": "#c62828", "warning": "#9a6700", "": "palette(dark)"}


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
        # Two lines at most beside the buttons, however long the problem (a path can be), cut
        # after a word; the tooltip lists every problem.
        self.problem_label = ElidedLabel("", self, max_lines=2)
        self.problem_label.setObjectName("startProblems")
        self.weights_offer = WeightsDownloadOffer(self)
        # One row, whatever it shows: the plots below keep their height.
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.start_button)
        layout.addWidget(self.pause_button)
        layout.addWidget(self.stop_button)
        layout.addWidget(self.keep_best_button)
        # No spacing before the offer: shown or hidden, it leaves the row's minimum width alone.
        line = QHBoxLayout()
        line.setSpacing(0)
        line.addWidget(self.problem_label, 1)
        line.addWidget(self.weights_offer)
        layout.addLayout(line, 1)
        self.set_state(running=False, paused=False, stopping=False, problems=[])

    def set_state(self, running: bool, paused: bool, stopping: bool, problems: list[str],
                  keep_best_requested: bool = False, busy: str = "", checking: bool = False,
                  notes: Sequence[str] = (), short_texts: Mapping[str, str] | None = None
                  ) -> None:
        """Enable what makes sense now; say why Start is disabled, or what to know first.

        Args:
            stopping: Stop was asked for; nothing but waiting is left.
            keep_best_requested: Stop and keep best was asked for: the epoch finishes first,
                and Stop can still end the run sooner.
            busy: other work holding the device (the learning-rate finder), '' when none.
            checking: the pre-flight check of these settings has not answered yet.
            notes: what to know before starting (shown when nothing stops Start).
            short_texts: a shorter text to show for a problem or note beside Start (the
                tooltip keeps the whole one).
        """
        self.start_button.setEnabled(not running and not problems and not busy and not checking)
        self.pause_button.setEnabled(running and not stopping and not keep_best_requested)
        self.pause_button.setText("Resume" if paused else "Pause")
        self.stop_button.setEnabled(running and not stopping)
        self.keep_best_button.setEnabled(running and not stopping and not keep_best_requested)
        reasons = [] if running else ([busy] if busy else []) + problems
        short = short_texts or {}
        if reasons:
            self._show("error", "Cannot start", reasons, "problem", short)
        elif checking and not running:
            self._show("", CHECKING_TEXT, [], "", short)
        elif notes and not running:
            self._show("warning", "Note", list(notes), "note", short)
        else:
            self._show("", "", [], "", short)

    def _show(self, role: str, lead: str, items: list[str], noun: str,
              short: Mapping[str, str]) -> None:
        """'<lead>: <first item> (and N more <noun>s)', all items in the tooltip."""
        if not items:
            text = lead
        else:
            others = len(items) - 1
            more = f" (and {others} more {noun}{'s' if others > 1 else ''})" if others else ""
            text = f"{lead}: {short.get(items[0], items[0])}{more}"
        self.problem_label.setText(text)
        self.problem_label.setToolTip("\n".join(items))
        self.problem_label.setProperty("role", role)
        self.problem_label.setStyleSheet(f"color: {_COLOURS[role]};")
