"""TorchScript or ONNX export in the thread pool: it verifies the file in a subprocess, which
takes seconds.

The job imports the export module (and so torch) only when it runs, never at import time.
"""

from __future__ import annotations

import traceback
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, Signal


class ExportSignals(QObject):
    """Signals of one export job; the object lives in the UI thread, so slots run there."""

    exported = Signal(object)
    errored = Signal(str)
    finished = Signal()


class ExportJob(QRunnable):
    """Export ``model_file`` (a best_model.pt) to TorchScript (or ONNX when ``export_format``
    is "onnx") at ``out_path`` and verify it.

    Emits ``exported(ExportResult)`` or ``errored(message)``, then ``finished``. Connect to
    ``job.signals`` before handing the job to a pool, and keep a reference to ``job.signals``
    until ``finished`` arrives (the pool deletes the runnable itself).
    """

    def __init__(self, model_file: str | Path, out_path: str | Path,
                 export_format: str = "torchscript") -> None:
        super().__init__()
        self.model_file = str(model_file)
        self.out_path = str(out_path)
        self.export_format = export_format
        self.signals = ExportSignals()

    def run(self) -> None:
        """Runs in a pool thread."""
        try:
            from workbench.core.models.export import ExportError, export_model_file

            try:
                if self.export_format == "onnx":
                    from workbench.core.models.onnx_export import export_model_file_onnx

                    result = export_model_file_onnx(self.model_file, self.out_path)
                else:
                    result = export_model_file(self.model_file, self.out_path)
            except ExportError as exc:
                self.signals.errored.emit(str(exc))
            else:
                self.signals.exported.emit(result)
        except BaseException as exc:  # a job reports everything and never raises
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.signals.errored.emit(f"Export failed unexpectedly: {detail}")
        finally:
            self.signals.finished.emit()
