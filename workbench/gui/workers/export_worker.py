"""TorchScript or ONNX export from the window, in a process of its own.

The export itself (loading the checkpoint, scripting or tracing, serialising, reloading, and
for ONNX importing onnx and onnxruntime) is C++ work that holds Python's GIL for up to seconds
at a time: run in a pool thread of the window's process it froze the window (593 ms in one
ONNX export, 258 ms in a TorchScript one). The pool thread here only starts
``python -m workbench.gui.workers.export_process`` and waits for its one line of JSON, which
takes no GIL, so the UI thread never waits on the export.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

from PySide6.QtCore import QRunnable, Signal

import workbench
from workbench.gui.workers.pool_tasks import JobSignals

EXPORT_TIMEOUT_S = 1800


class ExportSignals(JobSignals):
    """Signals of one export job; the object lives in the UI thread, so slots run there."""

    exported = Signal(object)
    errored = Signal(str)
    finished = Signal()


def export_in_fresh_process(model_file: str, out_path: str, export_format: str) -> object:
    """Pool thread: run the export in a child process; its ``ExportResult``.

    Raises:
        ExportError: the export failed (its message) or the child process did not report.
    """
    from workbench.core.models.export import ExportResult

    report = _child_report(model_file, out_path, export_format)
    return ExportResult.from_dict(report["result"])


def export_and_measure_in_fresh_process(model_file: str, out_path: str,
                                        export_format: str) -> object:
    """Pool thread: ``export_and_measure`` in a child process; its ``DeploymentResult``.

    Raises:
        ExportError: the export failed (its message) or the child process did not report.
    """
    from workbench.core.models.deployment import DeploymentResult
    from workbench.core.models.export_measurement import ExportFigures

    fields = _child_report(model_file, out_path, export_format, "--measure")["deployment"]
    return DeploymentResult(**{**fields, "figures": ExportFigures(**fields["figures"])})


def _child_report(model_file: str, out_path: str, *arguments: str) -> dict:
    """The child process's JSON line; raises ExportError with its error or its silence."""
    from workbench.core.models.export import ExportError

    if not Path(model_file).is_file():  # said at once, without starting a process
        raise ExportError(f"cannot export: the model file '{model_file}' does not exist")
    # The child imports this same workbench, wherever it was imported from here.
    source = str(Path(workbench.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [source, *filter(None, [os.environ.get("PYTHONPATH")])]))
    command = [sys.executable, "-m", "workbench.gui.workers.export_process", model_file,
               out_path, *arguments]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=EXPORT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportError(f"could not run the export process: {exc}") from exc
    lines = done.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise ExportError(f"the export process ended without a result (exit code "
                          f"{done.returncode}):\n{tail}") from None
    if "error" in report:
        raise ExportError(report["error"])
    return report


class ExportJob(QRunnable):
    """Export ``model_file`` (a best_model.pt) to TorchScript (or ONNX when ``export_format``
    is "onnx") at ``out_path`` and verify it, in a child process.

    Emits ``exported(ExportResult)`` or ``errored(message)``, then ``finished``. Connect to
    ``job.signals`` before handing the job to a pool; they are delivered on the GUI thread,
    where the signals object deletes itself after ``finished`` (see ``JobSignals``).
    """

    def __init__(self, model_file: str | Path, out_path: str | Path,
                 export_format: str = "torchscript") -> None:
        super().__init__()
        self.model_file = str(model_file)
        self.out_path = str(out_path)
        self.export_format = export_format
        self.signals = ExportSignals.for_a_pool_job()

    def run(self) -> None:
        """Runs in a pool thread."""
        try:
            from workbench.core.models.export_files import ExportError

            try:
                result = export_in_fresh_process(self.model_file, self.out_path,
                                                 self.export_format)
            except ExportError as exc:
                self.signals.errored.emit(str(exc))
            else:
                self.signals.exported.emit(result)
        except BaseException as exc:  # a job reports everything and never raises
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.signals.errored.emit(f"Export failed unexpectedly: {detail}")
        finally:
            self.signals.finished.emit()
            self.signals.release()
