"""The model picker: every model side by side, with torchvision's figures and what each costs
on this machine, and one button that chooses the model for the form.

The measured columns come from the measurements file at once for the settings shown (batch,
crop, amp, fine-tune mode, the form's device); "Measure on this machine" measures the selected
models (all of those the filter shows when none is selected) in a
:class:`~workbench.gui.workers.model_measurement_worker.ModelMeasurementController` thread,
filling each row as its model finishes. Closing the dialog stops a measurement and waits for
its thread.
"""

from __future__ import annotations

import warnings

from PySide6.QtCore import Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.core.runs.config import FINETUNE_MODES, TrainConfig
from workbench.gui.widgets.model_table import ModelTable
from workbench.gui.workers.model_measurement_worker import (
    MeasurementRequest,
    ModelMeasurementController,
)

CLOSE_TIMEOUT_S = 30.0
PREFERRED_SIZE = (1280, 640)
OWN = "each model's own"


class ModelPickerDialog(QDialog):
    """Compares the models and offers one to the form.

    Signals:
        model_chosen(str): "Use this model" was clicked with that model current.
        running_changed(bool): a measurement started (True) or its thread finished (False).
    """

    model_chosen = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare models")
        self.setObjectName("modelPicker")
        self._fit_to_screen()
        self.device = "cpu"
        self.cache_path = ""  # the default measurements file when empty
        self.timed_steps: int | None = None  # tests measure with fewer steps
        self.table = ModelTable(self)
        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText("Filter: text in any column, e.g. resnet, adamw "
                                            "or 224")
        self.filter_edit.setClearButtonEnabled(True)
        self.batch_spin = QSpinBox(self)
        self.batch_spin.setRange(0, 4096)
        self.batch_spin.setSpecialValueText(OWN)
        self.batch_spin.setToolTip("Training batch measured; 0 for each model's own.")
        self.crop_spin = QSpinBox(self)
        self.crop_spin.setRange(0, 1024)
        self.crop_spin.setSpecialValueText(OWN)
        self.crop_spin.setSuffix(" px")
        self.crop_spin.setToolTip("Crop side measured; 0 for each model's own (ViT-B/16 "
                                  "takes 224 px only).")
        self.amp_check = QCheckBox("amp", self)
        self.amp_check.setToolTip("Mixed precision, as a run uses it (GPU only).")
        self.finetune_combo = QComboBox(self)
        self.finetune_combo.addItem(OWN, "")
        for mode in FINETUNE_MODES:
            self.finetune_combo.addItem(mode, mode)
        self.finetune_combo.setToolTip("last_layer trains only the head: that is the speed a "
                                       "run fine-tuning the last layer gets.")
        self.device_label = QLabel(self)
        self.device_label.setObjectName("pickerDevice")
        self.device_label.setWordWrap(True)
        self.measure_button = QPushButton("Measure on this machine", self)
        self.measure_button.setToolTip("Time each selected model's training step, its "
                                       "single-image latency and, on a GPU, its memory and "
                                       "largest batch. With no row selected, every model shown.")
        self.cancel_button = QPushButton("Cancel", self)
        self.progress = QProgressBar(self)
        self.progress.setFormat("%v of %m models")
        self.status_label = QLabel("", self)
        self.status_label.setObjectName("pickerStatus")
        self.status_label.setWordWrap(True)
        self.use_button = QPushButton("Use this model", self)
        self.use_button.setDefault(True)
        self.close_button = QPushButton("Close", self)
        self.controller = ModelMeasurementController(self)
        self._measured_count = 0
        self._failed: list[str] = []
        self._cancelling = False
        self._error = ""
        self._build_layout()
        self._update_running(False)

        self.filter_edit.textChanged.connect(self._on_filter_changed)
        for spin in (self.batch_spin, self.crop_spin):
            spin.valueChanged.connect(self._on_settings_changed)
        self.amp_check.toggled.connect(self._on_settings_changed)
        self.finetune_combo.currentIndexChanged.connect(self._on_settings_changed)
        self.measure_button.clicked.connect(self._on_measure_clicked)
        self.cancel_button.clicked.connect(self.cancel)
        self.use_button.clicked.connect(self._on_use_clicked)
        self.close_button.clicked.connect(self.close)
        self.table.itemDoubleClicked.connect(self._on_use_clicked)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.controller.model_started.connect(self._on_model_started)
        self.controller.model_measured.connect(self._on_model_measured)
        self.controller.model_failed.connect(self._on_model_failed)
        self.controller.errored.connect(self._on_errored)
        self.controller.finished.connect(self._on_finished)

    # ------------------------------------------------------------------ public API
    def show_for(self, config: TrainConfig, device: str) -> None:
        """Take the form's batch, amp and device (resolved; crop and fine-tune mode start as
        each model's own); select its model; show the measurements remembered for those."""
        self.device = device
        for widget, value in ((self.batch_spin, config.batch_size), (self.crop_spin, 0),
                              (self.amp_check, config.amp)):
            widget.blockSignals(True)
            widget.setValue(value) if isinstance(widget, QSpinBox) else widget.setChecked(value)
            widget.blockSignals(False)
        self.table.select_model(config.model)
        self._on_settings_changed()

    def is_busy(self) -> bool:
        return self.controller.is_running()

    def request(self, models: list[str]) -> MeasurementRequest:
        """What "Measure" measures for ``models`` at the settings shown."""
        return MeasurementRequest(
            tuple(models), self.batch_spin.value(), self.crop_spin.value(),
            self.amp_check.isChecked(), self.finetune_combo.currentData(), self.device,
            self.cache_path, self.timed_steps)

    def measure(self, models: list[str]) -> None:
        """Measure ``models`` in the background, row by row."""
        if self.controller.is_running() or not models:
            return
        self._measured_count = 0
        self._failed, self._cancelling, self._error = [], False, ""
        self.progress.setRange(0, len(models))
        self.progress.setValue(0)
        self.status_label.setText(f"Measuring {len(models)} model(s) on {self.device}\u2026")
        self.controller.start(self.request(models))
        self._update_running(True)

    def cancel(self) -> None:
        """Stop a measurement at its next step (rows measured so far stay)."""
        if self.controller.is_running():
            self._cancelling = True
            self.controller.cancel()
            self.status_label.setText("Stopping the measurement\u2026")

    def stop_and_wait(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Cancel and wait for the thread; True when it has finished."""
        self.cancel()
        return self.controller.wait_finished(timeout_s)

    # ------------------------------------------------------------------ Qt overrides
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        self.stop_and_wait()
        super().closeEvent(event)

    def reject(self) -> None:  # Escape
        self.stop_and_wait()
        super().reject()

    # ------------------------------------------------------------------ slots
    def _on_filter_changed(self, text: str) -> None:
        self.table.set_filter(text)
        self._update_buttons()

    def _on_settings_changed(self, *_: object) -> None:
        """Other settings: the measured columns show what is remembered for these."""
        self.table.clear_measurements()
        remembered, problem = self._remembered()
        for measurement in remembered:
            self.table.set_measurement(measurement)
        self._update_device_label()
        if problem:
            self.status_label.setText(problem)
        elif remembered:
            self.status_label.setText(f"{len(remembered)} model(s) measured before on this "
                                      "machine at these settings.")
        else:
            self.status_label.setText("")

    def _on_measure_clicked(self) -> None:
        self.measure(self.table.selected_models() or self.table.visible_models())

    def _on_use_clicked(self, *_: object) -> None:
        model = self.table.current_model()
        if model:
            self.model_chosen.emit(model)
            self.close()

    def _on_model_started(self, model: str, index: int, count: int) -> None:
        self.table.set_measuring(model)
        self.status_label.setText(f"Measuring {model} ({index + 1} of {count})\u2026")

    def _on_model_measured(self, measurement: object) -> None:
        self.table.set_measurement(measurement)
        self._advance()

    def _on_model_failed(self, model: str, message: str) -> None:
        self.table.set_failed(model, message)
        self._failed.append(f"{model}: {message}")
        self._advance()

    def _on_errored(self, message: str) -> None:
        self._error = message

    def _on_finished(self) -> None:
        done = f"{self._measured_count - len(self._failed)} model(s)"
        if self._cancelling:
            text = f"Measurement stopped; {done} measured before."
            self.table.clear_measurements()  # the row being measured shows what is known
            for measurement in self._remembered()[0]:
                self.table.set_measurement(measurement)
        elif self._error:
            text = f"Measurement stopped: {self._error}"
        else:
            text = f"Measured {done} on {self.device}."
        if self._failed:
            text += " Not measured: " + "; ".join(self._failed)
        self.status_label.setText(text)
        self._update_running(False)

    # ------------------------------------------------------------------ refreshes
    def _advance(self) -> None:
        self._measured_count += 1
        self.progress.setValue(self._measured_count)

    def _update_running(self, running: bool) -> None:
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        self.cancel_button.setEnabled(running)
        for widget in (self.batch_spin, self.crop_spin, self.amp_check, self.finetune_combo):
            widget.setEnabled(not running)
        self._update_buttons()
        self.running_changed.emit(running)

    def _update_buttons(self) -> None:
        running = self.controller.is_running()
        selected = self.table.selected_models()
        self.measure_button.setEnabled(not running and bool(self.table.visible_models()))
        if len(selected) == 1:
            text = f"Measure {selected[0]} on this machine"
        elif selected:
            text = f"Measure {len(selected)} selected on this machine"
        else:
            text = "Measure all shown on this machine"
        self.measure_button.setText(text)
        self.use_button.setEnabled(bool(self.table.current_model()))

    def _update_device_label(self) -> None:
        if self.device.startswith("cuda"):
            self.device_label.setText(
                f"Measured on {self.device}: peak memory is the GPU's while training at the "
                "batch; fits says whether the batch trains, with the largest batch that does.")
        else:
            self.device_label.setText(
                "These are CPU figures: training images/s and latency on this machine's CPU. "
                "Peak memory and the largest batch are measured on a GPU only.")

    def _remembered(self) -> tuple[list, str]:
        """The measurements file's entries for the settings shown (one a model at most), and
        the file's problem ('' when it has none)."""
        from workbench.core.training.tuning.measurement_cache import (
            MeasurementCache,
            MeasurementCacheWarning,
        )
        from workbench.core.training.tuning.model_measurement import measurement_settings

        request = self.request([])
        wanted = []
        for model in self.table.models():
            try:
                wanted.append(measurement_settings(model, request.batch_size,
                                                   request.crop_size, request.amp,
                                                   request.finetune, request.device))
            except (ValueError, RuntimeError):
                continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", MeasurementCacheWarning)
            # One read of the file for every row (this runs on the UI thread).
            found = MeasurementCache(self.cache_path or None).get_many(wanted)
        return ([measurement for measurement in found if measurement is not None],
                str(caught[0].message) if caught else "")

    def _fit_to_screen(self) -> None:
        """Wide enough for every column where the screen allows; never larger than it."""
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        width, height = PREFERRED_SIZE
        if screen is not None:
            width = min(width, screen.width() - 40)
            height = min(height, screen.height() - 60)
        self.resize(width, height)

    def _build_layout(self) -> None:
        settings = QHBoxLayout()
        settings.addWidget(QLabel("Batch", self))
        settings.addWidget(self.batch_spin)
        settings.addWidget(QLabel("Crop", self))
        settings.addWidget(self.crop_spin)
        settings.addWidget(self.amp_check)
        settings.addWidget(QLabel("Fine-tune", self))
        settings.addWidget(self.finetune_combo)
        settings.addStretch(1)
        settings.addWidget(self.measure_button)
        running = QHBoxLayout()
        running.addWidget(self.progress, 1)
        running.addWidget(self.cancel_button)
        buttons = QHBoxLayout()
        buttons.addWidget(self.status_label, 1)
        buttons.addWidget(self.use_button)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.table, 1)
        layout.addLayout(settings)
        layout.addWidget(self.device_label)
        layout.addLayout(running)
        layout.addLayout(buttons)
