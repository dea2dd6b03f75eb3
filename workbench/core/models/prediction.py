"""Classify images with an exported TorchScript model, preprocessing them as training did."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from workbench.core.data.image_cache import ImageDecodeError, load_image_uint8
from workbench.core.data.transforms import build_eval_transform
from workbench.core.models.export import ExportedModel, load_exported
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

    Uses the training pipeline's own decode (shorter side resized to ``resize_size``, EXIF
    orientation applied) and evaluation crops: one centre crop ('standard'), five crops, or
    ten (five plus those of the mirror image).

    Raises:
        ImageDecodeError: The image cannot be decoded.
    """
    config = TrainConfig(
        model=str(preprocessing["model"]), crop_mode=str(preprocessing["crop_mode"]),
        resize_size=int(preprocessing["resize_size"]), crop_size=int(preprocessing["crop_size"]),
    )
    grayscale = int(preprocessing["in_channels"]) == 1
    image = load_image_uint8(str(image_path), config.resize_size, grayscale=grayscale)
    crops = build_eval_transform(config)(image)
    return crops if crops.dim() == 4 else crops.unsqueeze(0)


def predict_images(model_path: str | Path, image_paths: Sequence[str | Path], topk: int = 3
                   ) -> list[Prediction]:
    """Classify images with an exported model; one Prediction per path, in order.

    Multi-crop exports average the logits of an image's crops before the softmax. An image
    that cannot be read gets a Prediction with ``error`` set and no ``top``; the rest go on.

    Raises:
        ExportError: The model file cannot be loaded.
    """
    exported = load_exported(model_path)
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
            prediction.error = f"cannot read image: {exc.reason}"
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
