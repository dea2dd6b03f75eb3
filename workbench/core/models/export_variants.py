"""Smaller ONNX files made from a verified float32 export: INT8 and float16.

INT8 is onnxruntime's static quantization (QDQ format, per-channel int8 weights, uint8
activations), its activation ranges calibrated on images of the run's own training split cut
by the validation preprocessing, as the deployed model will see them. float16 is onnxruntime's
own converter (``onnxruntime.transformers.float16``) with the uint8 input and float32 logits
kept, for GPU runtimes: CPUs mostly compute it through casts.

Both keep the float32 file's metadata (class names, preprocessing) and add the variant, so
the onnxruntime instructions in the README work for every file unchanged.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from workbench.core.models.export_files import ExportError, publish_export, temp_file_beside

CALIBRATION_BATCH = 16


def quantize_int8(float_path: str | Path, out_path: str | Path,
                  calibration_crops: np.ndarray) -> None:
    """Write an INT8 (QDQ) copy of the float32 ONNX file at ``float_path`` to ``out_path``.

    Args:
        calibration_crops: uint8 ``[N, C, H, W]`` crops the activation ranges are taken from.

    Raises:
        ExportError: quantization failed (``out_path`` is left as it was).
    """
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if len(calibration_crops) == 0:
        raise ExportError("INT8 export needs calibration images; none could be read")

    class _Batches(CalibrationDataReader):
        def __init__(self) -> None:
            self._batches: Iterator[np.ndarray] = iter(
                calibration_crops[start:start + CALIBRATION_BATCH]
                for start in range(0, len(calibration_crops), CALIBRATION_BATCH))

        def get_next(self) -> dict[str, np.ndarray] | None:
            batch = next(self._batches, None)
            return None if batch is None else {"images": np.ascontiguousarray(batch)}

    out = Path(out_path)
    temp = temp_file_beside(out)
    with tempfile.TemporaryDirectory(prefix="workbench-int8-") as folder:
        prepared = Path(folder) / "prepared.onnx"
        try:
            quant_pre_process(str(float_path), str(prepared))
            quantize_static(str(prepared), str(temp), _Batches(),
                            quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
            _copy_metadata(Path(float_path), temp, "int8", len(calibration_crops))
            publish_export(temp, out)
        except ExportError:
            raise
        except Exception as exc:  # onnxruntime's tools raise many kinds of errors
            raise ExportError(f"INT8 quantization of '{float_path}' failed: "
                              f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
        finally:
            temp.unlink(missing_ok=True)


def convert_float16(float_path: str | Path, out_path: str | Path) -> None:
    """Write a float16 copy of the float32 ONNX file (input and logits keep their types).

    Raises:
        ExportError: conversion failed (``out_path`` is left as it was).
    """
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    out = Path(out_path)
    temp = temp_file_beside(out)
    try:
        model = convert_float_to_float16(onnx.load(str(float_path)), keep_io_types=True)
        onnx.save(model, str(temp))
        _copy_metadata(Path(float_path), temp, "float16", None)
        publish_export(temp, out)
    except ExportError:
        raise
    except Exception as exc:
        raise ExportError(f"float16 conversion of '{float_path}' failed: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
    finally:
        temp.unlink(missing_ok=True)


def _copy_metadata(source: Path, target: Path, variant: str, calibration: int | None) -> None:
    """The source's metadata on ``target``, its preprocessing saying which variant it is."""
    import onnx

    metadata = {entry.key: entry.value for entry in onnx.load(str(source)).metadata_props}
    preprocessing = json.loads(metadata.get("preprocessing", "{}"))
    preprocessing["variant"] = variant
    if calibration is not None:
        preprocessing["calibration_images"] = calibration
    metadata["preprocessing"] = json.dumps(preprocessing)
    model = onnx.load(str(target))
    del model.metadata_props[:]
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(target))
