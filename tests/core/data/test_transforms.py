"""Train and eval transforms on uint8 tensors, for every crop mode."""

from __future__ import annotations

import pytest
import torch
from torchvision.transforms import v2

from workbench.core.data.batched_crops import multi_crop_boxes
from workbench.core.data.transforms import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    RandomResizedCropFlip,
    build_eval_transform,
    build_train_transform,
    normalization_for,
    seeded_train_crop,
)
from workbench.core.runs.config import TrainConfig


def _image(channels: int = 3, height: int = 32, width: int = 45) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (channels, height, width), dtype=torch.uint8,
                         generator=generator)


def _config(**changes) -> TrainConfig:
    return TrainConfig(resize_size=32, crop_size=24, **changes)


def test_normalization_for_each_model() -> None:
    assert normalization_for(_config()) == (IMAGENET_MEAN, IMAGENET_STD)
    assert IMAGENET_MEAN == (0.485, 0.456, 0.406) and IMAGENET_STD == (0.229, 0.224, 0.225)
    assert normalization_for(_config(model="small_cnn")) == ((0.1307,), (0.3081,))


def test_standard_eval_is_the_center_crop() -> None:
    image = _image()
    out = build_eval_transform(_config(crop_mode="standard"))(image)
    assert out.dtype == torch.uint8
    assert torch.equal(out, image[:, 4:28, 10:34])  # round((32-24)/2), round((45-24)/2)


def test_standard_train_is_random_and_keeps_uint8() -> None:
    image = _image()
    transform = build_train_transform(_config(crop_mode="standard"))
    outputs = []
    for seed in range(4):
        torch.manual_seed(seed)
        outputs.append(transform(image))
    assert all(o.dtype == torch.uint8 and tuple(o.shape) == (3, 24, 24) for o in outputs)
    assert not all(torch.equal(outputs[0], o) for o in outputs[1:])


def test_train_hflip_setting_decides_the_flip() -> None:
    image = _image()
    with_flip = build_train_transform(_config(crop_mode="standard"))
    without = build_train_transform(_config(crop_mode="standard", train_hflip=False))
    assert isinstance(with_flip, RandomResizedCropFlip) and with_flip.flip_probability == 0.5
    assert isinstance(without, RandomResizedCropFlip) and without.flip_probability == 0.0
    flipped_any = False
    for seed in range(8):
        torch.manual_seed(seed)
        plain = without(image)
        torch.manual_seed(seed)
        maybe = with_flip(image)
        assert torch.equal(maybe, plain) or torch.equal(maybe, plain.flip(-1))
        flipped_any |= not torch.equal(maybe, plain)
    assert flipped_any


@pytest.mark.parametrize("channels", [3, 1])
def test_five_crop_is_deterministic_and_identical_for_train_and_eval(channels: int) -> None:
    image = _image(channels)
    config = _config(crop_mode="five_crop")
    train = build_train_transform(config)(image)
    assert train.dtype == torch.uint8 and tuple(train.shape) == (5, channels, 24, 24)
    assert torch.equal(train, build_eval_transform(config)(image))
    assert torch.equal(train, build_train_transform(config)(image))
    boxes = multi_crop_boxes(45, 32, 24, "five_crop")
    assert boxes == [(0, 0, 24, 24), (21, 0, 24, 24), (0, 8, 24, 24), (21, 8, 24, 24),
                     (10, 4, 24, 24)]
    for crop, (left, top, w, h) in zip(train, boxes, strict=True):
        assert torch.equal(crop, image[:, top:top + h, left:left + w])


def test_ten_crop_second_half_is_mirrored() -> None:
    image = _image()
    config = _config(crop_mode="ten_crop")
    out = build_eval_transform(config)(image)
    assert tuple(out.shape) == (10, 3, 24, 24)
    assert torch.equal(out, build_train_transform(config)(image))
    boxes = multi_crop_boxes(45, 32, 24, "ten_crop")
    assert boxes[5] == (21, 0, 24, 24)  # mirror's top-left is the original's top-right
    for index, (left, top, w, h) in enumerate(boxes):
        region = image[:, top:top + h, left:left + w]
        expected = region.flip(-1) if index >= 5 else region
        assert torch.equal(out[index], expected)


def test_unknown_crop_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="crop_mode: 'six_crop'"):
        build_eval_transform(_config(crop_mode="six_crop"))


def test_standard_train_crop_is_torchvision_random_resized_crop_within_one_level() -> None:
    image = _image()
    transform = build_train_transform(_config(crop_mode="standard", train_hflip=False))
    for seed in range(10):
        draws = transform.draw(image, torch.Generator().manual_seed(seed))
        left, top, width, height = draws.box(0)
        expected = v2.functional.resized_crop(image, top, left, height, width, [24, 24],
                                              antialias=True)
        assert (transform.apply(image, draws).int() - expected.int()).abs().max() <= 1


def test_seeded_train_crop_equals_the_train_transform_and_spares_global_state() -> None:
    image = _image()
    config = _config(crop_mode="standard")
    transform = build_train_transform(config)
    flips = set()
    for seed in range(12):
        torch.manual_seed(seed)
        expected = transform(image)
        state = torch.get_rng_state()
        crop, box, flipped = seeded_train_crop(config, image, torch.Generator().manual_seed(seed))
        assert torch.equal(torch.get_rng_state(), state)
        assert torch.equal(crop, expected)
        left, top, width, height = box
        assert 0 <= left and left + width <= 45 and 0 <= top and top + height <= 32
        flips.add(flipped)
    assert flips == {True, False}
