"""The window's model picker: the *Compare…* button beside the model choice opens
:class:`~workbench.gui.panels.model_picker_dialog.ModelPickerDialog` on the form's settings and
device, and its "Use this model" sets the form's model (the form then fills that model's
defaults in the fields not edited).

Measuring uses the device, so the picker measures nothing while a run trains, and the window
stops a measurement when it closes. The dialog is created the first time it is opened: its
table reads torchvision's figures.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt

from workbench.gui.workers.pool_tasks import LatestRequestRunner

if TYPE_CHECKING:
    from workbench.gui.panels.model_picker_dialog import ModelPickerDialog

COMPARE_TEXT = "Compare\u2026"
LOADING_TEXT = "Loading\u2026"


def catalogue_loaded() -> bool:
    """Whether torchvision's models (the figures the picker's table reads) are imported."""
    return "torchvision.models" in sys.modules


def import_catalogue() -> bool:
    """Import torchvision's models (seconds the first time; run in the pool)."""
    import torchvision.models  # noqa: F401

    return True


TRAINING_REASON = ("A run is training on the device; measure models when it has ended (the "
                   "figures would be the run's and the measurement's together).")


class ModelPickerAction(QObject):
    """Owns the picker dialog, wired to ``window``'s form, log and training state."""

    def __init__(self, window: Any) -> None:
        """``window``: the MainWindow (not imported here: it imports this module)."""
        super().__init__(window)
        self._window = window
        self.dialog: ModelPickerDialog | None = None
        window.config_form.compare_models_button.clicked.connect(self._on_open_requested)
        # torchvision's model figures take seconds to import the first time: in the pool.
        self._loader = LatestRequestRunner(self)
        self._loader.result_ready.connect(self._on_catalogue_loaded)
        self._loader.failed.connect(self._on_catalogue_failed)

    def open(self) -> ModelPickerDialog:
        """Show the picker on the form's settings and device."""
        from workbench.core.devices.selection import DeviceError, resolve_device

        window = self._window
        dialog = self._dialog()
        config = window.config_form.config()
        try:
            device = resolve_device(config.device)
        except DeviceError:
            device = "cpu"  # the form already shows why; the CPU is always there
        dialog.show_for(config, device)
        dialog.show()
        if window.controller.is_running():
            dialog.measure_button.setEnabled(False)
            dialog.status_label.setText(TRAINING_REASON)
        return dialog

    def cancel(self) -> None:
        """Stop a measurement and wait for its thread (the window is closing)."""
        if self.dialog is not None:
            self.dialog.stop_and_wait()

    def _dialog(self) -> ModelPickerDialog:
        if self.dialog is None:
            from workbench.gui.panels.model_picker_dialog import ModelPickerDialog

            self.dialog = ModelPickerDialog(self._window)
            # The window waits: a run started meanwhile would compete for the device.
            self.dialog.setWindowModality(Qt.WindowModality.WindowModal)
            self.dialog.model_chosen.connect(self._on_model_chosen)
        return self.dialog

    def _on_open_requested(self) -> None:
        if self.dialog is not None or catalogue_loaded():
            self.open()
            return
        button = self._window.config_form.compare_models_button
        button.setEnabled(False)
        button.setText(LOADING_TEXT)
        self._loader.submit(import_catalogue)

    def _on_catalogue_loaded(self, _module: object) -> None:
        self._restore_button()
        self.open()

    def _on_catalogue_failed(self, message: str) -> None:
        self._restore_button()
        self._window.log_panel.append_text("error", f"The model picker cannot open: {message}")

    def _restore_button(self) -> None:
        button = self._window.config_form.compare_models_button
        button.setText(COMPARE_TEXT)
        button.setEnabled(True)

    def _on_model_chosen(self, model: str) -> None:
        form = self._window.config_form
        form.edit_field("model", model)
        self._window.log_panel.append_text(
            "info", f"Model set to {model} from the model picker; its defaults were applied "
                    "to the settings not edited.")
