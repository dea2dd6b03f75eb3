"""Colour jitter, rotation and the automatic policies: on they change the pixels the model gets,
each image of a batch with its own draws; off the training crop is exactly the plain one."""

from __future__ import annotations

import pytest
import torch
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

from workbench.core.data.augmentation.auto_augment import AutoAugmentPolicy
from workbench.core.data.augmentation.colour_jitter import jitter
from workbench.core.data.augmentation.rotation import rotate
from workbench.core.data.transforms import (
    AugmentedCrop,
    RandomResizedCropFlip,
    build_train_transform,
)
from workbench.core.runs.config import TrainConfig

ONE_AT_A_TIME = [
    {"color_jitter_brightness": 0.5}, {"color_jitter_contrast": 0.5},
    {"color_jitter_saturation": 0.5}, {"color_jitter_hue": 0.2}, {"rotation_degrees": 30.0},
    {"auto_augment": "trivial_augment_wide"}, {"auto_augment": "rand_augment"},
]


def _config(**changes) -> TrainConfig:
    # The whole image, never flipped: without augmentations every crop of one image is equal.
    return TrainConfig(crop_mode="standard", resize_size=32, crop_size=32, train_hflip=False,
                       crop_scale_min=1.0, crop_ratio_min=1.0, crop_ratio_max=1.0, **changes)


def _images(count: int = 8, seed: int = 0) -> torch.Tensor:
    """One colourful 32x32 image repeated ``count`` times."""
    generator = torch.Generator().manual_seed(seed)
    image = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=generator)
    return image.expand(count, -1, -1, -1).contiguous()


def test_with_every_augmentation_off_the_training_crop_is_the_plain_random_crop() -> None:
    config = TrainConfig(crop_mode="standard", resize_size=40, crop_size=32)
    transform = build_train_transform(config)
    assert type(transform) is RandomResizedCropFlip
    images = torch.randint(0, 256, (4, 3, 40, 40), dtype=torch.uint8)
    plain = RandomResizedCropFlip(32, 0.5, (0.08, 1.0), (0.75, 1.333333))
    assert torch.equal(transform.batch(images, torch.Generator().manual_seed(3)),
                       plain.batch(images, torch.Generator().manual_seed(3)))


@pytest.mark.parametrize("changes", ONE_AT_A_TIME, ids=lambda c: "-".join(map(str, c.values())))
def test_each_augmentation_changes_the_pixels_image_by_image(changes) -> None:
    images = _images()
    plain = build_train_transform(_config()).batch(images, torch.Generator().manual_seed(1))
    transform = build_train_transform(_config(**changes))
    assert isinstance(transform, AugmentedCrop)
    augmented = transform.batch(images, torch.Generator().manual_seed(1))
    assert augmented.dtype == torch.uint8 and augmented.shape == plain.shape
    assert not torch.equal(augmented, plain)
    # Every image drew its own parameters: the copies of one image no longer agree (a policy
    # may draw its identity operation for a few of them).
    distinct = {tuple(image.flatten().tolist()) for image in augmented}
    assert len(distinct) >= 4


def test_one_image_through_the_loader_gets_the_pixels_of_a_batch_of_one() -> None:
    # The loader calls the transform per image with the process's random state; the images
    # kept on the device call ``batch``: the same draws must give the same pixels.
    config = TrainConfig(crop_mode="standard", resize_size=40, crop_size=32,
                         color_jitter_brightness=0.4, color_jitter_contrast=0.4,
                         color_jitter_saturation=0.4, color_jitter_hue=0.1,
                         rotation_degrees=20.0, auto_augment="rand_augment")
    transform = build_train_transform(config)
    image = torch.randint(0, 256, (3, 40, 48), dtype=torch.uint8)
    torch.manual_seed(4)
    alone = transform(image)
    torch.manual_seed(4)
    assert torch.equal(alone, transform.batch(image.unsqueeze(0))[0])


def test_jitter_operations_are_torchvisions_formulas() -> None:
    image = torch.randint(0, 256, (1, 3, 24, 24), dtype=torch.uint8)
    in_order = torch.arange(4).view(1, 4)
    cases = [((1.3, 1, 1, 0), (0.5, 0, 0, 0), F.adjust_brightness(image[0], 1.3)),
             ((1, 0.6, 1, 0), (0, 0.5, 0, 0), F.adjust_contrast(image[0], 0.6)),
             ((1, 1, 1.7, 0), (0, 0, 0.9, 0), F.adjust_saturation(image[0], 1.7)),
             ((1, 1, 1, -0.2), (0, 0, 0, 0.3), F.adjust_hue(image[0], -0.2))]
    for factors, strengths, expected in cases:
        ours = jitter(image, torch.tensor([factors], dtype=torch.float64), in_order, strengths)
        # torchvision rounds down to uint8 after the operation, we round once at the end
        assert (ours[0].int() - expected.int()).abs().max() <= 1, strengths


def test_rotation_is_torchvisions_rotate_for_each_images_angle() -> None:
    images = torch.randint(0, 256, (3, 3, 20, 26), dtype=torch.uint8)
    angles = torch.tensor([12.5, -37.0, 171.0], dtype=torch.float64)
    turned = rotate(images, angles)
    for image, angle, ours in zip(images, angles.tolist(), turned, strict=True):
        assert torch.equal(ours, F.rotate(image, angle))


@pytest.mark.parametrize("name", ["trivial_augment_wide", "rand_augment"])
def test_policies_are_torchvisions_with_each_images_seed_from_the_generator(name) -> None:
    images = _images(4)
    policy = AutoAugmentPolicy(name, num_ops=2, magnitude=9)
    ours = policy(images, torch.Generator().manual_seed(5))
    seeds = torch.randint(2**62, (4,), generator=torch.Generator().manual_seed(5)).tolist()
    reference = (v2.TrivialAugmentWide(interpolation=v2.InterpolationMode.BILINEAR)
                 if name == "trivial_augment_wide" else
                 v2.RandAugment(num_ops=2, magnitude=9,
                                interpolation=v2.InterpolationMode.BILINEAR))
    for image, seed, mine in zip(images, seeds, ours, strict=True):
        torch.manual_seed(seed)
        assert torch.equal(mine, reference(image))
    state = torch.get_rng_state()
    policy(images, torch.Generator().manual_seed(5))
    assert torch.equal(torch.get_rng_state(), state), "the global random state was touched"
