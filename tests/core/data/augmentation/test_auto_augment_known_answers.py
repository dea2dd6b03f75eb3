"""The automatic policies with answers known by hand: the policy each name builds (operations,
strength, bilinear interpolation), the refusal of an unknown name, and the draws of an unseeded
call coming from torch's global generator image by image."""

from __future__ import annotations

import pytest
import torch
from torchvision.transforms import v2

from workbench.core.data.augmentation.auto_augment import AutoAugmentPolicy


def test_each_name_builds_its_policy_with_bilinear_interpolation() -> None:
    assert AutoAugmentPolicy() == AutoAugmentPolicy("none", 2, 9)
    assert not AutoAugmentPolicy().active
    trivial = AutoAugmentPolicy("trivial_augment_wide").policy()
    assert type(trivial) is v2.TrivialAugmentWide
    assert trivial.interpolation == v2.InterpolationMode.BILINEAR
    rand = AutoAugmentPolicy("rand_augment", num_ops=3, magnitude=5).policy()
    assert type(rand) is v2.RandAugment
    assert (rand.num_ops, rand.magnitude) == (3, 5)
    assert rand.interpolation == v2.InterpolationMode.BILINEAR


def test_an_unknown_name_is_refused_with_the_names_it_takes() -> None:
    with pytest.raises(ValueError) as refused:
        AutoAugmentPolicy("auto_augment").policy()
    assert str(refused.value) == ("auto_augment: 'auto_augment' is not trivial_augment_wide "
                                  "or rand_augment")


def test_without_a_generator_each_image_draws_from_the_global_generator_in_turn() -> None:
    images = torch.randint(0, 256, (4, 3, 16, 16), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(0))
    policy = AutoAugmentPolicy("rand_augment", num_ops=2, magnitude=9)
    torch.manual_seed(7)
    ours = policy(images)
    after = torch.get_rng_state()
    reference = v2.RandAugment(num_ops=2, magnitude=9,
                               interpolation=v2.InterpolationMode.BILINEAR)
    torch.manual_seed(7)
    expected = torch.stack([reference(image) for image in images])
    assert ours.dtype == torch.uint8 and ours.shape == images.shape
    assert torch.equal(ours, expected)
    assert torch.equal(after, torch.get_rng_state())
