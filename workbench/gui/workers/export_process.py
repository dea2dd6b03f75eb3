"""The export job's child process: ``python -m workbench.gui.workers.export_process MODEL_FILE
OUT_PATH FORMAT [--measure]`` exports and verifies, then prints one JSON line, ``{"result":
ExportResult fields}`` (with ``--measure``: ``{"deployment": DeploymentResult fields}``, the
file also measured against float32) or ``{"error": message}``. It imports core only, never
Qt."""

from __future__ import annotations

import dataclasses
import json
import sys
import traceback


def export(model_file: str, out_path: str, export_format: str) -> dict[str, object]:
    """The export's outcome as a JSON-ready dict."""
    from workbench.core.models.export import ExportError, export_model_file

    try:
        if export_format == "onnx":
            from workbench.core.models.onnx_export import export_model_file_onnx

            result = export_model_file_onnx(model_file, out_path)
        else:
            result = export_model_file(model_file, out_path)
    except ExportError as exc:
        return {"error": str(exc)}
    return {"result": dataclasses.asdict(result)}


def export_measured(model_file: str, out_path: str, export_format: str) -> dict[str, object]:
    """``export_and_measure``'s outcome as a JSON-ready dict."""
    from workbench.core.models.deployment import export_and_measure
    from workbench.core.models.export_files import ExportError

    try:
        result = export_and_measure(model_file, out_path, export_format)
    except ExportError as exc:
        return {"error": str(exc)}
    return {"deployment": dataclasses.asdict(result)}


def main(argv: list[str]) -> int:
    """Export ``MODEL_FILE OUT_PATH FORMAT [--measure]``; prints the outcome; 0 unless the
    arguments are bad."""
    from workbench.core.models.export_formats import EXPORT_FORMATS

    measure = argv[3:] == ["--measure"]
    formats = EXPORT_FORMATS if measure else ("torchscript", "onnx")
    if len(argv) != 3 + measure or argv[2] not in formats:
        print("usage: python -m workbench.gui.workers.export_process MODEL_FILE OUT_PATH "
              "torchscript|onnx, or MODEL_FILE OUT_PATH FORMAT --measure", file=sys.stderr)
        return 2
    try:
        outcome = export_measured(*argv[:3]) if measure else export(*argv)
    except BaseException as exc:  # reported as the job's error, never a bare traceback
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        outcome = {"error": f"Export failed unexpectedly: {detail}"}
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
