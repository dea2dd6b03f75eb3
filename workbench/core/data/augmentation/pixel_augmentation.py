"""The pixel augmentations a config asks for, applied in order to a batch of uint8 crops.

Order: rotation, colour jitter, then the automatic policy (which ends the reference recipe's
pixel transforms). Every image of the batch gets its own draws; the loader calls this with a
batch of one per image, the images kept on the device with the whole batch, the preview with a
seeded generator: the same draws give the same pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from workbench.core.data.augmentation.auto_augment import AutoAugmentPolicy
from workbench.core.data.augmentation.colour_jitter import ColourJitter
from workbench.core.data.augmentation.rotation import RandomRotation


@dataclass(frozen=True)
class PixelAugmentation:
    """Rotation, colour jitter and an automatic policy; each off when its strength is 0."""

    rotation: RandomRotation = RandomRotation()
    jitter: ColourJitter = ColourJitter()
    auto_augment: AutoAugmentPolicy = AutoAugmentPolicy()

    @property
    def active(self) -> bool:
        return self.rotation.active or self.jitter.active or self.auto_augment.active

    def __call__(self, images: torch.Tensor, generator: torch.Generator | None = None
                 ) -> torch.Tensor:
        """uint8 ``[B,C,H,W]`` -> uint8 ``[B,C,H,W]``, each image with its own draws."""
        for step in (self.rotation, self.jitter, self.auto_augment):
            if step.active:
                images = step(images, generator)
        return images

    def describe(self) -> list[str]:
        """What is on, in words, e.g. ['rotation ±15°', 'colour jitter']."""
        parts = []
        if self.rotation.active:
            parts.append(f"rotation \u00b1{self.rotation.degrees:g}\u00b0")
        if self.jitter.active:
            parts.append("colour jitter")
        if self.auto_augment.active:
            parts.append({"trivial_augment_wide": "TrivialAugmentWide",
                          "rand_augment": "RandAugment"}[self.auto_augment.name])
        return parts


def pixel_augmentation_for(config: Any) -> PixelAugmentation | None:
    """The training crops' pixel augmentations of ``config``; None when all are off (or the
    crop mode has no random crop to augment)."""
    if config.crop_mode != "standard":
        return None
    augmentation = PixelAugmentation(
        RandomRotation(config.rotation_degrees),
        ColourJitter(config.color_jitter_brightness, config.color_jitter_contrast,
                     config.color_jitter_saturation, config.color_jitter_hue),
        AutoAugmentPolicy(config.auto_augment, config.rand_augment_num_ops,
                          config.rand_augment_magnitude))
    return augmentation if augmentation.active else None
