"""The deployable formats by name, with the words that describe them and their file names.

Kept free of torch and onnx so that the command line's help can list them without importing
either.
"""

from __future__ import annotations

from workbench.core.runs.run_folder import EXPORT_FILE, ONNX_FILE

EXPORT_FORMATS = {
    "torchscript": "TorchScript float32 (LibTorch, C++ or Python)",
    "onnx": "ONNX float32 (onnxruntime, any language)",
    "onnx-int8": "ONNX INT8, static quantization (about 4x smaller; CPUs)",
    "onnx-fp16": "ONNX float16 (half the size; for GPU runtimes)",
}
DEFAULT_FILE_NAMES = {"torchscript": EXPORT_FILE, "onnx": ONNX_FILE,
                      "onnx-int8": "model_int8.onnx", "onnx-fp16": "model_fp16.onnx"}
