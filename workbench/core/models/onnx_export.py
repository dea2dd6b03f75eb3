"""Export a trained model to ONNX with ``torch.onnx.export(..., dynamo=True)``, verified.

The graph takes uint8 crops ``[N, C, H, W]`` (0..255, any batch size) and does the rest of
the preprocessing itself (to float, /255, normalise), so a caller in C++ or any onnxruntime
binding only resizes and crops. Class names and the preprocessing are in the model's
metadata (``class_names``, ``preprocessing``, both JSON). Before the file replaces the target
it is run by onnxruntime in a fresh Python process and compared with the eager model; that is
the one check it reports (``ExportResult.max_abs_diff`` is None: nothing ran it here).
``load_onnx_export`` loads such a file to classify with, as ``workbench predict`` does.

onnx, onnxscript and onnxruntime are the optional extra ``workbench[onnx]``; without them the
export says what to install.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

import workbench
from workbench.core.data.transforms import normalization_for
from workbench.core.models.checkpoint_format import CheckpointError, load_model_file
from workbench.core.models.export import ExportedModel, ExportResult
from workbench.core.models.export_files import (
    ExportError,
    FreshProcessVerifier,
    cpu_inference_copy,
    fresh_process_report,
    publish_export,
    temp_file_beside,
    verify_logits,
)
from workbench.core.runs.config import TrainConfig

OPSET = 18
ONNX_EXPORT_FORMAT = "workbench-onnx"
INPUT_NAME = "images"
OUTPUT_NAME = "logits"

# Runs in a fresh interpreter: proves the file loads and computes the same logits with
# onnxruntime alone, and that its metadata names the classes.
_FRESH_PROCESS_CHECK = """
import json, sys
import numpy as np
import onnxruntime as ort
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
images, expected = np.load(sys.argv[2]), np.load(sys.argv[3])
(logits,) = session.run(None, {session.get_inputs()[0].name: images})
meta = session.get_modelmeta().custom_metadata_map
print(json.dumps({"max_abs_diff": float(np.abs(logits - expected).max()),
                  "classes": {"uint8": logits.argmax(axis=-1).tolist()},
                  "class_names": json.loads(meta["class_names"])}))
"""


class UInt8Classifier(nn.Module):
    """``model`` behind uint8 -> normalised float conversion, for graphs with one input type."""

    def __init__(self, model: nn.Module, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("mean", torch.tensor(list(mean)).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(list(std)).view(1, -1, 1, 1))

    def forward(self, images: Tensor) -> Tensor:
        x = images.to(torch.float32) / 255.0
        return self.model((x - self.mean) / self.std)


def export_onnx(model: nn.Module, class_names: Sequence[str], config: TrainConfig,
                path: str | Path, opset: int = OPSET,
                verifier: FreshProcessVerifier | None = None) -> ExportResult:
    """Export ``model`` with its preprocessing to ONNX at ``path`` and verify the file.

    ``verifier`` runs onnxruntime in its fresh process, shared with other exports; without
    one a fresh process is started for this file alone.

    Raises:
        ExportError: onnx/onnxruntime are missing, the export fails, or the file computes
            other logits than the eager model (beyond the tolerance, which scales with the
            logits) or other top classes (then ``path`` is left as it was).
    """
    _require_onnx_packages()
    started = time.perf_counter()
    path = Path(path)
    mean, std = normalization_for(config)
    wrapper = UInt8Classifier(cpu_inference_copy(model), mean, std).eval()
    generator = torch.Generator().manual_seed(0)
    shape = (3, config.in_channels, config.crop_size, config.crop_size)
    images = torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8)
    with torch.no_grad():
        expected = wrapper(images)
    if expected.shape[-1] != len(class_names):
        raise ExportError(f"the model has {expected.shape[-1]} outputs but "
                          f"{len(class_names)} class names were given")
    temp = temp_file_beside(path)
    try:
        _export_to(wrapper, images, temp, opset)
        _add_metadata(temp, class_names, _preprocessing(config, mean, std, len(class_names),
                                                        opset))
        diff, classes = _fresh_process_diff(temp, images, expected, list(class_names),
                                            verifier)
        check = verify_logits({"uint8": expected}, diff, classes, path,
                              "in onnxruntime in a fresh Python process")
        publish_export(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return ExportResult(str(path), None, diff, list(class_names), config.crop_size,
                        time.perf_counter() - started, method=f"onnx opset {opset}",
                        note="checked with onnxruntime in a fresh Python process", check=check)


def export_model_file_onnx(model_file: str | Path, out_path: str | Path) -> ExportResult:
    """``export_onnx`` of the model in a best-model or checkpoint file.

    Raises:
        ExportError: The model file cannot be read, or the export fails.
    """
    try:
        model, class_names, config = load_model_file(model_file)
    except CheckpointError as exc:
        raise ExportError(f"cannot export: {exc}") from exc
    return export_onnx(model, class_names, config, out_path)


class OnnxClassifier:
    """An ONNX export run by onnxruntime, called like the TorchScript module: uint8 crops
    ``[N, C, H, W]`` in, logits ``[N, classes]`` out (torch tensors)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.input_name = session.get_inputs()[0].name

    def __call__(self, images: Tensor) -> Tensor:
        (logits,) = self.session.run(None, {self.input_name: images.contiguous().numpy()})
        return torch.from_numpy(logits)


def is_onnx_file(path: str | Path) -> bool:
    """Named ``.onnx``, or starting as an ONNX ModelProto does (field 1, ``ir_version``: the
    byte 0x08); TorchScript files and checkpoints are zip archives ('PK')."""
    path = Path(path)
    if path.suffix.lower() == ".onnx":
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(1) == b"\x08"
    except OSError:
        return False


def load_onnx_export(path: str | Path) -> ExportedModel:
    """A workbench ONNX export, ready to classify with onnxruntime on the CPU.

    Raises:
        ExportError: onnxruntime is missing, or the file is missing, damaged, or not a
            workbench export (no class names and preprocessing in its metadata).
    """
    path = Path(path)
    if not path.is_file():
        kind = "a folder, not a file" if path.is_dir() else "missing"
        raise ExportError(f"ONNX model '{path}' is {kind}")
    try:
        import onnxruntime
    except ImportError:
        raise ExportError(f"'{path}' is an ONNX model; running it needs onnxruntime: pip "
                          "install 'workbench[onnx]' (or pip install onnxruntime)") from None
    try:
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own error types for a bad file
        text = str(exc).strip().splitlines()
        raise ExportError(f"'{path}' is not an ONNX model or is damaged "
                          f"({text[0] if text else type(exc).__name__})") from exc
    metadata = session.get_modelmeta().custom_metadata_map
    try:
        class_names = json.loads(metadata["class_names"])
        preprocessing = json.loads(metadata["preprocessing"])
    except (KeyError, ValueError):
        raise ExportError(f"'{path}' is ONNX but not a workbench export (its metadata has no "
                          "readable class_names and preprocessing)") from None
    if not isinstance(preprocessing, dict) or preprocessing.get("format") != ONNX_EXPORT_FORMAT:
        raise ExportError(f"'{path}' is ONNX but not a workbench export")
    return ExportedModel(OnnxClassifier(session), list(class_names), preprocessing)


def _require_onnx_packages() -> None:
    missing = []
    for name in ("onnx", "onnxscript", "onnxruntime"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ExportError(f"ONNX export needs {', '.join(missing)}: "
                          "pip install 'workbench[onnx]' (or pip install onnx onnxscript "
                          "onnxruntime)")


def _export_to(wrapper: nn.Module, images: Tensor, path: Path, opset: int) -> None:
    batch = torch.export.Dim("batch", min=1, max=4096)
    try:
        program = torch.onnx.export(
            wrapper, (images,), dynamo=True, opset_version=opset,
            input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
            dynamic_shapes={"images": {0: batch}}, verbose=False,
        )
        program.save(str(path))
    except Exception as exc:  # the exporter raises many kinds of errors
        text = str(exc).strip().splitlines()
        raise ExportError(f"torch.onnx.export failed: {type(exc).__name__}: "
                          f"{text[0] if text else ''}") from exc


def _add_metadata(path: Path, class_names: Sequence[str], preprocessing: dict) -> None:
    import onnx

    model = onnx.load(str(path))
    for key, value in (("class_names", json.dumps(list(class_names))),
                       ("preprocessing", json.dumps(preprocessing))):
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _preprocessing(config: TrainConfig, mean: Sequence[float], std: Sequence[float],
                   num_classes: int, opset: int) -> dict:
    return {
        "format": ONNX_EXPORT_FORMAT, "version": 1, "model": config.model,
        "num_classes": num_classes, "in_channels": config.in_channels,
        "resize_size": config.resize_size, "interpolation": config.interpolation,
        "crop_size": config.crop_size, "crop_mode": config.crop_mode, "input_layout": "NCHW",
        "input_dtype": "uint8",
        "mean": list(mean), "std": list(std), "normalization": "applied inside the graph",
        "opset": opset, "workbench_version": workbench.__version__,
        "torch_version": torch.__version__,
    }


def _fresh_process_diff(path: Path, images: Tensor, expected: Tensor,
                        class_names: list[str], verifier: FreshProcessVerifier | None = None
                        ) -> tuple[float, dict[str, list[int]]]:
    check = fresh_process_report if verifier is None else verifier.report
    with tempfile.TemporaryDirectory(prefix="workbench-onnx-check-") as folder:
        images_file, expected_file = Path(folder) / "images.npy", Path(folder) / "expected.npy"
        np.save(images_file, images.numpy())
        np.save(expected_file, expected.numpy())
        report = check(
            _FRESH_PROCESS_CHECK, [str(path.resolve()), str(images_file), str(expected_file)],
            folder, "onnxruntime cannot run the export in a fresh process")
    if report.get("class_names") != class_names:
        raise ExportError(f"the ONNX file's metadata names other classes: "
                          f"{report.get('class_names')}")
    return float(report["max_abs_diff"]), dict(report.get("classes", {}))
