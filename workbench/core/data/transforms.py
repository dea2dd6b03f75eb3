"""Crops and flips on uint8 ``[C,H,W]`` tensors that ``load_image_uint8`` already resized.

The standard training crop follows torchvision's reference recipe: ``RandomResizedCrop`` of the
image as it is, not of the image resized to ``resize_size``. Its source is decoded at
``train_source_size`` (never larger than the original), which is large enough that even the
smallest crop the scale and ratio ranges allow spans ``crop_size`` pixels: no crop is enlarged
more than the reference would enlarge it. Validation keeps Resize(resize_size) + CenterCrop.

Every transform here also crops a whole same-size batch (``batch``) with the same pixels, which
the loader uses for same-size batches and the images kept on the device for every batch.

Nothing here converts to float or normalises: the loader ships uint8 (four times fewer bytes)
and ``BatchPreparer`` normalises on the device. Five- and ten-crop are deterministic and the
same for training and evaluation, which is what lets frozen-backbone features be cached. All
crops go through ``batched_crops``, so one image's crop has the same pixels whichever path (or
preview) produced it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import torch

from workbench.core.data.augmentation.pixel_augmentation import (
    PixelAugmentation,
    pixel_augmentation_for,
)
from workbench.core.data.batched_crops import (
    DEFAULT_RATIO,
    DEFAULT_SCALE,
    CropDraws,
    center_crops,
    draw_resized_crops,
    multi_crops,
    resized_crops,
)

IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)
DIGITS_MEAN: tuple[float] = (0.1307,)
DIGITS_STD: tuple[float] = (0.3081,)

ImageTransform = Callable[[torch.Tensor], torch.Tensor]


class CropTransform(Protocol):
    """What ``build_train_transform`` and ``build_eval_transform`` return: one image's
    crop(s), or (``batch``) those of a same-size batch, with the same pixels."""

    def __call__(self, image: torch.Tensor) -> torch.Tensor: ...

    def batch(self, images: torch.Tensor, generator: torch.Generator | None = None
              ) -> torch.Tensor: ...


class RandomResizedCropFlip:
    """torchvision's ``RandomResizedCrop`` (antialiased, bilinear or bicubic) then a random
    horizontal flip, on one uint8 ``[C,H,W]`` image, through the batched implementation the
    on-device images use."""

    def __init__(self, size: int, flip_probability: float,
                 scale: tuple[float, float] = DEFAULT_SCALE,
                 ratio: tuple[float, float] = DEFAULT_RATIO,
                 interpolation: str = "bilinear") -> None:
        self.size = size
        self.interpolation = interpolation
        self.flip_probability = flip_probability
        self.scale = scale
        self.ratio = ratio

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return self.apply(image, self.draw(image))

    def draw(self, image: torch.Tensor, generator: torch.Generator | None = None) -> CropDraws:
        """One box and flip for ``image``, from ``generator`` (process-wide when None)."""
        height, width = image.shape[-2:]
        return draw_resized_crops(1, height, width, self.scale, self.ratio,
                                  flip_probability=self.flip_probability, generator=generator)

    def apply(self, image: torch.Tensor, draws: CropDraws) -> torch.Tensor:
        return resized_crops(image.unsqueeze(0), draws, self.size, self.interpolation)[0]

    def batch(self, images: torch.Tensor, generator: torch.Generator | None = None
              ) -> torch.Tensor:
        """Crop every image of a same-size ``[B,C,H,W]`` batch with its own draws, from
        ``generator`` (process-wide when None)."""
        height, width = images.shape[-2:]
        draws = draw_resized_crops(images.shape[0], height, width, self.scale, self.ratio,
                                   flip_probability=self.flip_probability, generator=generator)
        return resized_crops(images, draws, self.size, self.interpolation)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(size={self.size}, "
                f"flip_probability={self.flip_probability}, scale={self.scale}, "
                f"ratio={self.ratio}, interpolation={self.interpolation!r})")


class AugmentedCrop(RandomResizedCropFlip):
    """The random resized crop and flip, then the config's pixel augmentations (rotation,
    colour jitter, an automatic policy), every image with its own draws; one image goes
    through the batch code as a batch of one, so the same draws give the same pixels."""

    def __init__(self, crop: RandomResizedCropFlip, augmentation: PixelAugmentation) -> None:
        super().__init__(crop.size, crop.flip_probability, crop.scale, crop.ratio,
                         crop.interpolation)
        self.augmentation = augmentation

    def apply(self, image: torch.Tensor, draws: CropDraws,
              generator: torch.Generator | None = None) -> torch.Tensor:
        """Crop ``image`` with ``draws``, then augment it with draws from ``generator``."""
        crop = resized_crops(image.unsqueeze(0), draws, self.size, self.interpolation)
        return self.augmentation(crop, generator)[0]

    def batch(self, images: torch.Tensor, generator: torch.Generator | None = None
              ) -> torch.Tensor:
        return self.augmentation(super().batch(images, generator), generator)

    def __repr__(self) -> str:
        return f"{super().__repr__()} + {', '.join(self.augmentation.describe())}"


class CenterCrop:
    """The central ``size`` x ``size`` crop, of one image or (``batch``) of a batch."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return center_crops(image.unsqueeze(0), self.size)[0]

    def batch(self, images: torch.Tensor, generator: torch.Generator | None = None
              ) -> torch.Tensor:
        """``generator`` is unused: the crop is deterministic."""
        return center_crops(images, self.size)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size})"


class MultiCrop:
    """Five crops (corners and center) or ten (and the mirrored five), stacked ``[K,C,h,w]``,
    of one image or (``batch``) ``[B,K,C,h,w]`` of a batch."""

    def __init__(self, size: int, mode: str) -> None:
        self.size = size
        self.mode = mode

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return multi_crops(image.unsqueeze(0), self.size, self.mode)[0]

    def batch(self, images: torch.Tensor, generator: torch.Generator | None = None
              ) -> torch.Tensor:
        """``generator`` is unused: the crops are deterministic."""
        return multi_crops(images, self.size, self.mode)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, mode={self.mode!r})"


def normalization_for(config: Any) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(mean, std) the model expects: digits statistics for small_cnn, ImageNet's for every
    torchvision model (all their weights were made with it; test_model_catalog checks)."""
    if config.model == "small_cnn":
        return DIGITS_MEAN, DIGITS_STD
    return IMAGENET_MEAN, IMAGENET_STD


def train_source_size(config: Any) -> tuple[int, bool]:
    """(shorter side, upscale) at which training images are decoded before they are cropped.

    Five- and ten-crop cut the image resized to ``resize_size``. The random resized crop cuts a
    copy just large enough that its smallest possible box (``crop_scale_min`` of the area at
    the most elongated allowed ratio) still spans ``crop_size`` pixels, and never larger than
    the original (``upscale`` False): the crops are those of the original image, resized.
    """
    if config.crop_mode != "standard":
        return config.resize_size, True
    narrowest = min(config.crop_ratio_min, 1.0 / config.crop_ratio_max)
    side = math.ceil(config.crop_size / math.sqrt(config.crop_scale_min * narrowest) - 1e-9)
    return max(side, config.crop_size), False


def build_train_transform(config: Any) -> CropTransform:
    """uint8 ``[C,H,W]`` -> uint8 ``[C,h,w]`` (standard) or ``[K,C,h,w]`` (five/ten crop)."""
    if config.crop_mode == "standard":
        crop = RandomResizedCropFlip(
            config.crop_size, 0.5 if config.train_hflip else 0.0,
            (config.crop_scale_min, config.crop_scale_max),
            (config.crop_ratio_min, config.crop_ratio_max),
            getattr(config, "interpolation", "bilinear"))
        augmentation = pixel_augmentation_for(config)
        return crop if augmentation is None else AugmentedCrop(crop, augmentation)
    return _multi_crop(config)


def build_eval_transform(config: Any) -> CropTransform:
    """uint8 ``[C,H,W]`` -> uint8 ``[C,h,w]`` (center crop) or ``[K,C,h,w]`` (five/ten crop)."""
    if config.crop_mode == "standard":
        return CenterCrop(config.crop_size)
    return _multi_crop(config)


def _multi_crop(config: Any) -> CropTransform:
    if config.crop_mode not in ("five_crop", "ten_crop"):
        raise ValueError(
            f"crop_mode: '{config.crop_mode}' is not standard, five_crop or ten_crop")
    return MultiCrop(config.crop_size, config.crop_mode)


def seeded_train_crop(
    config: Any, image: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, tuple[int, int, int, int], bool]:
    """Apply the standard train transform with every draw (crop, flip, pixel augmentations)
    taken from ``generator``.

    Returns:
        The crop (exactly what ``build_train_transform(config).batch`` gives for the image
        with that generator), its box (left, top, width, height) in ``image`` coordinates,
        and whether it was flipped.
    """
    transform = build_train_transform(config)
    if not isinstance(transform, RandomResizedCropFlip):
        raise ValueError(f"crop_mode: '{config.crop_mode}' has no random crop")
    draws = transform.draw(image, generator)
    crop = (transform.apply(image, draws, generator) if isinstance(transform, AugmentedCrop)
            else transform.apply(image, draws))
    return crop, draws.box(0), bool(draws.flip[0])
