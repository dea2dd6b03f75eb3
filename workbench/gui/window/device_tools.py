"""The Settings tab's device tools wired to the window: the device choice (and its line in the
status bar), the largest-batch search, the speed probe and the memory check. Each applies its
result to the form and says so in the log.

Kept apart from ``main_window`` so the window only creates this object and asks it to
``check_memory`` or ``cancel``; both measure on the device a run or the learning-rate finder
is about to use.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject

from workbench.core.runs.config import TrainConfig
from workbench.gui.workers.long_lived_objects import freeze_long_lived_objects

DEFAULT_CLASS_COUNT = 10  # before a folder is scanned, for the memory check


class DeviceTools(QObject):
    """Connects ``window.device_panel`` to the window's form, log and status bar."""

    def __init__(self, window: Any) -> None:
        """``window``: the MainWindow (not imported here: it imports this module)."""
        super().__init__(window)
        self._window = window
        panel = window.device_panel
        panel.device_changed.connect(self._on_device_changed)
        panel.devices_detected.connect(self._on_devices_detected)
        panel.batch_search_requested.connect(self._on_batch_search_requested)
        panel.batch_size_found.connect(self._on_batch_size_found)
        panel.batch_search_failed.connect(self._on_batch_search_failed)
        panel.batch_search_not_needed.connect(self._on_batch_search_not_needed)
        panel.measurements.probe_requested.connect(self._on_speed_probe_requested)
        panel.measurements.probe_finished.connect(self._on_speed_probe_finished)

    def check_memory(self, config: TrainConfig) -> None:
        """Refresh the line saying whether ``config``'s batch fits on the device."""
        self._window.device_panel.measurements.check_memory(config, self._class_count())

    def cancel(self) -> None:
        """Stop the batch search and the speed probe: something else needs the device."""
        self._window.device_panel.cancel_batch_search()
        self._window.device_panel.measurements.cancel()

    def _class_count(self) -> int:
        dataset_panel = self._window.dataset_panel
        scan = dataset_panel.scan() if dataset_panel is not None else None
        return len(scan.class_names) if scan is not None else DEFAULT_CLASS_COUNT

    def _on_device_changed(self, name: str) -> None:
        self._window.config_form.update_config(device=name)
        self._window.device_status.setText(self._window.device_panel.choice_text())

    def _on_devices_detected(self, choices: object) -> None:
        self._window.config_form.set_cuda_available(
            any(name.startswith("cuda") for name, _ in choices.devices))
        self._window.device_status.setText(self._window.device_panel.choice_text())
        freeze_long_lived_objects()  # torch is loaded now: see long_lived_objects

    def _on_batch_search_requested(self) -> None:
        self._window.device_panel.start_batch_search(self._window.config_form.config(),
                                                     self._class_count())

    def _on_speed_probe_requested(self) -> None:
        self._window.device_panel.measurements.start_probe(self._window.config_form.config())

    def _on_speed_probe_finished(self, result: object) -> None:
        self._window.config_form.update_config(**result.config_changes())
        self._window.log_panel.append_text("info", f"Speed probe: {result.describe()} Applied.")

    def _on_batch_size_found(self, result: object) -> None:
        self._window.config_form.update_config(batch_size=result.batch_size)
        self._window.log_panel.append_text("info", result.describe())

    def _on_batch_search_failed(self, message: str) -> None:
        self._window.log_panel.append_text("warning", f"Batch size search: {message}")

    def _on_batch_search_not_needed(self, message: str) -> None:
        self._window.log_panel.append_text("info", message)
