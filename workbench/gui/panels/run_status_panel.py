"""Where the run is: epoch and step progress, ETA, speed, the device in use, GPU sensors and
what limits the speed (input pipeline or compute), with what to change.

The speed and the bottleneck line come from one diagnosis of the recent steps (images over
their seconds, warm-up steps left out), refreshed together, so the two never disagree.

Progress bars change only when the whole percent changes, and the text labels at most a few
times a second, so a run with thousands of steps per second still costs the UI almost nothing.
"""

from __future__ import annotations

import math
import time

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QProgressBar, QVBoxLayout, QWidget

from workbench.core.devices.throttle_detector import ThrottleWatch, ThroughputSample
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import EpochEnd, RunEnd, RunStart, StepStats
from workbench.core.training.bottleneck import UNKNOWN, WARMUP_STEPS, BottleneckMonitor
from workbench.gui.widgets.elided_label import ElidedLabel

LABEL_INTERVAL_S = 0.25
DIAGNOSIS_INTERVAL_S = 3.0
STATE_LINES = 3
STATE_TEXT = {"completed": "Completed", "cancelled": "Stopped", "failed": "Failed"}


def format_duration(seconds: float) -> str:
    """'1 h 02 min', '3 min 05 s' or '12 s'."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


class RunStatusPanel(QWidget):
    """Fed by the training controller's signals; only draws."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # A failed run's reason is read whole when it is a sentence or two: it wraps onto up to
        # STATE_LINES lines. Past that (an error can be thousands of characters) it is cut; the
        # whole text is in the tooltip and the log, never in the window's width.
        self.state_label = ElidedLabel("Idle", self, max_lines=STATE_LINES)
        self.state_label.setObjectName("runState")
        font = self.state_label.font()
        font.setBold(True)
        self.state_label.setFont(font)
        self.epoch_bar = QProgressBar(self)
        self.step_bar = QProgressBar(self)
        for bar in (self.epoch_bar, self.step_bar):
            bar.setRange(0, 100)
            bar.setValue(0)
        self.epoch_bar.setFormat("Epoch")
        self.step_bar.setFormat("Step")
        self.eta_label = ElidedLabel("\u2014", self)
        self.speed_label = ElidedLabel("\u2014", self)
        self.device_label = ElidedLabel("\u2014", self)
        self.sensors_label = ElidedLabel("n/a", self)
        self.bottleneck_label = QLabel("\u2014", self)
        self.bottleneck_label.setObjectName("bottleneck")
        self.bottleneck_label.setWordWrap(True)  # the advice is read whole; it wraps instead
        self.throttle_label = QLabel("\u2014", self)
        self.throttle_label.setObjectName("throttling")
        self.throttle_label.setWordWrap(True)
        self.throttle_watch = ThrottleWatch()
        self.diagnosis_interval_s = DIAGNOSIS_INTERVAL_S
        self._bottleneck = BottleneckMonitor()
        self._last_diagnosis = -math.inf
        self._speed_text = "\u2014"
        self._epoch_note = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(4)
        layout.addWidget(self.state_label)
        layout.addLayout(self._figures_grid())
        self._start: RunStart | None = None
        self._started_at = 0.0
        self._first_step_at: float | None = None
        self._steps_done = 0
        self._last_label_update = 0.0
        self._last_percent = {id(self.epoch_bar): -1, id(self.step_bar): -1}

    def _figures_grid(self) -> QGridLayout:
        """Two figures a row, so the panel leaves the plots most of the height; the bottleneck
        advice spans the row below them."""
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(3)
        rows = ((("Epoch", self.epoch_bar), ("Step", self.step_bar)),
                (("Time left", self.eta_label), ("Speed", self.speed_label)),
                (("Device", self.device_label), ("GPU", self.sensors_label)))
        for row, pairs in enumerate(rows):
            for pair, (name, widget) in enumerate(pairs):
                grid.addWidget(QLabel(name, self), row, 2 * pair)
                grid.addWidget(widget, row, 2 * pair + 1)
        title = QLabel("Bottleneck", self)
        title.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        grid.addWidget(title, len(rows), 0)
        grid.addWidget(self.bottleneck_label, len(rows), 1, 1, 3)
        grid.addWidget(QLabel("Throttling", self), len(rows) + 1, 0)
        grid.addWidget(self.throttle_label, len(rows) + 1, 1, 1, 3)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        return grid

    # ------------------------------------------------------------------ public API
    def set_state(self, text: str) -> None:
        """The state above the bars ('Starting…', 'Training', 'Paused', a failure's reason...),
        wrapped onto at most STATE_LINES lines; a longer text is cut there and shown whole in
        the tooltip."""
        self.state_label.setText(text)

    def clear(self, state: str = "Idle") -> None:
        """Forget the previous run's figures (bars, time left, speed, device, sensors,
        bottleneck, throttling) and show ``state``; the settings given by ``set_run_config``
        are kept, they belong to the run about to start."""
        self._start, self._first_step_at, self._steps_done = None, None, 0
        self._bottleneck.clear()
        self._last_diagnosis = -math.inf
        self.throttle_watch.clear()
        for label in (self.eta_label, self.speed_label, self.device_label,
                      self.bottleneck_label, self.throttle_label):
            label.setText("\u2014")
        self.sensors_label.setText("n/a")
        self._set_progress(self.epoch_bar, 0, "Epoch", force=True)
        self._set_progress(self.step_bar, 0, "Step", force=True)
        self.set_state(state)

    def set_run_config(self, config: TrainConfig | None) -> None:
        """The settings of the run about to start, so the bottleneck advice can name them; they
        are forgotten when that run ends (a followed run's advice is general)."""
        self._bottleneck.config = config

    def show_run_start(self, event: RunStart) -> None:
        """A run has started: reset the bars and name the device in use."""
        self._start = event
        self._bottleneck.clear()
        self._bottleneck.device = event.device
        self._bottleneck.images_on_device = event.images_on_device
        self._last_diagnosis = -math.inf
        self._speed_text, self._epoch_note = "\u2014", ""
        self.bottleneck_label.setText("judged after the first steps\u2026")
        self._started_at = time.monotonic()
        self._first_step_at = None
        self._steps_done = 0
        self._last_label_update = 0.0
        notes = [event.precision]
        if event.images_on_device:
            notes.append("images kept on the device, no loader processes")
        if event.feature_cache:
            notes.append("frozen-backbone features cached")
        self.device_label.setText(
            f"{event.device} \u2014 {event.device_name} ({', '.join(notes)})")
        self.sensors_label.setText("n/a")
        self.throttle_watch.clear()
        self.throttle_label.setText("\u2014")
        self.eta_label.setText("estimating\u2026")
        self.speed_label.setText("\u2014")
        done = 100 * event.start_epoch // max(1, event.epochs)
        self._set_progress(self.epoch_bar, done, f"Epoch {event.start_epoch}/{event.epochs}",
                           force=True)
        self._set_progress(self.step_bar, 0, f"Step 0/{event.steps_per_epoch}", force=True)
        self.set_state("Training")

    def show_step(self, event: StepStats) -> None:
        """Advance the bars; refresh ETA, speed and sensors at most every LABEL_INTERVAL_S."""
        start = self._start
        now = time.monotonic()
        if self._first_step_at is None:
            self._first_step_at = now
        self._steps_done += 1
        self._bottleneck.add(event)
        self._update_throttling(event, now)
        if event.step > WARMUP_STEPS and now - self._last_diagnosis >= self.diagnosis_interval_s:
            self._update_bottleneck(now)
        steps = max(1, event.steps_in_epoch)
        epochs = start.epochs if start else event.epoch
        epoch_done = (event.epoch - 1) + event.step / steps
        self._set_progress(self.step_bar, 100 * event.step // steps,
                           f"Step {event.step}/{steps}")
        self._set_progress(self.epoch_bar, int(100 * epoch_done / max(1, epochs)),
                           f"Epoch {event.epoch}/{epochs}")
        if now - self._last_label_update < LABEL_INTERVAL_S and event.step != steps:
            return
        self._last_label_update = now
        self.sensors_label.setText(_sensor_text(event))
        self.eta_label.setText(self._eta_text(event, epochs, steps))

    def show_epoch_end(self, event: EpochEnd) -> None:
        """An epoch finished: show its validation accuracy and time next to the speed."""
        self._set_progress(self.epoch_bar, 100 * event.epoch // max(1, event.epochs),
                           f"Epoch {event.epoch}/{event.epochs}", force=True)
        self._epoch_note = (f"epoch {event.epoch}: val accuracy "
                            f"{100 * event.val_accuracy:.1f}%, {event.epoch_seconds:.1f} s")
        self._update_bottleneck(time.monotonic())

    def show_run_end(self, event: RunEnd) -> None:
        """The run is over: say how it ended."""
        text = STATE_TEXT.get(event.status, event.status)
        detail = f" after {event.epochs_completed} epoch(s) in {format_duration(event.seconds)}"
        if event.status == "failed" and event.error:
            detail += f": {event.error}"
        self.set_state(text + detail)
        self.eta_label.setText("\u2014")
        if self._steps_done:
            self._update_bottleneck(time.monotonic())
        self._bottleneck.config = None  # the settings were this run's; see set_run_config
        if event.status == "completed":
            self._set_progress(self.epoch_bar, 100, self.epoch_bar.format(), force=True)

    def progress_percent(self) -> tuple[int, int]:
        """(epoch bar, step bar) values."""
        return self.epoch_bar.value(), self.step_bar.value()

    def bottleneck_text(self) -> str:
        """The bottleneck line as shown."""
        return self.bottleneck_label.text()

    # ------------------------------------------------------------------ refreshes
    def _update_bottleneck(self, now: float) -> None:
        """The bottleneck line and the speed, from one diagnosis."""
        self._last_diagnosis = now
        diagnosis = self._bottleneck.diagnosis()
        self.bottleneck_label.setText(diagnosis.sentence)
        if diagnosis.kind != UNKNOWN:
            self._speed_text = f"{diagnosis.images_per_second:,.0f} images/s"
        note = f" ({self._epoch_note})" if self._epoch_note else ""
        self.speed_label.setText(self._speed_text + note)

    def _update_throttling(self, event: StepStats, now: float) -> None:
        """The same verdict the run's log gives, from the same figures."""
        if event.gpu_throttle_reasons is None and event.on_battery is None:
            return
        self.throttle_watch.add(ThroughputSample(now, event.images_per_second,
                                            event.gpu_throttle_reasons, event.gpu_power_w,
                                            event.gpu_temperature, event.on_battery))
        verdict = self.throttle_watch.verdict
        self.throttle_label.setText(verdict.sentence if verdict.throttled else "no")

    def _set_progress(self, bar: QProgressBar, percent: int, text: str,
                      force: bool = False) -> None:
        """Repaint ``bar`` only when its whole percent changes (or when forced)."""
        percent = max(0, min(100, int(percent)))
        if self._last_percent[id(bar)] == percent and not force:
            return
        self._last_percent[id(bar)] = percent
        bar.setFormat(text)
        bar.setValue(percent)

    def _eta_text(self, event: StepStats, epochs: int, steps: int) -> str:
        start = self._start
        if start is None or self._first_step_at is None or self._steps_done < 2:
            return "estimating\u2026"
        total = (epochs - start.start_epoch) * steps
        remaining = max(0, total - self._steps_done)
        per_step = (time.monotonic() - self._first_step_at) / (self._steps_done - 1)
        return f"about {format_duration(remaining * per_step)} (training steps only)"


def _sensor_text(event: StepStats) -> str:
    parts = []
    if event.gpu_utilization is not None:
        parts.append(f"{event.gpu_utilization:.0f}% busy")
    if event.gpu_temperature is not None:
        parts.append(f"{event.gpu_temperature:.0f} \u00b0C")
    if event.gpu_power_w is not None:
        parts.append(f"{event.gpu_power_w:.0f} W")
    return ", ".join(parts) if parts else "n/a"
