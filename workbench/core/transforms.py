"""Crops and flips on uint8 ``[C,H,W]`` tensors that ``load_image_uint8`` already resized.

Nothing here converts to float or normalises: the loader ships uint8 (four times fewer bytes)
and ``BatchPreparer`` normalises on the device. Five- and ten-crop are deterministic and the
same for training and evaluation, which is what lets frozen-backbone features be cached. The
standard random crop goes through ``batched_crops``, as do images kept on the device, so one
image's crop has the same pixels whichever path (or preview) produced it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torchvision.transforms import v2

from workbench.core.batched_crops import CropDraws, draw_resized_crops, resized_crops

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


class RandomResizedCropFlip:
    """torchvision's ``RandomResizedCrop`` (antialiased) then a random horizontal flip, on one
    uint8 ``[C,H,W]`` image, through the batched implementation the on-device images use."""

    def __init__(self, size: int, flip_probability: float) -> None:
        self.size = size
        self.flip_probability = flip_probability

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return self.apply(image, self.draw(image))

    def draw(self, image: torch.Tensor, generator: torch.Generator | None = None) -> CropDraws:
        """One box and flip for ``image``, from ``generator`` (process-wide when None)."""
        height, width = image.shape[-2:]
        return draw_resized_crops(1, height, width, flip_probability=self.flip_probability,
                                  generator=generator)

    def apply(self, image: torch.Tensor, draws: CropDraws) -> torch.Tensor:
        return resized_crops(image.unsqueeze(0), draws, self.size)[0]

    def batch(self, images: torch.Tensor) -> torch.Tensor:
        """Crop every image of a same-size ``[B,C,H,W]`` batch with its own draws."""
        height, width = images.shape[-2:]
        draws = draw_resized_crops(images.shape[0], height, width,
                                   flip_probability=self.flip_probability)
        return resized_crops(images, draws, self.size)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(size={self.size}, "
                f"flip_probability={self.flip_probability})")


def normalization_for(config: Any) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(mean, std) the model expects: ImageNet for resnet18, digits statistics for small_cnn."""
    if config.model == "small_cnn":
        return DIGITS_MEAN, DIGITS_STD
    return IMAGENET_MEAN, IMAGENET_STD


def build_train_transform(config: Any) -> ImageTransform:
    """uint8 ``[C,H,W]`` -> uint8 ``[C,h,w]`` (standard) or ``[K,C,h,w]`` (five/ten crop)."""
    if config.crop_mode == "standard":
        return RandomResizedCropFlip(config.crop_size, 0.5 if config.train_hflip else 0.0)
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


def seeded_train_crop(
    config: Any, image: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, tuple[int, int, int, int], bool]:
    """Apply the standard train transform with crop and flip drawn from ``generator``.

    Returns:
        The crop (exactly what ``build_train_transform`` gives for those draws), its box
        (left, top, width, height) in ``image`` coordinates, and whether it was flipped.
    """
    transform = build_train_transform(config)
    if not isinstance(transform, RandomResizedCropFlip):
        raise ValueError(f"crop_mode: '{config.crop_mode}' has no random crop")
    draws = transform.draw(image, generator)
    return transform.apply(image, draws), draws.box(0), bool(draws.flip[0])
