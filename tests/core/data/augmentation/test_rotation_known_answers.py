"""Batch rotation with answers known by hand: a quarter turn moves the top-middle pixel to the
middle-left (counter-clockwise positive), the result stays uint8, and the angles are float64."""

from __future__ import annotations

import torch

from workbench.core.data.augmentation.rotation import RandomRotation, rotate


def test_a_quarter_turn_moves_a_pixel_counter_clockwise_and_stays_uint8() -> None:
    image = torch.zeros(1, 1, 3, 3, dtype=torch.uint8)
    image[0, 0, 0, 1] = 200  # top middle
    turned = rotate(image, torch.tensor([90.0]))
    expected = torch.zeros(1, 1, 3, 3, dtype=torch.uint8)
    expected[0, 0, 1, 0] = 200  # middle left
    assert turned.dtype == torch.uint8
    assert torch.equal(turned, expected)


def test_the_angles_are_float64_within_the_range() -> None:
    angles = RandomRotation(degrees=15.0).draw(4096, torch.Generator().manual_seed(0))
    assert angles.dtype == torch.float64
    assert angles.min() >= -15.0 and angles.max() <= 15.0
    assert angles.min() < -14.9 and angles.max() > 14.9
