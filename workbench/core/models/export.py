"""Export a trained model as a verified TorchScript file, and predict with such a file.

The exported module takes the crops a user's own code produces, as uint8 ``[N, C, H, W]``
(0..255) or float (0..1), and normalises them itself, so the only preprocessing left to a
caller is resize and crop, described in the file's ``preprocessing.json``. Every export is
reloaded and compared with the eager model, here and in a fresh Python process that imports
only torch, before it replaces the target file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

import workbench
from workbench.core.data.transforms import normalization_for
from workbench.core.models.checkpoint_format import CheckpointError, load_model_file
from workbench.core.models.export_files import (
    ExportError,
    FreshProcessVerifier,
    LogitCheck,
    cpu_inference_copy,
    fresh_process_report,
    publish_export,
    temp_file_beside,
    verify_logits,
)
from workbench.core.runs.config import TrainConfig

EXPORT_FORMAT = "workbench-export"
EXPORT_VERSION = 1
_CLASS_NAMES_FILE = "class_names.json"
_PREPROCESSING_FILE = "preprocessing.json"
_JIT_DEPRECATION = r"`torch\.jit\.\w+` is deprecated"

# Runs in a fresh interpreter: proves the file loads and computes the same logits with torch alone.
_FRESH_PROCESS_CHECK = """
import json, sys, warnings
import torch
warnings.filterwarnings("ignore", message=r"`torch\\.jit\\.\\w+` is deprecated")
module = torch.jit.load(sys.argv[1], map_location="cpu").eval()
batch = torch.load(sys.argv[2], map_location="cpu", weights_only=True)
diff, classes = 0.0, {}
with torch.no_grad():
    for name, images in batch["inputs"].items():
        logits = module(images)
        diff = max(diff, (logits - batch["expected"][name]).abs().max().item())
        classes[name] = logits.argmax(dim=-1).tolist()
print(json.dumps({"max_abs_diff": diff, "classes": classes}))
"""


class PreprocessingClassifier(nn.Module):
    """``model`` behind the input conversion and normalisation it was trained with.

    Takes uint8 images (0..255) or float images (0..1), ``[N, C, H, W]`` or one ``[C, H, W]``,
    already resized and cropped, and returns logits ``[N, num_classes]``.
    """

    def __init__(self, model: nn.Module, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        self.model = model
        self.in_channels = len(mean)
        self.register_buffer("mean", torch.tensor(list(mean)).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(list(std)).view(1, -1, 1, 1))

    def forward(self, images: Tensor) -> Tensor:
        if images.dim() == 3:
            images = images.unsqueeze(0)
        if images.dim() != 4 or images.size(1) != self.in_channels:
            raise ValueError("expected images shaped [N, C, H, W] with the model's channel count")
        if images.dtype == torch.uint8:
            x = images.to(self.mean.dtype) / 255.0
        else:
            x = images.to(self.mean.dtype)
        return self.model((x - self.mean) / self.std)


@dataclass
class ExportResult:
    """A written and verified export; diffs are max |logit difference| against the eager model.

    ``max_abs_diff`` is measured on the file reloaded in this process (None when it was not:
    an ONNX export is checked only by onnxruntime in a fresh process),
    ``subprocess_max_abs_diff`` in a fresh Python process. ``check`` is the fresh process's
    figures against the tolerance (which scales with the logits) and the top classes.
    ``verification`` says them all, each only where it was measured.
    """

    path: str
    max_abs_diff: float | None
    subprocess_max_abs_diff: float
    class_names: list[str]
    input_size: int
    seconds: float
    method: str = "script"
    note: str = ""
    check: LogitCheck | None = field(default=None, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportResult:
        """The result ``dataclasses.asdict`` made a dict of (as a child process reports it)."""
        check = data.get("check")
        return cls(**{**data, "check": LogitCheck(**check) if check else None})

    @property
    def how(self) -> str:
        """The format and how it was made: 'TorchScript, scripted', 'TorchScript, traced (why,
        and what the trace cannot do)' or 'ONNX opset 18'."""
        if self.method == "script":
            return "TorchScript, scripted"
        if self.method == "trace":
            return f"TorchScript, traced ({self.note})"
        if self.method.startswith("onnx opset "):
            return f"ONNX opset {self.method.removeprefix('onnx opset ')}"
        return self.method

    @property
    def verification(self) -> str:
        """How it was made and what was checked, e.g. 'TorchScript, scripted; max |difference|
        from the trained model: 1.2e-06 reloaded here, 1.2e-06 in a fresh process, within
        tolerance 3.5e-03 (1e-4 x the largest |logit|, 35.2); top class agrees on 4 of 4
        images'."""
        checks = [] if self.max_abs_diff is None else [f"{self.max_abs_diff:.2e} reloaded here"]
        fresh = "with onnxruntime in a fresh process" if self.method.startswith("onnx") \
            else "in a fresh process"
        checks.append(f"{self.subprocess_max_abs_diff:.2e} {fresh}")
        text = f"{self.how}; max |difference| from the trained model: {', '.join(checks)}"
        if self.check is not None:
            text += f", within {self.check.tolerance_text}; {self.check.classes_text}"
        return text


@dataclass
class ExportedModel:
    """An export loaded back: the TorchScript module, its class names and preprocessing."""

    module: Any
    class_names: list[str]
    preprocessing: dict[str, Any]


@contextlib.contextmanager
def _quiet_jit_deprecation() -> Iterator[None]:
    # torch.jit.* now warns that TorchScript is deprecated in favour of torch.export. TorchScript
    # is still the one format any torch install loads without workbench, so that notice (and only
    # that one: the test suite must see every other warning) is silenced around the jit calls.
    with warnings.catch_warnings():
        for category in (FutureWarning, DeprecationWarning):
            warnings.filterwarnings("ignore", message=_JIT_DEPRECATION, category=category)
        yield


def export_torchscript(
    model: nn.Module,
    class_names: Sequence[str],
    config: TrainConfig,
    path: str | Path,
    example: Tensor | None = None,
    verifier: FreshProcessVerifier | None = None,
) -> ExportResult:
    """Script ``model`` with its preprocessing, save it to ``path`` and verify the saved file.

    The model is copied to the CPU in eval mode (the caller's model is left as it is). The file
    is written next to ``path``, reloaded here and in a fresh Python process, compared with the
    eager model on uint8 and float batches, and only then moved onto ``path``.

    Args:
        model: The trained classifier (any device).
        class_names: One name per output, stored as ``class_names.json``.
        config: Supplies model name, crop mode and sizes for ``preprocessing.json``.
        path: Target file, conventionally ``.pt``.
        example: A batch ``[N, C, crop, crop]`` (uint8 or 0..1 float) to verify with; random
            images of the crop size when omitted.
        verifier: Checks the file in its fresh process, shared with other exports; without
            one a fresh process is started for this file alone.

    Raises:
        ExportError: Scripting and tracing failed, the model's outputs do not match the class
            names, or a reloaded file differs from the eager model by more than the tolerance
            (``RELATIVE_TOLERANCE`` of the largest |logit|) or predicts other classes.
    """
    start = time.perf_counter()
    path = Path(path)
    mean, std = normalization_for(config)
    wrapper = PreprocessingClassifier(cpu_inference_copy(model), mean, std).eval()
    inputs = _example_inputs(example, config)
    expected = _eager_outputs(wrapper, inputs, len(class_names))
    scripted, method, note = _script_or_trace(wrapper, inputs["uint8"])
    if method == "trace":
        # A trace records the uint8 branch only; float input is not part of its contract.
        inputs.pop("float")
        expected.pop("float")
    preprocessing = _preprocessing_info(config, mean, std, len(class_names), method)
    extra = {_CLASS_NAMES_FILE: json.dumps(list(class_names)),
             _PREPROCESSING_FILE: json.dumps(preprocessing, indent=2)}
    temp = temp_file_beside(path)
    try:
        _save_synced(scripted, temp, extra)
        diff, classes = _reload_diff(temp, inputs, expected, list(class_names))
        verify_logits(expected, diff, classes, path, "after reloading")
        subprocess_diff, classes = _subprocess_diff(temp, inputs, expected, verifier)
        check = verify_logits(expected, subprocess_diff, classes, path,
                              "in a fresh Python process")
        publish_export(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return ExportResult(
        path=str(path), max_abs_diff=diff, subprocess_max_abs_diff=subprocess_diff,
        class_names=list(class_names), input_size=config.crop_size,
        seconds=time.perf_counter() - start, method=method, note=note, check=check,
    )


def _example_inputs(example: Tensor | None, config: TrainConfig) -> dict[str, Tensor]:
    generator = torch.Generator().manual_seed(0)
    shape = (2, config.in_channels, config.crop_size, config.crop_size)
    if example is None:
        example = torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8)
    example = example.detach().cpu()
    if example.dtype == torch.uint8:
        return {"uint8": example, "float": torch.rand(example.shape, generator=generator)}
    floats = example.float()
    return {"uint8": (floats.clamp(0, 1) * 255).round().to(torch.uint8), "float": floats}


def _eager_outputs(wrapper: nn.Module, inputs: Mapping[str, Tensor], num_classes: int
                   ) -> dict[str, Tensor]:
    outputs: dict[str, Tensor] = {}
    with torch.no_grad():
        for name, images in inputs.items():
            try:
                outputs[name] = wrapper(images)
            except (RuntimeError, ValueError) as exc:
                raise ExportError(f"the model cannot run on a {name} batch shaped "
                                  f"{tuple(images.shape)}: {exc}") from exc
    width = outputs["uint8"].shape[-1]
    if width != num_classes:
        raise ExportError(f"the model has {width} outputs but {num_classes} class names were given")
    return outputs


def _script_or_trace(wrapper: nn.Module, example: Tensor) -> tuple[Any, str, str]:
    with _quiet_jit_deprecation():
        try:
            return torch.jit.script(wrapper), "script", ""
        except Exception as script_exc:  # scripting fails on many kinds of Python; try tracing
            failed = f"torch.jit.script failed ({_first_line(script_exc)})"
            try:
                with torch.no_grad():
                    traced = torch.jit.trace(wrapper, example)
            except Exception as trace_exc:
                raise ExportError(f"{failed}, and tracing failed too ({_first_line(trace_exc)})"
                                  ) from trace_exc
            return traced, "trace", (f"{failed}; the trace accepts uint8 input only and "
                                     "keeps the control flow of its example batch")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _preprocessing_info(config: TrainConfig, mean: Sequence[float], std: Sequence[float],
                        num_classes: int, method: str) -> dict[str, Any]:
    return {
        "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
        "model": config.model, "num_classes": num_classes, "in_channels": config.in_channels,
        "resize_size": config.resize_size, "interpolation": config.interpolation,
        "crop_size": config.crop_size, "crop_mode": config.crop_mode, "input_layout": "NCHW",
        "input_dtypes": ["uint8", "float32"] if method == "script" else ["uint8"],
        "input_range": {"uint8": [0, 255], "float32": [0.0, 1.0]},
        "mean": list(mean), "std": list(std), "normalization": "applied inside the module",
        "export_method": method,
        "workbench_version": workbench.__version__, "torch_version": torch.__version__,
    }


def _save_synced(module: Any, path: Path, extra: dict[str, str]) -> None:
    try:
        with _quiet_jit_deprecation():
            torch.jit.save(module, str(path), _extra_files=extra)
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())
    except (OSError, RuntimeError) as exc:  # torch reports a full disk as RuntimeError
        raise ExportError(f"cannot write the export next to '{path}': {exc}") from exc


def _reload_diff(path: Path, inputs: Mapping[str, Tensor], expected: Mapping[str, Tensor],
                 class_names: list[str]) -> tuple[float, dict[str, list[int]]]:
    exported = load_exported(path)
    if exported.class_names != class_names:
        raise ExportError(f"'{path}' reloaded with other class names: {exported.class_names}")
    diff, classes = 0.0, {}
    with torch.no_grad():
        for name, images in inputs.items():
            logits = exported.module(images)
            diff = max(diff, (logits - expected[name]).abs().max().item())
            classes[name] = logits.argmax(dim=-1).tolist()
    return diff, classes


def _subprocess_diff(path: Path, inputs: Mapping[str, Tensor], expected: Mapping[str, Tensor],
                     verifier: FreshProcessVerifier | None = None
                     ) -> tuple[float, dict[str, list[int]]]:
    check = fresh_process_report if verifier is None else verifier.report
    with tempfile.TemporaryDirectory(prefix="workbench-export-check-") as folder:
        batch = Path(folder) / "batch.pt"
        torch.save({"inputs": dict(inputs), "expected": dict(expected)}, batch)
        report = check(_FRESH_PROCESS_CHECK, [str(path.resolve()), str(batch)],
                                      folder, "the export does not load in a fresh Python "
                                      "process")
    return float(report["max_abs_diff"]), dict(report.get("classes", {}))



def load_exported(path: str | Path) -> ExportedModel:
    """Load a workbench TorchScript export on the CPU, in eval mode.

    TorchScript is a program, not data: call this only on a file the user chose to predict or
    verify with. Weights and checkpoints never come through here (see ``safe_load``).

    Raises:
        ExportError: The file is missing, not TorchScript, or not a workbench export.
    """
    path = Path(path)
    if not path.is_file():
        kind = "a folder, not a file" if path.is_dir() else "missing"
        raise ExportError(f"exported model '{path}' is {kind}")
    extra = {_CLASS_NAMES_FILE: "", _PREPROCESSING_FILE: ""}
    try:
        with _quiet_jit_deprecation():
            module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    except Exception as exc:  # torch.jit.load raises RuntimeError, ValueError, KeyError, ...
        raise ExportError(f"'{path}' is not a TorchScript file or is damaged "
                          f"({_first_line(exc)})") from exc
    if not extra[_PREPROCESSING_FILE] or not extra[_CLASS_NAMES_FILE]:
        raise ExportError(f"'{path}' is TorchScript but not a workbench export "
                          f"(it has no {_PREPROCESSING_FILE} / {_CLASS_NAMES_FILE})")
    try:
        class_names = json.loads(extra[_CLASS_NAMES_FILE])
        preprocessing = json.loads(extra[_PREPROCESSING_FILE])
    except (ValueError, UnicodeDecodeError) as exc:
        raise ExportError(f"'{path}' has unreadable export metadata ({exc})") from exc
    if not isinstance(preprocessing, dict) or preprocessing.get("format") != EXPORT_FORMAT:
        raise ExportError(f"'{path}' is TorchScript but not a workbench export")
    version = preprocessing.get("version")
    if not isinstance(version, int) or version > EXPORT_VERSION:
        raise ExportError(f"'{path}' was exported by a newer workbench (format version "
                          f"{version!r}); update workbench to load it")
    return ExportedModel(module=module.eval(), class_names=list(class_names),
                         preprocessing=preprocessing)


def export_model_file(model_file: str | Path, out_path: str | Path) -> ExportResult:
    """Export the model in a training checkpoint or best-model file (see ``load_model_file``).

    Raises:
        ExportError: The model file cannot be read, or the export fails.
    """
    try:
        model, class_names, config = load_model_file(model_file)
    except CheckpointError as exc:
        raise ExportError(f"cannot export: {exc}") from exc
    return export_torchscript(model, class_names, config, out_path)
