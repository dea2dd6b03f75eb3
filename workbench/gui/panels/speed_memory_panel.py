"""Under the device: a speed probe button with its table, and whether the batch fits in memory.

Both measure on the device, so both run in the thread pool (newest request wins). The probe
times real steps of the user's model and data for each precision, layout and batch; when it is
done the panel shows the table and reports the fastest, which the window applies to the form.
The memory line is refreshed when a setting that changes the step's memory changes; on a GPU it
runs a dry step, on the CPU it says at once that memory is not limited there.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from workbench.core.runs.config import TrainConfig
from workbench.gui.workers.pool_tasks import LatestRequestRunner

# The settings that change a step's memory; others (lr, epochs) do not need a new check.
MEMORY_FIELDS = ("device", "model", "finetune", "crop_mode", "crop_size", "batch_size", "amp",
                 "amp_dtype", "channels_last", "optimizer")


def probe_speed_stoppable(config: TrainConfig, stop: threading.Event) -> Any:
    """Pool job: :func:`~workbench.core.training.tuning.speed_probe.probe_speed`, stoppable."""
    from workbench.core.training.tuning.speed_probe import probe_speed

    return probe_speed(config, should_stop=stop.is_set)


def memory_fit(config: TrainConfig, num_classes: int) -> Any:
    """Pool job: :func:`~workbench.core.training.tuning.memory_fit.check_memory_fit`."""
    from workbench.core.training.tuning.memory_fit import check_memory_fit

    return check_memory_fit(config, num_classes)


class SpeedMemoryPanel(QWidget):
    """The "Probe speed" button, the probe's table and the memory fit line.

    Signals:
        probe_requested(): the button was clicked; the window answers with ``start_probe``.
        probe_finished(object): the probe's ``SpeedProbeResult`` (something was timed).
    """

    probe_requested = Signal()
    probe_finished = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.probe_button = QPushButton("Probe speed", self)
        self.probe_button.setToolTip(
            "Time a few real training steps of this model on your images for float32 and mixed "
            "precision, channels_last off and on (on a GPU: a CPU run keeps the default layout), "
            "and two batch sizes; apply the fastest.")
        self.probe_label = QLabel("", self)
        self.probe_label.setWordWrap(False)
        self.probe_label.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.probe_summary = QLabel("", self)
        self.probe_summary.setWordWrap(True)
        self.memory_label = QLabel("", self)
        self.memory_label.setObjectName("memoryFit")
        self.memory_label.setWordWrap(True)
        self._probe_runner = LatestRequestRunner(self)
        self._probe_stop = threading.Event()
        self._memory_runner = LatestRequestRunner(self)
        self._memory_key: tuple[Any, ...] | None = None
        row = QHBoxLayout()
        row.addWidget(self.probe_button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.memory_label)
        layout.addLayout(row)
        layout.addWidget(self.probe_summary)
        layout.addWidget(self.probe_label)
        for label in (self.memory_label, self.probe_summary, self.probe_label):
            label.setVisible(False)  # shown with their first text: empty, they leave a gap

        self.probe_button.clicked.connect(self.probe_requested)
        self._probe_runner.result_ready.connect(self._on_probe_done)
        self._probe_runner.failed.connect(self._on_probe_failed)
        self._memory_runner.result_ready.connect(self._on_memory_fit_done)
        self._memory_runner.failed.connect(self._on_memory_fit_failed)

    # ------------------------------------------------------------------ public API
    def start_probe(self, config: TrainConfig) -> None:
        """Time ``config``'s combinations in the pool; a newer probe replaces one running."""
        self._probe_stop.set()
        self._probe_stop = threading.Event()
        self._probe_runner.submit(probe_speed_stoppable, config, self._probe_stop)
        self.probe_button.setEnabled(False)
        _show(self.probe_label, "")
        _show(self.probe_summary, f"Timing a few real steps per combination on "
                                   f"{config.device}\u2026")

    def check_memory(self, config: TrainConfig, num_classes: int) -> None:
        """Refresh the memory line for ``config`` unless nothing that matters changed."""
        key = (*(getattr(config, name) for name in MEMORY_FIELDS), num_classes)
        if key == self._memory_key or config.validate(check_paths=False):
            return
        self._memory_key = key
        self._memory_runner.submit(memory_fit, config, num_classes)

    def cancel(self) -> None:
        """Stop the probe after its current row and drop a pending memory check; nothing more
        is reported (a run is about to use the device)."""
        busy = self._probe_runner.is_busy()
        self._probe_stop.set()
        self._probe_runner.cancel()
        self._memory_runner.cancel()
        self._memory_key = None
        self.probe_button.setEnabled(True)
        if busy:
            _show(self.probe_summary, "Speed probe stopped.")

    def is_busy(self) -> bool:
        """True while a probe or a memory check is queued or running."""
        return self._probe_runner.is_busy() or self._memory_runner.is_busy()

    def memory_text(self) -> str:
        """The memory fit line as shown."""
        return self.memory_label.text()

    # ------------------------------------------------------------------ slots
    def _on_probe_done(self, result: Any) -> None:
        self.probe_button.setEnabled(True)
        _show(self.probe_summary, result.describe())
        _show(self.probe_label, result.table())
        if result.fastest is not None:
            self.probe_finished.emit(result)

    def _on_probe_failed(self, message: str) -> None:
        self.probe_button.setEnabled(True)
        _show(self.probe_summary, f"The speed probe failed: {message}")

    def _on_memory_fit_done(self, fit: Any) -> None:
        self.memory_label.setProperty("role", "warning" if fit.warn else "")
        _show(self.memory_label, ("\u26a0 " if fit.warn else "") + fit.sentence)

    def _on_memory_fit_failed(self, message: str) -> None:
        self._memory_key = None
        _show(self.memory_label, f"The memory check failed: {message}")


def _show(label: QLabel, text: str) -> None:
    """Set ``label``'s text and show it only while it has some."""
    label.setText(text)
    label.setVisible(bool(text))
