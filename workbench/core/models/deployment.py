"""Export a trained model in one of the deployable formats, measure it, and report.

``export_and_measure`` writes the file (TorchScript, ONNX float32, ONNX INT8 or ONNX float16),
measures it on this machine against the float32 model it came from
(:mod:`workbench.core.models.export_measurement`) and records the figures in
``export_report.json`` beside the file. An INT8 file whose validation accuracy falls more than
``INT8_MAX_DROP`` below float32's (one image, on fewer than 100), or a float16 file whose
logits stray past ``FLOAT16_TOLERANCE``, is kept but marked "not verified" with its figures,
never passed off as verified.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from workbench.core.data.transforms import normalization_for
from workbench.core.models.checkpoint_format import CheckpointError, load_model_file
from workbench.core.models.export import (
    ExportResult,
    PreprocessingClassifier,
    export_torchscript,
)
from workbench.core.models.export_files import ExportError
from workbench.core.models.export_formats import EXPORT_FORMATS
from workbench.core.models.export_measurement import (
    EvaluationImages,
    EvaluationUnavailable,
    ExportFigures,
    Runner,
    evaluation_images,
    image_logits,
    measure_speed,
    onnx_runner,
    speed_inputs,
    torchscript_runner,
)
from workbench.core.models.export_variants import convert_float16, quantize_int8
from workbench.core.models.onnx_export import export_onnx
from workbench.core.runs.atomic_io import atomic_write_text
from workbench.core.runs.config import TrainConfig

REPORT_FILE = "export_report.json"
INT8_MAX_DROP = 0.01  # one point of validation accuracy, or one image on fewer than 100
FLOAT16_TOLERANCE = 0.05  # max |logit difference| against float32
CALIBRATION_IMAGES = 300

Progress = Callable[[str], None]


@dataclass(frozen=True)
class DeploymentResult:
    """The written file, its figures, and where the report is.

    ``verdict`` is the one sentence that says whether the file may be trusted (VERIFIED or
    NOT VERIFIED, and why); everything else is detail below it.
    """

    path: str
    figures: ExportFigures
    report_path: str
    evaluation: str  # which images the figures come from, or why accuracy was not measured
    verification: str  # how the float32 export was checked against the eager model

    @property
    def verdict(self) -> str:
        return self.figures.verdict

    def lines(self) -> list[str]:
        """The verdict first, then the details: what was written, how it was made and
        checked, the figures and where they were measured."""
        return [self.verdict, f"  file: {self.path}", f"  how: {self.verification}",
                f"  figures: {self.figures.summary()}",
                f"  measured on {self.evaluation}; figures written to {self.report_path}"]


def export_and_measure(model_file: str | Path, out_path: str | Path, export_format: str,
                       on_progress: Progress | None = None,
                       calibration_crops: np.ndarray | None = None) -> DeploymentResult:
    """Export ``model_file`` as ``export_format`` to ``out_path``, measure it, report it.

    Args:
        calibration_crops: INT8 only: uint8 crops to calibrate on instead of the run's own
            training images (for tests and for folders moved since training).

    Raises:
        ExportError: the model file cannot be read, the format is unknown, or the export or
            its verification against the eager model failed (nothing is written then).
    """
    if export_format not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format '{export_format}' (choose from "
                          f"{', '.join(EXPORT_FORMATS)})")
    say = on_progress or (lambda _text: None)
    try:
        model, class_names, config = load_model_file(model_file)
    except CheckpointError as exc:
        raise ExportError(f"cannot export: {exc}") from exc
    path = Path(out_path)
    preprocessing = _preprocessing_of(config)
    say("reading the validation images")
    images, evaluation = _evaluation(config, class_names, preprocessing, "val")
    eager = _float32_runner(model, config)
    with tempfile.TemporaryDirectory(prefix="workbench-export-") as folder:
        float_onnx = Path(folder) / "float32.onnx"
        say(f"exporting {EXPORT_FORMATS[export_format]}")
        if export_format == "torchscript":
            exported = export_torchscript(model, class_names, config, path)
        elif export_format == "onnx":
            exported = export_onnx(model, class_names, config, path)
        else:
            exported = export_onnx(model, class_names, config, float_onnx)
            if export_format == "onnx-int8":
                if calibration_crops is None:
                    say("reading calibration images from the training split")
                    calibration_crops = _calibration_crops(config, class_names, preprocessing)
                quantize_int8(float_onnx, path, calibration_crops)
            else:
                convert_float16(float_onnx, path)
        float_size = _float32_size(export_format, path, float_onnx)
        say("measuring accuracy and speed")
        runner = torchscript_runner(path) if export_format == "torchscript" else onnx_runner(path)
        figures = _figures(export_format, path, runner, images, eager, float_size, config,
                           exported)
    verification = _verification_text(exported, export_format)
    report = _write_report(path, figures, evaluation, verification)
    return DeploymentResult(str(path), figures, str(report), evaluation, verification)


def _verification_text(exported: ExportResult, export_format: str) -> str:
    """How the file was made and checked: a detail under the verdict, never a verdict."""
    if export_format in ("onnx-int8", "onnx-fp16"):
        return f"{exported.verification} (the float32 file this one was made from)"
    return exported.verification


def _preprocessing_of(config: TrainConfig) -> dict:
    return {"model": config.model, "crop_mode": config.crop_mode,
            "resize_size": config.resize_size, "interpolation": config.interpolation,
            "crop_size": config.crop_size, "in_channels": config.in_channels}


def _evaluation(config: TrainConfig, class_names: list[str], preprocessing: dict, split: str,
                limit: int | None = None) -> tuple[EvaluationImages | None, str]:
    try:
        images = evaluation_images(config.data_root, class_names, preprocessing, split,
                                   config.val_fraction, config.seed, limit,
                                   cache_dir=config.cache_dir, exclude_file=config.exclude_file)
    except EvaluationUnavailable as exc:
        return None, f"accuracy not measured: {exc}"
    return images, images.description


def _calibration_crops(config: TrainConfig, class_names: list[str], preprocessing: dict
                       ) -> np.ndarray:
    images, reason = _evaluation(config, class_names, preprocessing, "train", CALIBRATION_IMAGES)
    if images is None:
        raise ExportError(f"INT8 export needs calibration images from the training split; "
                          f"{reason.removeprefix('accuracy not measured: ')}")
    return images.all_crops()


def _float32_runner(model: torch.nn.Module, config: TrainConfig) -> Runner:
    """The eager float32 model behind its preprocessing: what each export is held against."""
    mean, std = normalization_for(config)
    eager = PreprocessingClassifier(model.cpu(), mean, std).eval()

    def run(crops: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return eager(torch.from_numpy(crops)).numpy()

    return run


def _float32_size(export_format: str, path: Path, float_onnx: Path) -> int | None:
    if export_format in ("onnx-int8", "onnx-fp16"):
        return float_onnx.stat().st_size
    return path.stat().st_size


def _figures(export_format: str, path: Path, runner: Runner, images: EvaluationImages | None,
             eager: Runner, float_size: int | None,
             config: TrainConfig, exported: ExportResult) -> ExportFigures:
    example = np.zeros((1, config.in_channels, config.crop_size, config.crop_size), np.uint8)
    speed = measure_speed(runner, *speed_inputs(images, example))
    runtime = "LibTorch (torch.jit), CPU" if export_format == "torchscript" \
        else "onnxruntime, CPU"
    agreement = accuracy = float_accuracy = diff = None
    count = 0
    labels = None
    if images is not None:
        try:  # one decode of each chunk for both models
            (logits, reference_logits), labels = image_logits((runner, eager), images)
        except EvaluationUnavailable:
            labels = None
    if labels is not None:
        predicted, expected = logits.argmax(1), reference_logits.argmax(1)
        agreement = float((predicted == expected).mean())
        accuracy = float((predicted == labels).mean())
        float_accuracy = float((expected == labels).mean())
        diff = float(np.abs(logits - reference_logits).max())
        count = len(labels)
    verified, verdict = _verdict(export_format, accuracy, float_accuracy, diff, exported,
                                 count)
    return ExportFigures(
        export_format=export_format, path=str(path), runtime=runtime,
        size_bytes=path.stat().st_size, float32_size_bytes=float_size,
        images=count, top1_agreement=agreement,
        val_accuracy=accuracy, float32_val_accuracy=float_accuracy,
        max_abs_logit_diff=diff, latency_ms_median=speed.latency_ms_median,
        latency_ms_p95=speed.latency_ms_p95, images_per_second=speed.images_per_second,
        verified=verified, verdict=verdict)


def int8_allowed_drop(images: int) -> tuple[float, str]:
    """How far an INT8 file's validation accuracy may fall below float32's, and how the
    verdict says it: one point; on fewer than 100 images one point is less than one image, so
    there one image may change its answer (a rule of one point would call one flipped image
    of 60 a failure, and which one flips varies with the machine's threads)."""
    if 0 < images < 100:
        return 1 / images, f"1 image of {images}"
    return INT8_MAX_DROP, f"{100 * INT8_MAX_DROP:.0f} point"


def _verdict(export_format: str, accuracy: float | None, float_accuracy: float | None,
             diff: float | None, exported: ExportResult | None = None,
             images: int = 0) -> tuple[bool, str]:
    """Whether the file may be called verified, and the one sentence saying why; ``images``:
    how many validation images the accuracies were measured on."""
    if export_format in ("torchscript", "onnx"):
        # Both were compared with the eager model before they were written (export refuses
        # a file that differs), so they are verified whether or not images were at hand.
        check = None if exported is None else exported.check
        if check is None:
            return True, "VERIFIED: reproduces the trained model"
        return True, (f"VERIFIED: reproduces the trained model (max |difference| "
                      f"{check.max_abs_diff:.1e} within {check.tolerance_text}; "
                      f"{check.classes_text})")
    if accuracy is None or float_accuracy is None or diff is None:
        return False, ("NOT VERIFIED: no validation images to measure its accuracy against "
                       "float32")
    if export_format == "onnx-int8":
        drop = float_accuracy - accuracy
        allowed, allowed_text = int8_allowed_drop(images)
        if drop > allowed + 1e-9:  # exactly the allowed drop passes
            return False, (f"NOT VERIFIED: validation accuracy {accuracy:.3f} is "
                           f"{100 * drop:.1f} points below float32's {float_accuracy:.3f} "
                           f"(at most {allowed_text} allowed); kept for inspection")
        return True, (f"VERIFIED: validation accuracy {accuracy:.3f} within {allowed_text} of "
                      f"float32's {float_accuracy:.3f}")
    if diff > FLOAT16_TOLERANCE:
        return False, (f"NOT VERIFIED: logits differ from float32 by up to {diff:.3g} "
                       f"(at most {FLOAT16_TOLERANCE:g} allowed)")
    return True, (f"VERIFIED: logits within {FLOAT16_TOLERANCE:g} of float32 (max |difference| "
                  f"{diff:.3g})")


def _write_report(path: Path, figures: ExportFigures, evaluation: str, verification: str
                  ) -> Path:
    """Add (or replace) this file's row in the folder's ``export_report.json``."""
    report_path = path.with_name(REPORT_FILE)
    exports: dict = {}
    if report_path.is_file():
        try:
            exports = json.loads(report_path.read_text(encoding="utf-8")).get("exports", {})
        except (OSError, ValueError, AttributeError):
            exports = {}
    exports[path.name] = {**figures.to_dict(), "evaluation": evaluation,
                          "verification": verification}
    atomic_write_text(report_path, json.dumps({"format": "workbench-export-report",
                                               "version": 1, "exports": exports}, indent=2))
    return report_path
