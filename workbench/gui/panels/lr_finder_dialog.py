"""The learning-rate finder's window: the range test's progress, its loss-versus-lr plot (log x
axis) with the suggested lr marked, the suggestion in words, and one button that applies it.

The test runs as an :class:`~workbench.gui.workers.lr_finder_worker.LrFinderJob` in the thread
pool; the dialog only draws. Points arrive as signals and are drawn by a ~100 ms timer, only
when new ones came. A new test cancels the one running (its late points and result are
dropped); closing the dialog cancels it too.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QThreadPool, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.core.runs.config import TrainConfig
from workbench.gui.workers.lr_finder_worker import LrFinderJob, LrFinderSignals

DEFAULT_STEPS = 100
START_LR, END_LR = 1e-7, 10.0  # the core finder's defaults, said in the dialog's words
REFRESH_MS = 100
SUGGESTION_COLOUR = "#c62828"


def format_lr(lr: float) -> str:
    """An lr with two significant digits, as a user would type it: 3.2e-3, 0.01 is 1.0e-2."""
    mantissa, exponent = f"{lr:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


class LrFinderDialog(QDialog):
    """Runs the range test on a config and offers its suggestion.

    Signals:
        lr_chosen(float): "Use …" was clicked; the value is the lr the button shows.
        running_changed(bool): a test started (True) or is over (False, its job finished).
    """

    lr_chosen = Signal(float)
    running_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Find a learning rate")
        self.resize(760, 560)
        self._job: LrFinderJob | None = None  # the test shown; None once over or cancelled
        self._alive: list[LrFinderSignals] = []  # every job's, kept until its ``finished``
        self._config: TrainConfig | None = None
        self._lrs: list[float] = []
        self._losses: list[float] = []
        self._dirty = False
        self._suggestion: float | None = None
        self.settings_label = QLabel("", self)
        self.settings_label.setWordWrap(True)
        self.steps_spin = QSpinBox(self)
        self.steps_spin.setRange(10, 1000)
        self.steps_spin.setValue(DEFAULT_STEPS)
        self.steps_spin.setToolTip("Training steps of the test: more give a smoother curve "
                                   "and take longer.")
        self.run_button = QPushButton("Run again", self)
        self.cancel_button = QPushButton("Cancel", self)
        self.progress = QProgressBar(self)
        self.plot = pg.PlotWidget(self, background="w")
        self.plot.setLogMode(x=True, y=False)
        # The ticks read the lr itself (10⁻⁵, 0.001, 1): an SI prefix would scale them once more
        # ("(x0.001)", a suggestion of 1e-3 read as 1) whenever the sweep ends below 1.
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.plot.setLabel("bottom", "learning rate (log scale)")
        self.plot.setLabel("left", "smoothed training loss")
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.curve = self.plot.plot([], [], pen=pg.mkPen("#1565c0", width=2))
        self.marker = pg.InfiniteLine(angle=90, movable=False,
                                      pen=pg.mkPen(SUGGESTION_COLOUR, width=2,
                                                   style=pg.QtCore.Qt.PenStyle.DashLine))
        self.marker.setVisible(False)
        self.plot.addItem(self.marker)
        self.result_label = QLabel("", self)
        self.result_label.setObjectName("lrFinderResult")
        self.result_label.setWordWrap(True)
        self.error_label = QLabel("", self)
        self.error_label.setObjectName("lrFinderError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {SUGGESTION_COLOUR};")
        self.error_label.hide()
        self.apply_button = QPushButton("Use the suggested lr", self)
        self.apply_button.setObjectName("applyLr")
        self.apply_button.setDefault(True)
        self.close_button = QPushButton("Close", self)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._build_layout()

        self.run_button.clicked.connect(self._on_run_clicked)
        self.cancel_button.clicked.connect(self.cancel)
        self.apply_button.clicked.connect(self._on_apply_clicked)
        self.close_button.clicked.connect(self.close)
        self._timer.timeout.connect(self._update_curve)
        self._update_buttons()

    # ------------------------------------------------------------------ public API
    def start(self, config: TrainConfig, steps: int | None = None) -> None:
        """Run the test on ``config`` in the pool; a test still running is cancelled first."""
        self.cancel()
        if steps is not None:
            self.steps_spin.setValue(steps)
        self._config = config
        self._lrs, self._losses, self._suggestion = [], [], None
        self._dirty = True
        self._update_curve()
        self.marker.setVisible(False)
        self._show_error("")
        steps = self.steps_spin.value()
        self.settings_label.setText(
            f"Smith's range test on {config.model} ({config.weights} weights, "
            f"{config.finetune.replace('_', ' ')} fine-tuning), {config.optimizer}, batch "
            f"{config.batch_size}, on {config.device}: {steps} training steps on your images "
            f"with the lr growing exponentially from {format_lr(START_LR)} to "
            f"{format_lr(END_LR)}.{_stage_note(config)} The model and optimiser are put back "
            "afterwards.")
        self.progress.setRange(0, steps)
        self.progress.setValue(0)
        self.result_label.setText("Preparing the data and the model\u2026")
        job = LrFinderJob(config, steps)
        signals = job.signals
        signals.step_measured.connect(self._on_step_measured)
        signals.result_ready.connect(self._on_result_ready)
        signals.errored.connect(self._on_errored)
        signals.finished.connect(self._on_job_finished)
        self._job = job
        self._alive.append(signals)
        self._timer.start()
        QThreadPool.globalInstance().start(job)
        self._update_buttons()
        self.running_changed.emit(True)

    def show_problem(self, text: str) -> None:
        """Say why no test runs (the settings have a problem, training is running)."""
        self.result_label.setText("")
        self._show_error(text)

    def cancel(self) -> None:
        """Stop the running test before its next step; it reports nothing more."""
        if self._job is None:
            return
        self._job.cancel()
        self._job = None
        self._timer.stop()
        self._update_buttons()
        self.result_label.setText("Cancelled: no lr suggested. Run again to start over.")

    def is_running(self) -> bool:
        """True from ``start`` until the test finished or was cancelled."""
        return self._job is not None

    def is_busy(self) -> bool:
        """True while a test, a cancelled one winding down too, still uses the device."""
        return bool(self._alive)

    def suggestion(self) -> float | None:
        """The lr "Use …" applies: the suggestion rounded to two significant digits."""
        return float(format_lr(self._suggestion)) if self._suggestion is not None else None

    def points(self) -> tuple[list[float], list[float]]:
        """The (lr, smoothed loss) points drawn so far."""
        return list(self._lrs), list(self._losses)

    def error_text(self) -> str:
        """The error shown, '' when none."""
        return self.error_label.text() if not self.error_label.isHidden() else ""

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        self.cancel()
        super().closeEvent(event)

    def reject(self) -> None:  # Esc closes the dialog: the test must not go on unseen
        self.cancel()
        super().reject()

    # ------------------------------------------------------------------ slots
    def _on_run_clicked(self) -> None:
        if self._config is not None:
            self.start(self._config)

    def _is_current(self, signals: object) -> bool:
        """Whether a signal comes from the test shown (not a cancelled one's late report)."""
        return self._job is not None and signals is self._job.signals

    def _on_step_measured(self, step: int, lr: float, loss: float) -> None:
        if not self._is_current(self.sender()):
            return
        self._lrs.append(lr)
        self._losses.append(loss)
        self._dirty = True
        if step + 1 > self.progress.value():
            self.progress.setValue(step + 1)

    def _on_result_ready(self, result: object) -> None:
        if self._is_current(self.sender()):
            self.show_result(result)

    def show_result(self, result: object) -> None:
        """Draw a finished test (an ``LrFinderResult``): its curve, the suggestion marked at
        its lr, and the sentence saying what was suggested."""
        self._lrs, self._losses = list(result.lrs), list(result.losses)
        self._dirty = True
        self._update_curve()
        self._suggestion = result.suggestion
        self.progress.setValue(self.progress.maximum())
        self.result_label.setText(self._explain(result))
        if self._suggestion is not None:
            self.marker.setPos(math.log10(self._suggestion))  # in log mode, x is log10(lr)
            self.marker.setVisible(True)
        self._update_buttons()

    def _on_errored(self, message: str) -> None:
        if not self._is_current(self.sender()):
            return
        self.result_label.setText("")
        self._show_error(f"The range test could not run: {message}")

    def _on_job_finished(self) -> None:
        signals = self.sender()
        if self._is_current(signals):
            self._job = None
            self._timer.stop()
            self._update_curve()
        self._alive = [alive for alive in self._alive if alive is not signals]
        self._update_buttons()
        if not self._alive:
            self.running_changed.emit(False)

    def _on_apply_clicked(self) -> None:
        value = self.suggestion()
        if value is not None:
            self.lr_chosen.emit(value)

    # ------------------------------------------------------------------ refreshes
    def _update_curve(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        finite = [(lr, loss) for lr, loss in zip(self._lrs, self._losses, strict=True)
                  if math.isfinite(loss)]
        self.curve.setData([lr for lr, _ in finite], [loss for _, loss in finite])

    def _update_buttons(self) -> None:
        running = self._job is not None
        self.cancel_button.setEnabled(running)
        self.run_button.setEnabled(not running and self._config is not None)
        self.steps_spin.setEnabled(not running)
        value = self.suggestion()
        self.apply_button.setEnabled(not running and value is not None)
        self.apply_button.setText(f"Use {format_lr(value)}" if value is not None and not running
                                  else "Use the suggested lr")

    def _show_error(self, text: str) -> None:
        self.error_label.setText(text)
        self.error_label.setVisible(bool(text))

    @staticmethod
    def _explain(result: object) -> str:
        steps = len(result.lrs)
        ended = (" It ended early, where the loss diverged (over four times its lowest)."
                 if result.stopped_early else "")
        if result.suggestion is None:
            return (f"No suggestion: over {steps} steps the smoothed loss never fell. Check the "
                    "data, or run more steps." + ended)
        return (f"Suggested lr {format_lr(result.suggestion)} (red line): where the smoothed "
                f"loss falls fastest per tenfold increase of the lr, over {steps} steps, "
                "leaving out the noisy first and last few (Lightning's default rule). Training "
                f"usually goes well at or a little below it.{ended}")

    def _build_layout(self) -> None:
        steps_row = QHBoxLayout()
        steps_row.addWidget(QLabel("Steps", self))
        steps_row.addWidget(self.steps_spin)
        steps_row.addWidget(self.run_button)
        steps_row.addWidget(self.cancel_button)
        steps_row.addWidget(self.progress, 1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.apply_button)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.settings_label)
        layout.addLayout(steps_row)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.result_label)
        layout.addWidget(self.error_label)
        layout.addLayout(buttons)


def _stage_note(config: TrainConfig) -> str:
    """What the sweep tries with head-first fine-tuning: the network of its second stage."""
    if config.finetune != "head_then_full":
        return ""
    return (" It sweeps the whole network as it trains after the head-only epochs: every "
            f"layer learns, the backbone at {config.backbone_lr_factor:g} times the lr shown.")
