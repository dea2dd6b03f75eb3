"""Crops and flips on uint8 ``[C,H,W]`` tensors that ``load_image_uint8`` already resized.

Nothing here converts to float or normalises: the loader ships uint8 (four times fewer bytes)
and ``BatchPreparer`` normalises on the device. Five- and ten-crop are deterministic and the
same for training and evaluation, which is what lets frozen-backbone features be cached.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torchvision.transforms import v2

IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)
DIGITS_MEAN: tuple[float] = (0.1307,)
DIGITS_STD: tuple[float] = (0.3081,)

ImageTransform = Callable[[torch.Tensor], torch.Tensor]


class StackCrops:
    """Turns the tuple of crops from FiveCrop/TenCrop into one ``[K,C,h,w]`` tensor."""

    def __call__(self, crops: Sequence[torch.Tensor]) -> torch.Tensor:
        return torch.stack(list(crops))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def normalization_for(config: Any) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(mean, std) the model expects: ImageNet for resnet18, digits statistics for small_cnn."""
    if config.model == "small_cnn":
        return DIGITS_MEAN, DIGITS_STD
    return IMAGENET_MEAN, IMAGENET_STD


def build_train_transform(config: Any) -> ImageTransform:
    """uint8 ``[C,H,W]`` -> uint8 ``[C,h,w]`` (standard) or ``[K,C,h,w]`` (five/ten crop)."""
    if config.crop_mode == "standard":
        steps: list[Any] = [v2.RandomResizedCrop(config.crop_size, antialias=True)]
        if config.train_hflip:
            steps.append(v2.RandomHorizontalFlip())
        return v2.Compose(steps)
    return _multi_crop(config)


def build_eval_transform(config: Any) -> ImageTransform:
    """uint8 ``[C,H,W]`` -> uint8 ``[C,h,w]`` (center crop) or ``[K,C,h,w]`` (five/ten crop)."""
    if config.crop_mode == "standard":
        return v2.Compose([v2.CenterCrop(config.crop_size)])
    return _multi_crop(config)


def _multi_crop(config: Any) -> ImageTransform:
    if config.crop_mode == "five_crop":
        return v2.Compose([v2.FiveCrop(config.crop_size), StackCrops()])
    if config.crop_mode == "ten_crop":
        return v2.Compose([v2.TenCrop(config.crop_size), StackCrops()])
    raise ValueError(f"crop_mode: '{config.crop_mode}' is not standard, five_crop or ten_crop")


def multi_crop_boxes(
    width: int, height: int, crop_size: int, crop_mode: str
) -> list[tuple[int, int, int, int]]:
    """(left, top, width, height) of each five/ten crop in image coordinates, in output order.

    The second half of a ten-crop comes from the mirrored image, so its first crop (top-left
    of the mirror) shows the original's top-right corner.
    """
    if crop_size > width or crop_size > height:
        raise ValueError(f"crop {crop_size} does not fit in a {width}x{height} image")
    right, bottom = width - crop_size, height - crop_size
    center = (int(round(right / 2.0)), int(round(bottom / 2.0)))
    corners = [(0, 0), (right, 0), (0, bottom), (right, bottom), center]
    boxes = [(left, top, crop_size, crop_size) for left, top in corners]
    if crop_mode == "ten_crop":
        boxes += [(width - left - crop_size, top, crop_size, crop_size) for left, top in corners]
    return boxes


def random_resized_crop_params(
    transform: v2.RandomResizedCrop, height: int, width: int, generator: torch.Generator
) -> dict[str, int]:
    """``transform.make_params`` drawn from ``generator`` instead of the global random state.

    Used where a crop must be reproducible without touching the process-wide generator that
    a training thread may be using (the preview).
    """
    area = height * width
    log_low, log_high = (math.log(r) for r in transform.ratio)
    for _ in range(10):
        target_area = area * _uniform(generator, *transform.scale)
        aspect_ratio = math.exp(_uniform(generator, log_low, log_high))
        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < w <= width and 0 < h <= height:
            top = int(torch.randint(0, height - h + 1, (1,), generator=generator))
            left = int(torch.randint(0, width - w + 1, (1,), generator=generator))
            return {"top": top, "left": left, "height": h, "width": w}
    in_ratio = width / height
    if in_ratio < min(transform.ratio):
        w, h = width, int(round(width / min(transform.ratio)))
    elif in_ratio > max(transform.ratio):
        w, h = int(round(height * max(transform.ratio))), height
    else:
        w, h = width, height
    return {"top": (height - h) // 2, "left": (width - w) // 2, "height": h, "width": w}


def seeded_train_crop(
    config: Any, image: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, tuple[int, int, int, int], bool]:
    """Apply the standard train transform with crop and flip drawn from ``generator``.

    Returns:
        The crop (exactly what ``build_train_transform`` would give for those draws), its box
        (left, top, width, height) in ``image`` coordinates, and whether it was flipped.
    """
    steps = build_train_transform(config).transforms  # type: ignore[attr-defined]
    crop_step = next(s for s in steps if isinstance(s, v2.RandomResizedCrop))
    flip_step = next((s for s in steps if isinstance(s, v2.RandomHorizontalFlip)), None)
    height, width = image.shape[-2:]
    params = random_resized_crop_params(crop_step, height, width, generator)
    output = crop_step.transform(image, params)
    flipped = flip_step is not None and _uniform(generator, 0.0, 1.0) < flip_step.p
    if flipped:
        output = flip_step.transform(output, {})
    box = (params["left"], params["top"], params["width"], params["height"])
    return output, box, flipped


def _uniform(generator: torch.Generator, low: float, high: float) -> float:
    return float(torch.empty(1).uniform_(float(low), float(high), generator=generator))
