"""Colour jitter with answers worked out by hand: what a flat image's pixels become for a
known brightness, contrast, saturation or hue, in which order, and what the draws are."""

from __future__ import annotations

import torch

from workbench.core.data.augmentation.colour_jitter import GREY_WEIGHTS, ColourJitter, jitter

IN_ORDER = torch.arange(4).view(1, 4)


def _flat(*values: int, size: int = 4) -> torch.Tensor:
    """One ``size`` x ``size`` uint8 image, every pixel the colour ``values``."""
    return torch.tensor(values, dtype=torch.uint8).view(1, -1, 1, 1).expand(
        1, -1, size, size).contiguous()


def _jitter(image, factors, strengths, order=IN_ORDER) -> torch.Tensor:
    return jitter(image, torch.tensor([factors], dtype=torch.float64), order, strengths)


def test_brightness_scales_a_flat_grey_and_stops_at_white() -> None:
    brighter = _jitter(_flat(100, 100, 100), (1.5, 1, 1, 0), (0.5, 0, 0, 0))
    assert brighter.dtype == torch.uint8
    assert torch.equal(brighter, _flat(150, 150, 150))
    assert torch.equal(_jitter(_flat(100, 100, 100), (0.25, 1, 1, 0), (0.8, 0, 0, 0)),
                       _flat(25, 25, 25))
    assert torch.equal(_jitter(_flat(200, 200, 200), (1.5, 1, 1, 0), (0.5, 0, 0, 0)),
                       _flat(255, 255, 255))


def test_no_contrast_and_no_saturation_leave_the_luma_grey() -> None:
    # (200, 100, 50): grey 0.2989 * 200 + 0.587 * 100 + 0.114 * 50 = 124.18 -> 124.
    grey = 0.2989 * 200 + 0.587 * 100 + 0.114 * 50
    assert GREY_WEIGHTS == (0.2989, 0.587, 0.114)
    assert round(grey) == 124
    assert torch.equal(_jitter(_flat(200, 100, 50), (1, 0.0, 1, 0), (0, 0.5, 0, 0)),
                       _flat(124, 124, 124))
    assert torch.equal(_jitter(_flat(200, 100, 50), (1, 1, 0.0, 0), (0, 0, 0.5, 0)),
                       _flat(124, 124, 124))
    # Halfway: (200 + 124.18) / 2 = 162.09, (100 + 124.18) / 2 = 112.09, (50 + 124.18) / 2
    assert torch.equal(_jitter(_flat(200, 100, 50), (1, 1, 0.5, 0), (0, 0, 0.5, 0)),
                       _flat(162, 112, 87))
    # Saturation doubled runs past white and below black: clamped.
    assert torch.equal(_jitter(_flat(200, 100, 50), (1, 1, 2.0, 0), (0, 0, 0.5, 0)),
                       _flat(255, 76, 0))


def test_contrast_blends_with_the_images_mean_grey() -> None:
    image = torch.full((1, 1, 2, 2), 50, dtype=torch.uint8)
    image[..., 1, :] = 150  # mean 100
    halved = _jitter(image, (1, 0.5, 1, 0), (0, 0.5, 0, 0))
    assert halved[0, 0].tolist() == [[75, 75], [125, 125]]
    # A grey image has no saturation or hue to change.
    assert torch.equal(_jitter(image, (1, 1, 0.0, 0.3), (0, 0, 0.5, 0.4)), image)


def test_a_hue_shift_turns_red_into_its_neighbours() -> None:
    assert torch.equal(_jitter(_flat(255, 0, 0), (1, 1, 1, 0.5), (0, 0, 0, 0.5)),
                       _flat(0, 255, 255))
    assert torch.equal(_jitter(_flat(255, 0, 0), (1, 1, 1, 1 / 3), (0, 0, 0, 0.5)),
                       _flat(0, 255, 0))
    assert torch.equal(_jitter(_flat(255, 0, 0), (1, 1, 1, -1 / 3), (0, 0, 0, 0.5)),
                       _flat(0, 0, 255))


def test_an_operation_whose_strength_is_0_is_left_out_whatever_its_factor() -> None:
    assert torch.equal(_jitter(_flat(200, 100, 50), (1.5, 0, 0, 0.5), (0.5, 0, 0, 0)),
                       _flat(255, 150, 75))


def test_each_image_takes_the_operations_in_its_own_order() -> None:
    # Brightness 2 then no contrast: (255, 100) clamped, mean 177.5 -> 178 everywhere.
    # No contrast then brightness 2: mean 125, then 250.
    image = torch.full((2, 1, 2, 2), 50, dtype=torch.uint8)
    image[:, :, 1, :] = 200
    order = torch.tensor([[0, 1, 2, 3], [1, 0, 2, 3]])
    factors = torch.tensor([[2.0, 0.0, 1, 0]] * 2, dtype=torch.float64)
    out = jitter(image, factors, order, (1.0, 1.0, 0, 0))
    assert out[0].unique().tolist() == [178]
    assert out[1].unique().tolist() == [250]


def test_the_draws_cover_each_strengths_range_and_the_order_is_a_permutation() -> None:
    factors, order = ColourJitter(0.5, 1.5, 0.25, 0.1).draw(4096, torch.Generator().manual_seed(0))
    assert factors.dtype == torch.float64 and factors.shape == (4096, 4)
    for column, (low, high) in enumerate([(0.5, 1.5), (0.0, 2.5), (0.75, 1.25), (-0.1, 0.1)]):
        values = factors[:, column]
        assert values.min() >= low and values.max() <= high
        assert values.min() < low + 0.01 and values.max() > high - 0.01
    assert torch.equal(order.sort(dim=1).values, torch.arange(4).expand(4096, 4))
    # Every one of the 24 orders is drawn.
    assert len({tuple(row) for row in order.tolist()}) == 24


def test_a_seeded_jitter_repeats_and_each_strength_alone_turns_it_on() -> None:
    images = torch.randint(0, 256, (3, 3, 8, 8), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(1))
    jitter_ = ColourJitter(0.4, 0.4, 0.4, 0.1)
    first = jitter_(images, torch.Generator().manual_seed(2))
    assert torch.equal(first, jitter_(images, torch.Generator().manual_seed(2)))
    factors, order = jitter_.draw(3, torch.Generator().manual_seed(2))
    assert torch.equal(first, jitter(images, factors, order, (0.4, 0.4, 0.4, 0.1)))
    assert jitter_.strengths() == (0.4, 0.4, 0.4, 0.1)
    assert not ColourJitter().active
    for strengths in [(0.1, 0, 0, 0), (0, 0.1, 0, 0), (0, 0, 0.1, 0), (0, 0, 0, 0.1)]:
        assert ColourJitter(*strengths).active


def test_an_image_one_pixel_high_is_still_a_colour_image() -> None:
    # One row of (200, 100, 50): no saturation or no contrast gives its luma grey 124, a hue
    # shift of a half turns red to cyan.
    row = torch.tensor([200, 100, 50], dtype=torch.uint8).view(1, 3, 1, 1).expand(
        1, 3, 1, 5).contiguous()
    grey = torch.full((1, 3, 1, 5), 124, dtype=torch.uint8)
    assert torch.equal(_jitter(row, (1, 1, 0.0, 0), (0, 0, 0.5, 0)), grey)
    assert torch.equal(_jitter(row, (1, 0.0, 1, 0), (0, 0.5, 0, 0)), grey)
    red = torch.tensor([255, 0, 0], dtype=torch.uint8).view(1, 3, 1, 1).expand(
        1, 3, 1, 5).contiguous()
    cyan = torch.tensor([0, 255, 255], dtype=torch.uint8).view(1, 3, 1, 1).expand(
        1, 3, 1, 5)
    assert torch.equal(_jitter(red, (1, 1, 1, 0.5), (0, 0, 0, 0.5)), cyan)


def test_the_factors_are_the_seeded_uniform_draws_scaled_to_each_range() -> None:
    factors, order = ColourJitter(0.5, 1.5, 0.25, 0.1).draw(16, torch.Generator().manual_seed(4))
    uniform = torch.rand((16, 8), dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(factors[:, 0], 0.5 + 1.0 * uniform[:, 0])
    torch.testing.assert_close(factors[:, 1], 0.0 + 2.5 * uniform[:, 1])
    torch.testing.assert_close(factors[:, 2], 0.75 + 0.5 * uniform[:, 2])
    torch.testing.assert_close(factors[:, 3], -0.1 + 0.2 * uniform[:, 3])
    assert torch.equal(order, uniform[:, 4:].argsort(dim=1))


def test_a_batch_on_another_device_is_jittered_there() -> None:
    # The meta device stands in for a GPU: the factors must follow the images to it.
    images = torch.zeros(2, 3, 4, 4, dtype=torch.uint8, device="meta")
    factors = torch.tensor([[1.5, 0.5, 1, 0]] * 2, dtype=torch.float64)
    out = jitter(images, factors, torch.arange(4).expand(2, 4), (0.5, 0.5, 0, 0))
    assert out.device.type == "meta" and out.dtype == torch.uint8 and out.shape == images.shape
