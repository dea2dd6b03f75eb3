"""Follow a run folder written elsewhere (a cloud machine's run, copied back, synced or mounted).

A ``QTimer`` polls a :class:`~workbench.core.runs.run_follower.RunFollower` every half second and
emits the run's events with the same signals a local run has, so the window draws a remote run
with the plots, status and log it uses for its own. Each poll reads a bounded amount of the file
(a long run already on disk is caught up over a few quick polls), so the UI thread never waits
long. Following stops when the run ends, when the user stops it, or when a local run starts.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from workbench.core.runs.events import EpochEnd, Message, RunEnd, RunStart, StepStats
from workbench.core.runs.run_folder import CONFIG_FILE, METRICS_FILE
from workbench.core.runs.run_follower import RunFollower
from workbench.gui.workers.training_worker import RunEventSignals

POLL_INTERVAL_MS = 500
READ_LIMIT = 256 * 1024  # bytes per poll: a few hundred step lines, a few milliseconds
BANNER_MAX_HEIGHT = 64


class RunFollowBanner(QWidget):
    """One line above the run status: which folder is followed, its config and device."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text_label = QLabel(self)
        self.text_label.setWordWrap(True)
        self.text_label.setObjectName("followedRun")
        self.stop_button = QPushButton("Stop following", self)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        layout.addWidget(self.text_label, 1)
        layout.addWidget(self.stop_button)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet("RunFollowBanner { background: #e3f2fd; }")
        # It sits in the training tab's splitter: two lines of text, not a share of the plots.
        self.setMaximumHeight(BANNER_MAX_HEIGHT)
        self.hide()

    def show_text(self, text: str, following: bool) -> None:
        """Show ``text``; the stop button only while following."""
        self.text_label.setText(text)
        self.stop_button.setVisible(following)
        self.show()


class RunFollowController(RunEventSignals):
    """Polls one run folder at a time; emits its events like a local run's controller.

    Signals:
        run_started, step_finished, epoch_ended, message_logged, run_ended: the run's events.
        restarted: the metrics file was rewritten from the start; clear what was shown.
    """

    restarted = Signal()

    def __init__(self, parent: QObject | None = None,
                 interval_ms: int = POLL_INTERVAL_MS) -> None:
        super().__init__(parent)
        self.interval_ms = interval_ms
        self.banner = RunFollowBanner()
        self._follower: RunFollower | None = None
        self._summary = ""
        self._run_dir = ""  # kept after following stops, for the banner
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)

        self._timer.timeout.connect(self._poll)
        self.banner.stop_button.clicked.connect(self._on_stop_clicked)

    # ------------------------------------------------------------------ public API
    def follow(self, run_dir: str) -> str:
        """Start following ``run_dir`` (after stopping any other); '' or why it cannot be."""
        problem = folder_problem(Path(run_dir))
        if problem:
            return problem
        self.stop()
        self._follower = RunFollower(run_dir, read_limit=READ_LIMIT)
        self._run_dir = str(run_dir)
        self._summary = ""
        self._read_summary()
        self._show_banner(following=True)
        self.message_logged.emit(Message("info", f"Following the run in {run_dir}"))
        self._timer.start(0)
        return ""

    def stop(self, reason: str = "") -> None:
        """Stop following (nothing happens if not following); ``reason`` goes to the log."""
        if self._follower is None:
            return
        self._timer.stop()
        run_dir = self._follower.run_dir
        self._follower = None
        if reason:
            self.message_logged.emit(Message("info", f"Stopped following {run_dir}: {reason}"))

    def is_following(self) -> bool:
        """True between ``follow`` and the run's end or ``stop``."""
        return self._follower is not None

    def run_dir(self) -> str:
        """The folder followed now or last."""
        return self._run_dir

    def summary(self) -> str:
        """The followed run's config and device in one line ('' until config.json is read)."""
        return self._summary

    def hide_banner(self) -> None:
        """A local run owns the plots now: the banner would describe the wrong run."""
        self.banner.hide()

    # ------------------------------------------------------------------ polling
    def _poll(self) -> None:
        follower = self._follower
        if follower is None:
            return
        if not self._summary:
            self._read_summary()
        batch = follower.poll()
        if batch.restarted:
            self.restarted.emit()
            self._read_summary()  # a new run in the same folder has its own config
        for event in batch.events:
            self._emit(event)
        if self._follower is not follower:
            return  # a slot stopped following or followed another folder
        if batch.events and isinstance(batch.events[-1], RunEnd) and not batch.more_pending:
            self.stop(f"the run {batch.events[-1].status}")
            self._show_banner(following=False, ended=batch.events[-1].status)
            return
        self._timer.start(0 if batch.more_pending else self.interval_ms)

    def _emit(self, event: object) -> None:
        if isinstance(event, StepStats):
            self.step_finished.emit(event)
        elif isinstance(event, EpochEnd):
            self.epoch_ended.emit(event)
        elif isinstance(event, Message):
            self.message_logged.emit(event)
        elif isinstance(event, RunStart):
            self.run_started.emit(event)
        elif isinstance(event, RunEnd):
            self.run_ended.emit(event)

    def _read_summary(self) -> None:
        if self._follower is None:
            return
        info = self._follower.read_info()
        summary = info.summary() if info is not None else ""
        if summary != self._summary:
            self._summary = summary
            self._show_banner(following=True)

    def _show_banner(self, following: bool, ended: str = "") -> None:
        where = self._run_dir
        problem = self._follower.config_problem if self._follower else ""
        config = self._summary or problem or f"waiting for {CONFIG_FILE}"
        if following:
            text = (f"Following {where} \u2014 {config}. Start trains on this computer and "
                    "stops following.")
        else:
            text = f"Followed {where} (run {ended}) \u2014 {config}"
        self.banner.show_text(text, following)

    def _on_stop_clicked(self) -> None:
        self.stop("stopped on request")
        self.banner.hide()


def folder_problem(run_dir: Path) -> str:
    """Why ``run_dir`` cannot be followed: '' for a run folder, or one that has no files yet."""
    if not run_dir.is_dir():
        return f"{run_dir}: not a folder"
    if (run_dir / CONFIG_FILE).exists() or (run_dir / METRICS_FILE).exists():
        return ""
    runs = sorted(p.name for p in run_dir.iterdir() if (p / METRICS_FILE).is_file())
    if runs:
        return (f"{run_dir} holds runs rather than being one; choose one of its run folders "
                f"({', '.join(runs[:3])}{', ...' if len(runs) > 3 else ''})")
    return ""
