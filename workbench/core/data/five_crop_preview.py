"""What the model will see of one image: the resized picture, the crop boxes and the crops.

A pure function the GUI runs in a worker pool. It goes through the training pipeline itself
(``load_image_uint8``, the transforms, ``BatchPreparer``'s normalisation) and undoes only the
normalisation for display, so a surprise in the preview is a surprise in training.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from workbench.core.data.augmentation.mixing import BatchMixer
from workbench.core.data.augmentation.pixel_augmentation import pixel_augmentation_for
from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.batched_crops import multi_crop_boxes
from workbench.core.data.class_folders import IMG_EXTENSIONS
from workbench.core.data.image_cache import load_image_uint8
from workbench.core.data.image_decoding import (
    ImageDecodeError,
    decode_pil_image,
    displayed_size,
    read_image_size,
)
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
    pairs of images within a batch); '' when they are off. With a second image to mix with
    (``partner``), the training view holds one more tile: the crop after one draw of mixing.
    """

    path: str
    original_size: tuple[int, int]
    train: CropPreview
    val: CropPreview
    mixing_note: str = ""


def five_crop_preview(
    image: str | Image.Image, config: Any, seed: int = 0, partner: str | None = None
) -> AugmentationPreview:
    """Preview the crops of ``image`` for ``config`` (any crop_mode).

    Args:
        image: a file path, or an opened Pillow image.
        config: a ``TrainConfig``; crop_mode, resize_size, crop_size, train_hflip, the crop's
            scale and ratio ranges, the pixel augmentations and model (grayscale,
            normalisation) are used.
        seed: seed of the standard mode's random crop, flip and pixel augmentations (the
            generator training's transform takes) and of the mixing draw; the process-wide
            random state is left alone.
        partner: a second training image (``mixing_partner``); with mixup or cutmix on, the
            training crop is also shown mixed with this image's training crop, as a batch
            mixes neighbours. An undecodable partner leaves that tile out and says why.

    Raises:
        ImageDecodeError: the file cannot be decoded.
    """
    grayscale = config.in_channels == 1
    if isinstance(image, Image.Image):
        path = str(getattr(image, "filename", "") or "")
        original_size = displayed_size(image)
        resized = torch.from_numpy(decode_pil_image(image, config.resize_size, grayscale,
                                                    interpolation=config.interpolation))
    else:
        path = str(image)
        original_size = read_image_size(path)
        resized = load_image_uint8(path, config.resize_size, grayscale,
                                   interpolation=config.interpolation)
    mean, std = normalization_for(config)
    preparer = BatchPreparer(mean, std, "cpu", channels_last=False)
    resized_rgb = _to_display(resized)
    note = mixing_note(config)
    if config.crop_mode == "standard":
        source = _train_source(image, config, grayscale)
        train = _standard_train(source, _to_display(source), config, preparer, seed)
        if note and partner:
            try:
                note += " " + _add_mixed_tile(train, source, partner, config, preparer, seed)
            except ImageDecodeError as exc:
                note += f" It is not drawn here: the image to mix with cannot be read ({exc})."
        elif note:
            note += (" That needs a second image from the dataset's class folders, so it is not "
                     "drawn here.")
        val = _standard_val(resized, resized_rgb, config, preparer)
    else:
        train = _multi_crop(resized, resized_rgb, config, preparer, build_train_transform)
        val = _multi_crop(resized, resized_rgb, config, preparer, build_eval_transform)
    return AugmentationPreview(path, original_size, train, val, note)


def mixing_note(config: Any) -> str:
    """How mixup/cutmix change the training crops shown, or '' when they are off."""
    if not mixing_on(config):
        return ""
    methods = [f"{name} (alpha {alpha:g})" for name, alpha in
               (("mixup", config.mixup_alpha), ("cutmix", config.cutmix_alpha)) if alpha > 0]
    if len(methods) == 2:
        return (f"Then {methods[0]} or {methods[1]}, one of the two each batch: training blends "
                "each crop with the batch's previous image, or pastes a random box of it into "
                "the crop, and mixes their labels in the same share.")
    if config.mixup_alpha > 0:
        return (f"Then {methods[0]}: training blends each crop with the batch's previous image "
                "and mixes their labels in the same share.")
    return (f"Then {methods[0]}: training pastes a random box of the batch's previous image "
            "into each crop and mixes their labels in the share of the area.")


def mixing_on(config: Any) -> bool:
    """Whether training mixes its batches (mixup or cutmix, standard crops only)."""
    return config.crop_mode == "standard" and (config.mixup_alpha > 0 or config.cutmix_alpha > 0)


def mixing_partner(path: str, seed: int) -> str | None:
    """An image of another class to show mixing with: from a folder beside the image's class
    folder (``train/<class>/``, or ``<class>/`` of a flat dataset), chosen by ``seed``;
    None when the image has no such neighbour."""
    class_folder = Path(path).parent
    try:
        classes = sorted(entry.path for entry in os.scandir(class_folder.parent)
                         if entry.is_dir() and entry.name != class_folder.name
                         and not entry.name.startswith("."))
    except OSError:
        return None
    choice = random.Random(seed)
    for folder in choice.sample(classes, len(classes)):
        try:
            images = sorted(entry.path for entry in os.scandir(folder)
                            if entry.is_file() and entry.name.lower().endswith(IMG_EXTENSIONS))
        except OSError:
            continue
        if images:
            return choice.choice(images)
    return None


def _add_mixed_tile(train: CropPreview, source: torch.Tensor, partner: str, config: Any,
                    preparer: BatchPreparer, seed: int) -> str:
    """Append the training crop mixed with ``partner``'s, as ``BatchMixer`` mixes a batch of
    the two (seeded; the process-wide random state is restored); returns what it shows."""
    grayscale = config.in_channels == 1
    partner_source = _train_source(partner, config, grayscale)
    generators = (torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 1))
    crops = [seeded_train_crop(config, image, generator)[0]
             for image, generator in zip((source, partner_source), generators, strict=True)]
    floats, _ = preparer(torch.stack(crops), torch.zeros(2, dtype=torch.long))
    mixer = BatchMixer(2, config.mixup_alpha, config.cutmix_alpha)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mixed = mixer(floats, torch.tensor([0, 1]))  # image 0 takes in image 1 (the roll)
    own = float(mixed.targets[0, 0])
    partner_name = f"{Path(partner).parent.name}/{Path(partner).name}"
    train.crops.append(_to_display(preparer.denormalize(mixed.images[:1])[0]))
    train.labels.append(f"after {mixed.method}: {own:.0%} this image,\n"
                        f"{1 - own:.0%} {partner_name}")
    return (f"Tile 2 shows one draw, with {partner_name} of another class as the previous "
            f"image: its label is {own:.0%} this image's class, {1 - own:.0%} "
            f"'{Path(partner).parent.name}'.")


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
        return torch.from_numpy(decode_pil_image(image, size, grayscale, upscale,
                                                 config.interpolation))
    return load_image_uint8(image, size, grayscale, upscale=upscale,
                            interpolation=config.interpolation)


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

