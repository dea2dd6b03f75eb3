"""Batched crops: torchvision's pixels and draws, and the same pixels alone or in a batch."""

from __future__ import annotations

import statistics

import pytest
import torch
from torchvision.transforms import v2

from workbench.core.data import batched_crops
from workbench.core.data.batched_crops import (
    CropDraws,
    center_crops,
    draw_resized_crops,
    multi_crops,
    resized_crops,
)


def _images(count: int, channels: int, height: int, width: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (count, channels, height, width), dtype=torch.uint8,
                         generator=generator)


def _one(draws: CropDraws, index: int) -> CropDraws:
    return draws.part(index, index + 1)


@pytest.mark.parametrize(("channels", "height", "width", "size"),
                         [(1, 32, 32, 28), (3, 40, 60, 24), (3, 96, 128, 64)])
def test_resized_crops_match_torchvision_within_one_grey_level(channels, height, width, size):
    images = _images(24, channels, height, width)
    draws = draw_resized_crops(24, height, width, generator=torch.Generator().manual_seed(1))
    ours = resized_crops(images, draws, size)
    assert ours.dtype == torch.uint8 and tuple(ours.shape) == (24, channels, size, size)
    differences = []
    for index in range(24):
        left, top, box_w, box_h = draws.box(index)
        expected = v2.functional.resized_crop(images[index], top, left, box_h, box_w,
                                              [size, size], antialias=True)
        if draws.flip[index]:
            expected = expected.flip(-1)
        differences.append((ours[index].int() - expected.int()).abs())
    every = torch.stack(differences)
    assert every.max() <= 1
    assert every.float().mean() < 0.3


@pytest.mark.parametrize(("height", "width"), [(48, 64), (96, 128)])  # together; one by one
def test_a_crop_has_the_same_pixels_alone_and_in_a_batch(height, width, monkeypatch):
    monkeypatch.setattr(batched_crops, "RESAMPLE_CHUNK_PIXELS", 16 * 48 * 64)  # 3 chunks
    images = _images(40, 3, height, width, seed=2)
    draws = draw_resized_crops(40, height, width, generator=torch.Generator().manual_seed(5))
    batch = resized_crops(images, draws, 32)
    assert tuple(batch.shape) == (40, 3, 32, 32)
    for index in range(40):
        alone = resized_crops(images[index:index + 1], _one(draws, index), 32)[0]
        assert torch.equal(alone, batch[index])


def test_an_unscaled_unflipped_box_is_the_plain_slice():
    images = _images(2, 3, 40, 50)
    draws = CropDraws(torch.tensor([3, 0]), torch.tensor([7, 26]), torch.tensor([24, 24]),
                      torch.tensor([24, 24]), torch.tensor([False, True]))
    out = resized_crops(images, draws, 24)
    assert torch.equal(out[0], images[0, :, 3:27, 7:31])
    assert torch.equal(out[1], images[1, :, 0:24, 26:50].flip(-1))


def test_draws_follow_torchvision_random_resized_crop():
    height, width = 32, 45
    draws = draw_resized_crops(6000, height, width, generator=torch.Generator().manual_seed(0))
    assert bool(((draws.top >= 0) & (draws.top + draws.height <= height)).all())
    assert bool(((draws.left >= 0) & (draws.left + draws.width <= width)).all())
    area = (draws.height * draws.width).double() / (height * width)
    assert area.min() >= 0.05 and area.max() <= 1.0
    reference = v2.RandomResizedCrop(24)
    torch.manual_seed(0)
    image = torch.zeros(3, height, width)
    params = [reference.make_params([image]) for _ in range(6000)]
    for ours, key in ((draws.height, "height"), (draws.width, "width"), (draws.top, "top"),
                      (draws.left, "left")):
        theirs = statistics.mean(p[key] for p in params)
        assert abs(ours.double().mean().item() - theirs) < 0.05 * theirs + 0.3, key
    assert 0.45 < draws.flip.double().mean().item() < 0.55


def test_an_image_too_thin_for_any_try_gets_torchvision_fallback_box():
    draws = draw_resized_crops(3, 4, 200, generator=torch.Generator().manual_seed(0))
    params = v2.RandomResizedCrop(8).make_params([torch.zeros(1, 4, 200)])
    for index in range(3):
        assert draws.box(index) == (params["left"], params["top"], params["width"],
                                    params["height"]) == (97, 0, 5, 4)


def test_draws_from_a_generator_repeat_and_leave_the_global_state_alone():
    state = torch.get_rng_state()
    first = draw_resized_crops(8, 32, 32, generator=torch.Generator().manual_seed(9))
    second = draw_resized_crops(8, 32, 32, generator=torch.Generator().manual_seed(9))
    assert torch.equal(torch.get_rng_state(), state)
    for a, b in zip((first.top, first.left, first.height, first.width, first.flip),
                    (second.top, second.left, second.height, second.width, second.flip),
                    strict=True):
        assert torch.equal(a, b)


def test_flip_probability_decides_the_flips():
    never = draw_resized_crops(50, 32, 32, flip_probability=0.0)
    always = draw_resized_crops(50, 32, 32, flip_probability=1.0)
    assert not never.flip.any() and always.flip.all()


@pytest.mark.parametrize(("mode", "reference"), [("five_crop", v2.FiveCrop(24)),
                                                  ("ten_crop", v2.TenCrop(24))])
def test_multi_crops_equal_torchvision(mode, reference):
    images = _images(3, 3, 32, 45)
    expected = torch.stack([torch.stack(list(reference(image))) for image in images])
    assert torch.equal(multi_crops(images, 24, mode), expected)


def test_center_crops_equal_torchvision():
    images = _images(3, 1, 33, 45)
    expected = torch.stack([v2.CenterCrop(24)(image) for image in images])
    assert torch.equal(center_crops(images, 24), expected)


def test_wrong_inputs_are_refused_with_the_reason():
    with pytest.raises(TypeError, match="expected uint8 images"):
        resized_crops(torch.zeros(1, 3, 8, 8), draw_resized_crops(1, 8, 8), 4)
    with pytest.raises(ValueError, match="does not fit"):
        multi_crops(_images(1, 3, 16, 16), 24, "five_crop")
    with pytest.raises(ValueError, match="crop_mode: 'six_crop'"):
        multi_crops(_images(1, 3, 16, 16), 8, "six_crop")
