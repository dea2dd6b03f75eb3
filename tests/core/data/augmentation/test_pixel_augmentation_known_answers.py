"""The pixel augmentations a config asks for, with answers known by hand: which steps a config
turns on with which strengths, the words the log uses, and that the steps run in order with
draws from one generator, a step that is off drawing nothing."""

from __future__ import annotations

import torch

from workbench.core.data.augmentation.auto_augment import AutoAugmentPolicy
from workbench.core.data.augmentation.colour_jitter import ColourJitter
from workbench.core.data.augmentation.pixel_augmentation import (
    PixelAugmentation,
    pixel_augmentation_for,
)
from workbench.core.data.augmentation.rotation import RandomRotation
from workbench.core.runs.config import TrainConfig


def _images() -> torch.Tensor:
    return torch.randint(0, 256, (3, 3, 12, 12), dtype=torch.uint8,
                         generator=torch.Generator().manual_seed(0))


def test_a_config_gives_each_step_its_strengths() -> None:
    config = TrainConfig(crop_mode="standard", rotation_degrees=15.0,
                         color_jitter_brightness=0.1, color_jitter_contrast=0.2,
                         color_jitter_saturation=0.3, color_jitter_hue=0.05,
                         auto_augment="rand_augment", rand_augment_num_ops=3,
                         rand_augment_magnitude=5)
    assert pixel_augmentation_for(config) == PixelAugmentation(
        RandomRotation(15.0), ColourJitter(0.1, 0.2, 0.3, 0.05),
        AutoAugmentPolicy("rand_augment", 3, 5))
    assert pixel_augmentation_for(TrainConfig(crop_mode="standard")) is None
    assert pixel_augmentation_for(TrainConfig(crop_mode="five_crop",
                                              rotation_degrees=15.0)) is None
    assert pixel_augmentation_for(TrainConfig(crop_mode="standard", color_jitter_hue=0.1)) == \
        PixelAugmentation(jitter=ColourJitter(hue=0.1))


def test_the_words_for_what_is_on() -> None:
    assert PixelAugmentation().describe() == []
    assert not PixelAugmentation().active
    assert PixelAugmentation(RandomRotation(12.5), ColourJitter(brightness=0.2),
                             AutoAugmentPolicy("rand_augment")).describe() == \
        ["rotation \u00b112.5\u00b0", "colour jitter", "RandAugment"]
    assert PixelAugmentation(rotation=RandomRotation(15.0)).describe() == \
        ["rotation \u00b115\u00b0"]
    only_policy = PixelAugmentation(auto_augment=AutoAugmentPolicy("trivial_augment_wide"))
    assert only_policy.describe() == ["TrivialAugmentWide"] and only_policy.active
    assert PixelAugmentation(jitter=ColourJitter(contrast=0.1)).active
    assert PixelAugmentation(rotation=RandomRotation(5.0)).active


def test_the_steps_run_in_order_from_one_generator() -> None:
    images = _images()
    rotation, jitter = RandomRotation(30.0), ColourJitter(0.4, 0.4, 0.4, 0.1)
    policy = AutoAugmentPolicy("trivial_augment_wide")
    augmented = PixelAugmentation(rotation, jitter, policy)(images,
                                                            torch.Generator().manual_seed(3))
    generator = torch.Generator().manual_seed(3)
    by_hand = policy(jitter(rotation(images, generator), generator), generator)
    assert torch.equal(augmented, by_hand)


def test_a_step_that_is_off_draws_nothing() -> None:
    images = _images()
    jitter = ColourJitter(0.4, 0.4, 0.4, 0.1)
    augmented = PixelAugmentation(RandomRotation(0.0), jitter, AutoAugmentPolicy())(
        images, torch.Generator().manual_seed(3))
    assert torch.equal(augmented, jitter(images, torch.Generator().manual_seed(3)))
    assert torch.equal(PixelAugmentation()(images, torch.Generator().manual_seed(3)), images)
