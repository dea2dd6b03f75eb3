"""Which device training will use, in plain words, a combo to choose another, and a button that
finds the largest batch that fits on it.

Detecting devices imports torch and may initialise CUDA (a second or more), so it runs in the
thread pool after the window is shown; until it is done the panel says "Detecting devices…".
The batch size search trains real steps for seconds to minutes, so it runs in the pool too.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QRunnable, Qt, QThreadPool, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.speed_memory_panel import SpeedMemoryPanel
from workbench.gui.widgets.form_fields import guard_wheel
from workbench.gui.workers.pool_tasks import JobSignals, LatestRequestRunner

AUTO = "auto"


@dataclass(frozen=True)
class DeviceChoices:
    """What detection found: (name, label) per device and the sentence for every choice."""

    devices: tuple[tuple[str, str], ...]
    descriptions: dict[str, str]
    cuda_unavailable_reason: str | None
    install_command: str | None = None
    """The command that installs a torch for an NVIDIA card this one cannot use."""


def detect_device_choices(extra: tuple[str, ...] = ()) -> DeviceChoices:
    """List devices and describe every choice (auto, each device, and ``extra`` names)."""
    from workbench.core.devices import selection as core
    from workbench.core.devices.idle_card import idle_card

    devices = tuple((info.name, info.label) for info in core.list_devices())
    names = [AUTO, *(name for name, _ in devices), *extra]
    descriptions = {name: core.describe_device_choice(name) for name in dict.fromkeys(names)}
    idle = idle_card()
    return DeviceChoices(devices, descriptions, core.cuda_unavailable_reason(),
                         None if idle is None else idle.command)


def find_batch_size_stoppable(config: TrainConfig, num_classes: int, max_batch: int | None,
                              memory_limit: int | None, stop: threading.Event) -> Any:
    """Pool job, stoppable:
    :func:`~workbench.core.training.tuning.batch_size_finder.find_batch_size`."""
    from workbench.core.training.tuning.batch_size_finder import find_batch_size

    return find_batch_size(config, num_classes, max_batch, memory_limit_bytes=memory_limit,
                           should_stop=stop.is_set)


class _DetectionSignals(JobSignals):
    detected = Signal(object)
    failed = Signal(str)


class _DetectionJob(QRunnable):
    def __init__(self, extra: tuple[str, ...]) -> None:
        super().__init__()
        self.extra = extra
        self.signals = _DetectionSignals.for_a_pool_job()

    def run(self) -> None:
        try:
            choices = detect_device_choices(self.extra)
        except BaseException as exc:  # a pool job reports everything and never raises
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.signals.failed.emit(f"Device detection failed: {detail}")
        else:
            self.signals.detected.emit(choices)
        finally:
            self.signals.release()


class DevicePanel(QWidget):
    """Device combo ("auto" and every device found) and a bold line saying what will be used.

    Signals:
        device_changed(str): the chosen device name ('auto', 'cpu', 'cuda:0', ...).
        devices_detected(object): the :class:`DeviceChoices` once detection has finished.
        batch_search_requested(): the "Find largest batch" button was clicked; the window
            answers with ``start_batch_search(config)``.
        batch_size_found(object): the search's ``BatchSizeResult`` (something fitted).
        batch_search_failed(str): the search raised, or not even one sample fits.
        batch_search_not_needed(str): the device has no memory limit to find (the CPU);
            the sentence says so, and the batch size stays as it is.
    """

    device_changed = Signal(str)
    devices_detected = Signal(object)
    batch_search_requested = Signal()
    batch_size_found = Signal(object)
    batch_search_failed = Signal(str)
    batch_search_not_needed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._device = AUTO
        self._choices: DeviceChoices | None = None
        self._job_signals: _DetectionSignals | None = None
        self._combo = QComboBox(self)
        self._combo.addItem("auto \u2014 the first CUDA GPU, else the CPU", AUTO)
        self._combo.setEnabled(False)
        guard_wheel(self._combo)  # it sits in the scrolling Settings tab
        self._choice_label = QLabel("Detecting devices\u2026", self)
        self._choice_label.setObjectName("deviceChoice")
        self._choice_label.setProperty("role", "device")
        self._choice_label.setWordWrap(True)
        font = self._choice_label.font()
        font.setBold(True)
        self._choice_label.setFont(font)
        self._choice_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_command_button = QPushButton("Copy install command", self)
        self.copy_command_button.setToolTip("Copy the command that installs a PyTorch build "
                                            "for the idle NVIDIA card; run it in a terminal, "
                                            "then restart Workbench.")
        self.copy_command_button.setVisible(False)
        self.batch_button = QPushButton("Find largest batch", self)
        self.batch_button.setToolTip("Train a few real steps at growing batch sizes with these "
                                     "settings and set the batch size to 90% of the largest "
                                     "that fits in the GPU's memory. The CPU has no such limit; "
                                     "there it changes nothing.")
        self.batch_label = QLabel("", self)
        self.batch_label.setWordWrap(True)
        self.batch_search_max: int | None = None  # None: the finder's default for the device
        # Bytes a step may keep, simulating a GPU's limit (tests do, on the CPU); None: real.
        self.batch_search_memory_limit: int | None = None
        self._batch_runner = LatestRequestRunner(self)
        self._batch_stop = threading.Event()
        batch_row = QHBoxLayout()
        batch_row.addWidget(self.batch_button)
        batch_row.addWidget(self.batch_label, 1)
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Device", self._combo)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(form)
        layout.addWidget(self._choice_label)
        layout.addWidget(self.copy_command_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addLayout(batch_row)
        self.measurements = SpeedMemoryPanel(self)  # speed probe and memory fit line
        layout.addWidget(self.measurements)

        self._combo.currentIndexChanged.connect(self._on_device_changed)
        self.batch_button.clicked.connect(self.batch_search_requested)
        self.copy_command_button.clicked.connect(self._on_copy_command_clicked)
        self._batch_runner.result_ready.connect(self._on_batch_search_done)
        self._batch_runner.failed.connect(self._on_batch_search_failed)

    # ------------------------------------------------------------------ public API
    def device(self) -> str:
        """The chosen device name."""
        return self._device

    def set_device(self, name: str) -> None:
        """Choose ``name``; before detection it is kept and selected once devices are known."""
        self._device = name or AUTO
        if self._choices is not None:
            self._select(self._device)
        self._update_choice_label()

    def is_detected(self) -> bool:
        """True once device detection has finished (successfully or not)."""
        return self._choices is not None

    def choice_text(self) -> str:
        """The sentence shown under the combo."""
        return self._choice_label.text()

    def start_detection(self, pool: QThreadPool | None = None) -> None:
        """Detect devices in the pool; call once the window is visible."""
        if self._job_signals is not None:
            return
        job = _DetectionJob((self._device,))
        self._job_signals = job.signals
        job.signals.detected.connect(self._on_devices_detected)
        job.signals.failed.connect(self._on_detection_failed)
        (pool or QThreadPool.globalInstance()).start(job)

    def start_batch_search(self, config: TrainConfig, num_classes: int = 10,
                           max_batch: int | None = None) -> None:
        """Find the largest batch of ``config`` on its device, in the pool; a newer search
        replaces one still running. ``max_batch`` defaults to ``batch_search_max``."""
        self._batch_stop.set()
        self._batch_stop = threading.Event()
        if max_batch is None:
            max_batch = self.batch_search_max
        self._batch_runner.submit(find_batch_size_stoppable, config, num_classes, max_batch,
                                  self.batch_search_memory_limit, self._batch_stop)
        self.batch_button.setEnabled(False)
        self.batch_label.setText(f"Training a few steps at growing batch sizes on "
                                 f"{config.device}\u2026")

    def cancel_batch_search(self) -> None:
        """Stop a running search after its current try; no result is reported."""
        self._batch_stop.set()
        self._batch_runner.cancel()
        self.batch_button.setEnabled(True)
        if self._batch_runner.is_busy():
            self.batch_label.setText("Batch size search stopped.")

    def is_searching_batch(self) -> bool:
        """True while a batch size search is queued or running."""
        return self._batch_runner.is_busy()

    # ------------------------------------------------------------------ slots
    def _on_copy_command_clicked(self) -> None:
        command = self._choices.install_command if self._choices is not None else None
        if command:
            QGuiApplication.clipboard().setText(command)
            self.copy_command_button.setText("Copied: paste it into a terminal")

    def _on_batch_search_done(self, result: Any) -> None:
        self.batch_button.setEnabled(True)
        self.batch_label.setText(result.describe())
        if result.no_memory_limit:
            self.batch_search_not_needed.emit(result.describe())
        elif result.largest_fitting:
            self.batch_size_found.emit(result)
        else:
            self.batch_search_failed.emit(result.describe())

    def _on_batch_search_failed(self, message: str) -> None:
        self.batch_button.setEnabled(True)
        self.batch_label.setText(f"The batch size search failed: {message}")
        self.batch_search_failed.emit(message)

    def _on_devices_detected(self, choices: DeviceChoices) -> None:
        self._choices = choices
        self._combo.blockSignals(True)
        for name, label in choices.devices:
            self._combo.addItem(label, name)
        self._combo.blockSignals(False)
        self._combo.setEnabled(True)
        self.copy_command_button.setVisible(bool(choices.install_command))
        self._select(self._device)
        self._update_choice_label()
        self.devices_detected.emit(choices)

    def _on_detection_failed(self, message: str) -> None:
        self._choices = DeviceChoices((("cpu", "cpu"),), {}, message)
        self._on_devices_detected(self._choices)
        self._choice_label.setText(message)

    def _on_device_changed(self, index: int) -> None:
        name = self._combo.itemData(index)
        if not name or name == self._device:
            return
        self._device = name
        self._update_choice_label()
        self.device_changed.emit(name)

    # ------------------------------------------------------------------ refreshes
    def _update_choice_label(self) -> None:
        if self._choices is None:
            self._choice_label.setText("Detecting devices\u2026")
            return
        text = self._choices.descriptions.get(self._device)
        if text is None:
            text = f"Cannot train on {self._device}: no such device was found on this machine."
        self._choice_label.setText(text)

    def _select(self, name: str) -> None:
        index = self._combo.findData(name)
        if index < 0:
            # A saved config may name a device this machine lacks; keep it visible and explained.
            self._combo.addItem(f"{name} (not found)", name)
            index = self._combo.count() - 1
        self._combo.blockSignals(True)
        self._combo.setCurrentIndex(index)
        self._combo.blockSignals(False)
