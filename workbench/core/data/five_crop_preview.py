"""What the model will see of one image: the resized picture, the crop boxes and the crops.

A pure function the GUI runs in a worker pool. It goes through the training pipeline itself
(``load_image_uint8``, the transforms, ``BatchPreparer``'s normalisation) and undoes only the
normalisation for display, so a surprise in the preview is a surprise in training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image

from workbench.core.data.augmentation.pixel_augmentation import pixel_augmentation_for
from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.batched_crops import multi_crop_boxes
from workbench.core.data.image_cache import load_image_uint8
from workbench.core.data.image_decoding import decode_pil_image, displayed_size, read_image_size
from workbench.core.data.transforms import (
    build_eval_transform,
    build_train_transform,
    normalization_for,
    seeded_train_crop,
    train_source_size,
)

CORNER_LABELS = ("top-left", "top-right", "bottom-left", "bottom-right", "center")
# The mirrored half of a ten-crop, named by where its pixels come from in the original.
MIRRORED_LABELS = tuple(
    f"{name} (flipped)"
    for name in ("top-right", "top-left", "bottom-right", "bottom-left", "center")
)


@dataclass
class CropPreview:
    """One split's view of the image. Arrays are uint8 HxWx3 (grayscale repeated)."""

    resized: np.ndarray
    boxes: list[tuple[int, int, int, int]]
    crops: list[np.ndarray]
    labels: list[str]


@dataclass
class AugmentationPreview:
    """Train and val views of one image; ``original_size`` is (width, height) as displayed.

    ``mixing_note`` says how mixup/cutmix change the training crops when they are on (they mix
    pairs of images within a batch, so one image cannot show them); '' when they are off.
    """

    path: str
    original_size: tuple[int, int]
    train: CropPreview
    val: CropPreview
    mixing_note: str = ""


def five_crop_preview(
    image: str | Image.Image, config: Any, seed: int = 0
) -> AugmentationPreview:
    """Preview the crops of ``image`` for ``config`` (any crop_mode).

    Args:
        image: a file path, or an opened Pillow image.
        config: a ``TrainConfig``; crop_mode, resize_size, crop_size, train_hflip, the crop's
            scale and ratio ranges, the pixel augmentations and model (grayscale,
            normalisation) are used.
        seed: seed of the standard mode's random crop, flip and pixel augmentations (the
            generator training's transform takes); the process-wide random state is left
            alone.

    Raises:
        ImageDecodeError: the file cannot be decoded.
    """
    grayscale = config.in_channels == 1
    if isinstance(image, Image.Image):
        path = str(getattr(image, "filename", "") or "")
        original_size = displayed_size(image)
        resized = torch.from_numpy(decode_pil_image(image, config.resize_size, grayscale))
    else:
        path = str(image)
        original_size = read_image_size(path)
        resized = load_image_uint8(path, config.resize_size, grayscale)
    mean, std = normalization_for(config)
    preparer = BatchPreparer(mean, std, "cpu", channels_last=False)
    resized_rgb = _to_display(resized)
    if config.crop_mode == "standard":
        source = _train_source(image, config, grayscale)
        train = _standard_train(source, _to_display(source), config, preparer, seed)
        val = _standard_val(resized, resized_rgb, config, preparer)
    else:
        train = _multi_crop(resized, resized_rgb, config, preparer, build_train_transform)
        val = _multi_crop(resized, resized_rgb, config, preparer, build_eval_transform)
    return AugmentationPreview(path, original_size, train, val, mixing_note(config))


def mixing_note(config: Any) -> str:
    """How mixup/cutmix change the training crops shown, or '' when they are off."""
    if config.crop_mode != "standard":
        return ""
    methods = [f"{name} (alpha {alpha:g})" for name, alpha in
               (("mixup", config.mixup_alpha), ("cutmix", config.cutmix_alpha)) if alpha > 0]
    if not methods:
        return ""
    how = {"mixup": "blends it with the batch's previous image", "cutmix": "pastes a random box "
           "of the batch's previous image into it"}
    chosen = " or ".join(how[m.split()[0]] for m in methods)
    return (f"Then {' or '.join(methods)}: each training batch is mixed with itself shifted "
            f"by one image, so every crop above reaches the model after training {chosen}, "
            "its label mixed in the same share. That needs a second image, so it is not "
            "drawn here.")


def _multi_crop(
    resized: torch.Tensor, resized_rgb: np.ndarray, config: Any, preparer: BatchPreparer,
    build: Any,
) -> CropPreview:
    crops = build(config)(resized)
    height, width = resized.shape[-2:]
    boxes = multi_crop_boxes(width, height, config.crop_size, config.crop_mode)
    labels = list(CORNER_LABELS)
    if config.crop_mode == "ten_crop":
        labels += MIRRORED_LABELS
    return CropPreview(resized_rgb, boxes, _model_view(crops, preparer), labels)


def _train_source(image: str | Image.Image, config: Any, grayscale: bool) -> torch.Tensor:
    """The image the random resized crop cuts, as training decodes it (``train_source_size``)."""
    size, upscale = train_source_size(config)
    if isinstance(image, Image.Image):
        return torch.from_numpy(decode_pil_image(image, size, grayscale, upscale))
    return load_image_uint8(image, size, grayscale, upscale=upscale)


def _standard_train(
    resized: torch.Tensor, resized_rgb: np.ndarray, config: Any, preparer: BatchPreparer,
    seed: int,
) -> CropPreview:
    generator = torch.Generator().manual_seed(seed)
    crop, box, flipped = seeded_train_crop(config, resized, generator)
    label = "random crop (flipped)" if flipped else "random crop"
    augmentation = pixel_augmentation_for(config)
    if augmentation is not None:
        label += "".join(f"\n+ {part}" for part in augmentation.describe())
    return CropPreview(resized_rgb, [box], _model_view(crop, preparer), [label])


def _standard_val(
    resized: torch.Tensor, resized_rgb: np.ndarray, config: Any, preparer: BatchPreparer
) -> CropPreview:
    crop = build_eval_transform(config)(resized)
    height, width = resized.shape[-2:]
    size = config.crop_size
    box = (int(round((width - size) / 2.0)), int(round((height - size) / 2.0)), size, size)
    return CropPreview(resized_rgb, [box], _model_view(crop, preparer), ["center"])


def _model_view(crops: torch.Tensor, preparer: BatchPreparer) -> list[np.ndarray]:
    """The normalised model input for ``crops`` ([C,h,w] or [K,C,h,w]), back in 0..255."""
    batch = crops.unsqueeze(0)  # one sample, as the loader would batch it
    floats, _ = preparer(batch, torch.zeros(1, dtype=torch.long))
    return [_to_display(pixels) for pixels in preparer.denormalize(floats)]


def _to_display(image: torch.Tensor) -> np.ndarray:
    """uint8 [C,H,W] -> contiguous uint8 HxWx3 (one channel repeated three times)."""
    if image.shape[0] == 1:
        image = image.expand(3, -1, -1)
    return np.ascontiguousarray(image.permute(1, 2, 0).numpy())

