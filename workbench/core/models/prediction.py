"""Classify images with a trained model (best_model.pt, a checkpoint), an exported TorchScript
file or an ONNX export, preprocessing them as training did; folders are expanded to their
images. Each image that cannot be read gets its own error; the others are still classified."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from workbench.core.data.class_folders import IMG_EXTENSIONS
from workbench.core.data.image_cache import ImageDecodeError, load_image_uint8
from workbench.core.data.transforms import build_eval_transform, normalization_for
from workbench.core.file_names import shown_name, stored_name
from workbench.core.models.checkpoint_format import CheckpointError, load_model_file
from workbench.core.models.export import (
    ExportedModel,
    ExportError,
    PreprocessingClassifier,
    load_exported,
)
from workbench.core.models.export_formats import model_file_in_run_folder
from workbench.core.models.onnx_export import is_onnx_file, load_onnx_export
from workbench.core.runs.atomic_io import atomic_write_text
from workbench.core.runs.config import TrainConfig

# Images decoded and classified together; bounds memory for long image lists.
_PREDICT_CHUNK = 16


@dataclass
class Prediction:
    """Top classes of one image with their probabilities, or ``error`` when it could not be read."""

    path: str
    top: list[tuple[str, float]] = field(default_factory=list)
    error: str = ""



def image_crops(image_path: str | Path, preprocessing: Mapping[str, Any]) -> Tensor:
    """Decode an image and cut the crops an export expects: uint8 ``[K, C, crop, crop]``.

    Uses the training pipeline's own decode (shorter side resized to ``resize_size`` with the
    run's ``interpolation``, bilinear for exports that predate it; EXIF orientation applied)
    and evaluation crops: one centre crop ('standard'), five crops, or
    ten (five plus those of the mirror image).

    Raises:
        ImageDecodeError: The image cannot be decoded.
    """
    config = TrainConfig(
        model=str(preprocessing["model"]), crop_mode=str(preprocessing["crop_mode"]),
        resize_size=int(preprocessing["resize_size"]), crop_size=int(preprocessing["crop_size"]),
        interpolation=str(preprocessing.get("interpolation", "bilinear")),
    )
    grayscale = int(preprocessing["in_channels"]) == 1
    image = load_image_uint8(str(image_path), config.resize_size, grayscale=grayscale,
                             interpolation=config.interpolation)
    crops = build_eval_transform(config)(image)
    return crops if crops.dim() == 4 else crops.unsqueeze(0)


def load_classifier(model_path: str | Path) -> ExportedModel:
    """A model to classify with: a run folder (its best_model.pt, or its TorchScript or ONNX
    export where the checkpoint is gone), a workbench model file (best_model.pt or a
    checkpoint, loaded safely with its weights only), a workbench TorchScript export or a
    workbench ONNX export (run with onnxruntime; class names and preprocessing from its
    metadata).

    Raises:
        ExportError: The path is none of them; the message gives the reasons.
    """
    if Path(model_path).is_dir():
        try:
            model_path = model_file_in_run_folder(model_path)
        except FileNotFoundError as exc:
            raise ExportError(str(exc)) from None
    if is_onnx_file(model_path):
        return load_onnx_export(model_path)
    try:
        model, class_names, config = load_model_file(model_path)
    except CheckpointError as not_a_model_file:
        try:
            return load_exported(model_path)
        except ExportError as not_an_export:
            raise ExportError(f"{not_an_export} (and as a model file: {not_a_model_file})"
                              ) from not_an_export
    mean, std = normalization_for(config)
    preprocessing = {"model": config.model, "crop_mode": config.crop_mode,
                     "resize_size": config.resize_size, "interpolation": config.interpolation,
                     "crop_size": config.crop_size, "in_channels": config.in_channels}
    return ExportedModel(PreprocessingClassifier(model, mean, std).eval(), class_names,
                         preprocessing)


def expand_image_paths(paths: Sequence[str | Path]) -> list[str]:
    """Image files as given, folders replaced by the images in them (recursively, sorted).

    A path that does not exist is kept as given: its prediction then says so, and the other
    images are still classified.
    """
    return expand_image_inputs(paths)[0]


def expand_image_inputs(paths: Sequence[str | Path]) -> tuple[list[str], list[str]]:
    """``expand_image_paths``, and the folders among ``paths`` that hold no image at all."""
    expanded: list[str] = []
    empty: list[str] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = [os.path.join(folder, name) for folder, _, names in os.walk(path)
                     for name in names if name.lower().endswith(IMG_EXTENSIONS)
                     and not name.startswith(".")]
            expanded.extend(sorted(found))
            if not found:
                empty.append(str(path))
        else:
            expanded.append(str(path))
    return expanded, empty


def predictions_csv_text(predictions: Sequence[Prediction]) -> str:
    """CSV of predictions: path, then class and probability of each top rank, then error.
    Paths and class names are cells as ``stored_name`` writes them (a JSON string when they
    hold a newline or bytes that are not UTF-8)."""
    ranks = max((len(p.top) for p in predictions), default=0)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["path"]
    for rank in range(1, ranks + 1):
        header += [f"top{rank}_class", f"top{rank}_probability"]
    writer.writerow([*header, "error"])
    for prediction in predictions:
        cells = [stored_name(prediction.path)]
        for name, probability in prediction.top:
            cells += [stored_name(name), f"{probability:.6g}"]
        cells += [""] * (len(header) - len(cells))
        writer.writerow([*cells, shown_name(prediction.error)])
    return buffer.getvalue()


def write_predictions_csv(predictions: Sequence[Prediction], path: str | Path) -> None:
    """Write ``predictions_csv_text`` to ``path`` atomically.

    Raises:
        OSError: The file cannot be written; an older file there is unchanged.
    """
    atomic_write_text(path, predictions_csv_text(predictions))


def predict_images(model_path: str | Path, image_paths: Sequence[str | Path], topk: int = 3
                   ) -> list[Prediction]:
    """Classify images with a model file or an export; one Prediction per path, in order.

    Multi-crop models average the logits of an image's crops before the softmax. An image
    that cannot be read gets a Prediction with ``error`` set and no ``top``; the rest go on.

    Raises:
        ExportError: The model file cannot be loaded.
    """
    return predict_with(load_classifier(model_path), image_paths, topk)


def predict_with(exported: ExportedModel, image_paths: Sequence[str | Path], topk: int = 3
                 ) -> list[Prediction]:
    """``predict_images`` with a model already loaded by ``load_classifier``."""
    paths = [str(path) for path in image_paths]
    predictions: list[Prediction] = []
    for start in range(0, len(paths), _PREDICT_CHUNK):
        predictions.extend(_predict_chunk(exported, paths[start:start + _PREDICT_CHUNK], topk))
    return predictions


def _predict_chunk(exported: ExportedModel, paths: list[str], topk: int) -> list[Prediction]:
    predictions = [Prediction(path) for path in paths]
    crops: list[Tensor] = []
    readable: list[Prediction] = []
    for prediction in predictions:
        try:
            crops.append(image_crops(prediction.path, exported.preprocessing))
            readable.append(prediction)
        except ImageDecodeError as exc:
            missing = not os.path.exists(prediction.path)
            prediction.error = "no such file or folder" if missing else \
                f"cannot read image: {exc.reason}"
    if not crops:
        return predictions
    crops_per_image = crops[0].shape[0]
    with torch.no_grad():
        logits = exported.module(torch.cat(crops))
    probabilities = logits.view(len(readable), crops_per_image, -1).mean(dim=1).softmax(dim=1)
    k = max(1, min(topk, probabilities.shape[1]))
    values, indices = probabilities.topk(k, dim=1)
    names = exported.class_names
    for prediction, row_p, row_i in zip(readable, values.tolist(), indices.tolist(), strict=True):
        prediction.top = [(names[i], p) for i, p in zip(row_i, row_p, strict=True)]
    return predictions
