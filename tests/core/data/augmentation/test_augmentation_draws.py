"""The parameters the pixel augmentations draw: every draw inside torchvision's own range, both
ends reached, each image its own draw, the same distribution as torchvision's draws, and
RandAugment run with the configured number of operations at the configured magnitude."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

from workbench.core.data.augmentation.colour_jitter import ColourJitter
from workbench.core.data.augmentation.pixel_augmentation import pixel_augmentation_for
from workbench.core.data.augmentation.rotation import RandomRotation
from workbench.core.runs.config import TrainConfig

DRAWS = 4096
# Unequal strengths, one above 1 (its lower end is clipped at 0 by torchvision), so a column
# taken from the wrong strength or an unclipped range shows.
STRENGTHS = {"brightness": 0.4, "contrast": 0.7, "saturation": 1.6, "hue": 0.15}


def _torchvision_ranges() -> list[tuple[float, float]]:
    """(low, high) of each factor as torchvision's ColorJitter computes them."""
    reference = v2.ColorJitter(**STRENGTHS)
    return [tuple(getattr(reference, name)) for name in STRENGTHS]


def test_jitter_factors_stay_in_torchvisions_ranges_and_reach_both_ends() -> None:
    factors, order = ColourJitter(**STRENGTHS).draw(DRAWS, torch.Generator().manual_seed(0))
    for column, (name, (low, high)) in enumerate(zip(STRENGTHS, _torchvision_ranges(),
                                                     strict=True)):
        drawn = factors[:, column]
        margin = 0.02 * (high - low)
        assert low <= float(drawn.min()) <= low + margin, name
        assert high - margin <= float(drawn.max()) <= high, name
        assert float(drawn.mean()) == pytest.approx((low + high) / 2, abs=margin), name
        # Every image its own factor, not one factor repeated over the batch.
        assert drawn.unique().numel() > 0.99 * DRAWS, name
    assert (factors[:, 3] < 0).any() and (factors[:, 3] > 0).any()
    # The four factors of an image are independent draws, not one draw scaled four ways.
    correlation = torch.corrcoef(factors[:, :3].T)
    assert (correlation - torch.eye(3)).abs().max() < 0.1
    # Each image's order is a permutation of the four operations, and all 24 occur.
    assert torch.equal(order.sort(dim=1).values, torch.arange(4).expand(DRAWS, 4))
    assert len({tuple(row) for row in order.tolist()}) == 24


def test_jitter_factors_are_distributed_as_torchvisions_draws() -> None:
    ours, _ = ColourJitter(**STRENGTHS).draw(2000, torch.Generator().manual_seed(1))
    reference = v2.ColorJitter(**STRENGTHS)
    image = torch.zeros(3, 4, 4, dtype=torch.uint8)
    torch.manual_seed(1)
    theirs = [reference.make_params([image]) for _ in range(2000)]
    for column, key in enumerate(("brightness_factor", "contrast_factor", "saturation_factor",
                                  "hue_factor")):
        result = stats.ks_2samp(ours[:, column].numpy(), [p[key] for p in theirs])
        assert result.pvalue > 1e-4, (key, result)


def test_jittered_batch_is_torchvisions_operations_in_each_images_drawn_order() -> None:
    # Draw the parameters, then jitter with the same seed: image i must be torchvision's
    # adjust_* applied with row i's factors, in row i's order.
    jitter = ColourJitter(**STRENGTHS)
    images = torch.randint(0, 256, (16, 3, 12, 12), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(2))
    factors, order = jitter.draw(16, torch.Generator().manual_seed(3))
    ours = jitter(images, torch.Generator().manual_seed(3))
    adjust = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
    for index in range(16):
        # torchvision's operations on a float image (a uint8 one is truncated after each
        # operation, the batch is rounded once at the end).
        expected = images[index] / 255.0
        for operation in order[index].tolist():
            expected = adjust[operation](expected, float(factors[index, operation]))
        expected = (expected * 255.0).round()
        assert (ours[index].float() - expected).abs().max() <= 1.0, index


def test_rotation_angles_stay_in_torchvisions_range_and_reach_both_ends() -> None:
    degrees = 20.0
    low, high = v2.RandomRotation(degrees).degrees
    angles = RandomRotation(degrees).draw(DRAWS, torch.Generator().manual_seed(0))
    assert low <= float(angles.min()) < low + 0.4
    assert high - 0.4 < float(angles.max()) <= high
    assert float(angles.mean()) == pytest.approx(0.0, abs=0.8)
    assert angles.unique().numel() > 0.99 * DRAWS
    # Clockwise and counter-clockwise equally often (a binomial test over the signs).
    clockwise = int((angles < 0).sum())
    assert stats.binomtest(clockwise, DRAWS, 0.5).pvalue > 1e-4


def test_rotation_angles_are_distributed_as_torchvisions_draws() -> None:
    ours = RandomRotation(20.0).draw(2000, torch.Generator().manual_seed(1))
    reference = v2.RandomRotation(20.0)
    image = torch.zeros(3, 4, 4, dtype=torch.uint8)
    torch.manual_seed(1)
    theirs = [reference.make_params([image])["angle"] for _ in range(2000)]
    assert stats.ks_2samp(ours.numpy(), theirs).pvalue > 1e-4


def test_rotated_batch_turns_each_image_by_its_drawn_angle() -> None:
    rotation = RandomRotation(30.0)
    images = torch.randint(0, 256, (6, 3, 16, 20), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(4))
    angles = rotation.draw(6, torch.Generator().manual_seed(5))
    ours = rotation(images, torch.Generator().manual_seed(5))
    for image, angle, turned in zip(images, angles.tolist(), ours, strict=True):
        assert torch.equal(turned, F.rotate(image, angle))


def _rand_augment_magnitude(operation: str, magnitude: int, height: int, width: int) -> float:
    """The size of one RandAugment operation at ``magnitude`` (of 30), from the paper's
    table as torchvision implements it: linear from 0 to each operation's maximum."""
    share = magnitude / 30
    linear_maximum = {"ShearX": 0.3, "ShearY": 0.3, "TranslateX": 150 / 331 * width,
                      "TranslateY": 150 / 331 * height, "Rotate": 30.0, "Brightness": 0.9,
                      "Color": 0.9, "Contrast": 0.9, "Sharpness": 0.9}
    if operation in linear_maximum:
        return linear_maximum[operation] * share
    if operation == "Posterize":
        return float(8 - round(4 * share))  # bits kept: 8 down to 4
    if operation == "Solarize":
        return 1.0 - share  # threshold, as a share of the top value
    return 0.0  # Identity, AutoContrast, Equalize take no magnitude


@pytest.mark.parametrize(("num_ops", "magnitude"), [(1, 0), (3, 30), (4, 13)])
def test_rand_augment_runs_the_configured_operations_at_the_configured_magnitude(
        num_ops, magnitude) -> None:
    config = TrainConfig(crop_mode="standard", auto_augment="rand_augment",
                         rand_augment_num_ops=num_ops, rand_augment_magnitude=magnitude)
    augmentation = pixel_augmentation_for(config)
    images = torch.randint(0, 256, (8, 3, 24, 32), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(6))
    original = v2.RandAugment._apply_image_or_video_transform
    with mock.patch.object(v2.RandAugment, "_apply_image_or_video_transform", autospec=True,
                           side_effect=original) as dispatch:
        augmentation(images, torch.Generator().manual_seed(7))
    assert dispatch.call_count == 8 * num_ops
    operations = set()
    for call in dispatch.call_args_list:
        _, image, operation, size = call.args[:4]
        operations.add(operation)
        expected = _rand_augment_magnitude(operation, magnitude, 24, 32)
        assert abs(size) == pytest.approx(expected, rel=1e-5, abs=1e-6), operation
    assert len(operations) >= min(4, 8 * num_ops)


def test_rand_augment_at_the_top_magnitude_changes_more_than_at_zero() -> None:
    def augmented(magnitude: int) -> torch.Tensor:
        config = TrainConfig(crop_mode="standard", auto_augment="rand_augment",
                             rand_augment_num_ops=2, rand_augment_magnitude=magnitude)
        return pixel_augmentation_for(config)(images, torch.Generator().manual_seed(9))

    images = torch.randint(0, 256, (16, 3, 24, 24), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(8))
    weak, strong = augmented(0), augmented(30)
    assert not torch.equal(weak, strong)
    change = [(out.float() - images.float()).abs().mean() for out in (weak, strong)]
    assert change[1] > 2 * change[0]


@settings(derandomize=True, max_examples=40, deadline=None)
@given(brightness=st.floats(0.0, 3.0), contrast=st.floats(0.0, 3.0),
       saturation=st.floats(0.0, 3.0), hue=st.floats(0.0, 0.5),
       count=st.integers(1, 64), seed=st.integers(0, 2**31))
def test_any_jitter_draws_stay_in_torchvisions_ranges(brightness, contrast, saturation, hue,
                                                      count, seed) -> None:
    strengths = {"brightness": brightness, "contrast": contrast, "saturation": saturation,
                 "hue": hue}
    reference = v2.ColorJitter(**strengths)
    factors, _ = ColourJitter(**strengths).draw(count, torch.Generator().manual_seed(seed))
    for column, name in enumerate(strengths):
        bounds = getattr(reference, name)
        low, high = bounds if bounds is not None else (0.0, 0.0) if name == "hue" else (1, 1)
        assert low - 1e-12 <= float(factors[:, column].min()), name
        assert float(factors[:, column].max()) <= high + 1e-12, name
