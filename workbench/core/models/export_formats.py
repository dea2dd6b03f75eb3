"""The deployable formats by name, with the words that describe them and their file names.

Kept free of torch and onnx so that the command line's help can list them without importing
either.
"""

from __future__ import annotations

from pathlib import Path

from workbench.core.runs.run_folder import BEST_MODEL, EXPORT_FILE, OLD_EXPORT_FILES, ONNX_FILE

EXPORT_FORMATS = {
    "torchscript": "TorchScript float32 (LibTorch, C++ or Python)",
    "onnx": "ONNX float32 (onnxruntime, any language)",
    "onnx-int8": "ONNX INT8, static quantization (about 4x smaller; CPUs)",
    "onnx-fp16": "ONNX float16 (half the size; for GPU runtimes)",
}
DEFAULT_FILE_NAMES = {"torchscript": EXPORT_FILE, "onnx": ONNX_FILE,
                      "onnx-int8": "model_int8.onnx", "onnx-fp16": "model_fp16.onnx"}

# What a run folder stands for when a model is asked of it, best first: its best checkpoint,
# then its float32 exports (by today's names, then the names they had before).
_FOLDER_MODELS = (BEST_MODEL, EXPORT_FILE, *OLD_EXPORT_FILES, ONNX_FILE)


def model_file_in_run_folder(folder: str | Path, exports_too: bool = True) -> Path:
    """The model file a run folder stands for: its ``best_model.pt`` or, with ``exports_too``
    (to predict with), its TorchScript or ONNX export where the checkpoint is gone.

    Raises:
        FileNotFoundError: the folder holds none of them (the message names the folder and
            what was looked for).
    """
    folder = Path(folder)
    names = _FOLDER_MODELS if exports_too else (BEST_MODEL,)
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"'{folder}' is a folder with no {' or '.join(names)}; give a run "
                            "folder or a model file")
