"""The preview shows exactly what the model receives, for every crop mode, without blocking."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw
from torchvision.transforms.v2 import functional as F

from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.five_crop_preview import five_crop_preview
from workbench.core.data.generated.synthetic_images import draw_shape_image
from workbench.core.data.image_cache import ImageDecodeError, load_image_uint8
from workbench.core.data.transforms import (
    build_eval_transform,
    build_train_transform,
    normalization_for,
    train_source_size,
)
from workbench.core.runs.config import TrainConfig


def _photo(tmp_path: Path, size=(64, 48), name="photo.png") -> Path:
    path = tmp_path / name
    draw_shape_image("triangle", size, random.Random(4)).save(path)
    return path


def _config(**changes) -> TrainConfig:
    return TrainConfig(resize_size=40, crop_size=32, **changes)


def _region(resized: np.ndarray, box) -> np.ndarray:
    left, top, width, height = box
    return resized[top:top + height, left:left + width]


def _assert_close(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 1


@pytest.mark.parametrize("model", ["resnet18", "small_cnn"])
def test_crops_equal_the_denormalised_batch_the_model_receives(tmp_path: Path, model) -> None:
    path = _photo(tmp_path)
    config = _config(crop_mode="five_crop", model=model, weights="none")
    preview = five_crop_preview(str(path), config)

    grayscale = model == "small_cnn"
    crops = build_eval_transform(config)(load_image_uint8(str(path), 40, grayscale))
    mean, std = normalization_for(config)
    floats, _ = BatchPreparer(mean, std, "cpu", channels_last=True)(
        crops.unsqueeze(0), torch.tensor([0])
    )
    channels = floats.shape[1]
    pixels = (floats * torch.tensor(std).view(1, channels, 1, 1)
              + torch.tensor(mean).view(1, channels, 1, 1)) * 255
    for shown, model_input in zip(preview.val.crops, pixels, strict=True):
        expected = model_input.round().clamp(0, 255).byte().permute(1, 2, 0)
        expected = expected.expand(-1, -1, 3).numpy()
        assert shown.dtype == np.uint8 and shown.shape == (32, 32, 3)
        _assert_close(shown, expected)
    if grayscale:
        assert all(np.array_equal(c[..., 0], c[..., 2]) for c in preview.val.crops)


def test_five_crop_boxes_labels_and_regions(tmp_path: Path) -> None:
    path = _photo(tmp_path)
    preview = five_crop_preview(str(path), _config(crop_mode="five_crop"))
    assert preview.path == str(path) and preview.original_size == (64, 48)
    for view in (preview.train, preview.val):
        assert view.resized.shape == (40, 53, 3) and view.resized.dtype == np.uint8
        assert view.labels == ["top-left", "top-right", "bottom-left", "bottom-right", "center"]
        assert view.boxes == [(0, 0, 32, 32), (21, 0, 32, 32), (0, 8, 32, 32),
                              (21, 8, 32, 32), (10, 4, 32, 32)]
        for crop, box in zip(view.crops, view.boxes, strict=True):
            _assert_close(crop, _region(view.resized, box))
    for train_crop, val_crop in zip(preview.train.crops, preview.val.crops, strict=True):
        assert np.array_equal(train_crop, val_crop)


def test_ten_crop_flipped_crops_come_from_their_boxes_mirrored(tmp_path: Path) -> None:
    path = _photo(tmp_path)
    view = five_crop_preview(str(path), _config(crop_mode="ten_crop")).val
    assert len(view.crops) == len(view.boxes) == len(view.labels) == 10
    assert view.labels[5] == "top-right (flipped)" and view.labels[9] == "center (flipped)"
    for index, (crop, box) in enumerate(zip(view.crops, view.boxes, strict=True)):
        region = _region(view.resized, box)
        _assert_close(crop, region[:, ::-1] if index >= 5 else region)


def test_standard_mode_shows_the_seeded_random_crop_and_the_center(tmp_path: Path) -> None:
    path = _photo(tmp_path)
    config = _config(crop_mode="standard")
    state = torch.get_rng_state()
    previews = [five_crop_preview(str(path), config, seed=seed) for seed in range(6)]
    assert torch.equal(torch.get_rng_state(), state)

    again = five_crop_preview(str(path), config, seed=0)
    assert again.train.boxes == previews[0].train.boxes
    assert np.array_equal(again.train.crops[0], previews[0].train.crops[0])
    assert len({tuple(p.train.boxes[0]) for p in previews}) > 1
    for preview in previews:
        assert preview.val.boxes == [(10, 4, 32, 32)] and preview.val.labels == ["center"]
        (left, top, width, height), = preview.train.boxes
        label, = preview.train.labels
        resized = torch.from_numpy(preview.train.resized).permute(2, 0, 1)
        expected = F.resized_crop(resized, top, left, height, width, [32, 32], antialias=True)
        if label == "random crop (flipped)":
            expected = expected.flip(-1)
        else:
            assert label == "random crop"
        _assert_close(preview.train.crops[0], expected.permute(1, 2, 0).numpy())


def test_pil_image_input_and_exif_rotated_size(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 8
    path = tmp_path / "rotated.jpg"
    draw_shape_image("cross", (64, 48), random.Random(0)).save(path, exif=exif)
    with Image.open(path) as image:
        preview = five_crop_preview(image, _config(crop_mode="five_crop"))
    assert preview.original_size == (48, 64)
    assert preview.path == str(path)
    assert preview.val.resized.shape == (53, 40, 3)
    from_path = five_crop_preview(str(path), _config(crop_mode="five_crop"))
    assert from_path.original_size == (48, 64)
    assert np.array_equal(from_path.val.resized, preview.val.resized)


def test_large_jpeg_previews_quickly_through_draft_decoding(tmp_path: Path, draft_scales) -> None:
    path = tmp_path / "large.jpg"
    image = Image.new("RGB", (6000, 4000), (40, 70, 100))
    ImageDraw.Draw(image).ellipse((1500, 800, 4500, 3600), fill=(220, 180, 40))
    image.save(path, quality=90)
    del image
    scales = draft_scales
    started = time.perf_counter()
    preview = five_crop_preview(str(path), TrainConfig(crop_mode="five_crop"))
    elapsed = time.perf_counter() - started
    assert scales == [8]  # decoded at 750x500 instead of 6000x4000
    assert preview.original_size == (6000, 4000)
    assert preview.val.resized.shape == (256, 384, 3)
    assert elapsed < 1.0


def test_undecodable_file_raises_decode_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.png"
    path.write_bytes(b"not a png")
    with pytest.raises(ImageDecodeError, match="broken.png"):
        five_crop_preview(str(path), _config())


ALL_AUGMENTATIONS = {
    "color_jitter_brightness": 0.4, "color_jitter_contrast": 0.4,
    "color_jitter_saturation": 0.4, "color_jitter_hue": 0.1, "rotation_degrees": 20.0,
    "auto_augment": "rand_augment", "mixup_alpha": 0.2, "cutmix_alpha": 1.0,
}


@pytest.mark.parametrize("model", ["resnet18", "small_cnn"])
def test_the_augmented_preview_is_what_trainings_transform_gives_for_the_seed(
        tmp_path: Path, model) -> None:
    path = _photo(tmp_path, size=(80, 60))
    config = _config(crop_mode="standard", model=model, weights="none", **ALL_AUGMENTATIONS)
    grayscale = model == "small_cnn"
    # Training decodes the random crop's source at train_source_size, as the preview does.
    size, upscale = train_source_size(config)
    source = load_image_uint8(str(path), size, grayscale, upscale=upscale)
    mean, std = normalization_for(config)
    preparer = BatchPreparer(mean, std, "cpu", channels_last=False)
    shown = []
    for seed in (0, 1, 2):
        preview = five_crop_preview(str(path), config, seed=seed)
        # The images kept on the device crop and augment a batch with a seeded generator.
        crop = build_train_transform(config).batch(source.unsqueeze(0),
                                                   torch.Generator().manual_seed(seed))
        floats, _ = preparer(crop, torch.tensor([0]))
        expected = preparer.denormalize(floats)[0].expand(3, -1, -1).permute(1, 2, 0).numpy()
        assert np.array_equal(preview.train.crops[0], expected)
        assert preview.train.labels[0].endswith(
            "\n+ rotation \u00b120\u00b0\n+ colour jitter\n+ RandAugment")
        assert "mixup (alpha 0.2) or cutmix (alpha 1)" in preview.mixing_note
        shown.append(preview.train.crops[0])
    assert not np.array_equal(shown[0], shown[1]), "a new seed is a new draw"
    plain = five_crop_preview(str(path), _config(crop_mode="standard", model=model,
                                                 weights="none"), seed=0)
    assert not np.array_equal(plain.train.crops[0], shown[0])
    assert plain.train.boxes == five_crop_preview(str(path), config, seed=0).train.boxes
    assert plain.mixing_note == ""


def _class_folders(tmp_path: Path) -> tuple[Path, Path]:
    """train/circle/a.png and train/square/b.png: two classes that look nothing alike."""
    first = tmp_path / "train" / "circle" / "a.png"
    second = tmp_path / "train" / "square" / "b.png"
    for path, shape, seed in ((first, "circle", 1), (second, "square", 2)):
        path.parent.mkdir(parents=True)
        draw_shape_image(shape, (64, 48), random.Random(seed)).save(path)
    (tmp_path / "train" / "square" / "notes.txt").write_text("not an image")
    return first, second


def _own_share(label: str) -> float:
    return int(label.split(": ")[1].split("%")[0]) / 100


def test_mixup_is_drawn_with_an_image_of_another_class(tmp_path: Path) -> None:
    first, second = _class_folders(tmp_path)
    from workbench.core.data.five_crop_preview import mixing_partner

    assert mixing_partner(str(first), seed=0) == str(second)
    lone = tmp_path / "one-class" / "only"
    lone.mkdir(parents=True)
    assert mixing_partner(str(_photo(lone)), seed=0) is None  # no class folder beside it
    config = _config(crop_mode="standard", mixup_alpha=0.4)
    before = torch.get_rng_state()
    preview = five_crop_preview(str(first), config, seed=3, partner=str(second))
    assert torch.equal(torch.get_rng_state(), before)
    assert len(preview.train.crops) == 2 and len(preview.train.boxes) == 1
    label = preview.train.labels[1]
    assert label.startswith("after mixup: ") and label.endswith("square/b.png")
    share = _own_share(label)
    assert 0.0 < share < 1.0
    assert "square/b.png" in preview.mixing_note and "not drawn" not in preview.mixing_note
    # Each pixel is the share-weighted blend of the two training crops (the partner's drawn
    # with the next seed), as the model receives them.
    plain = _config(crop_mode="standard")
    own = five_crop_preview(str(first), plain, seed=3).train.crops[0].astype(float)
    theirs = five_crop_preview(str(second), plain, seed=4).train.crops[0].astype(float)
    assert np.array_equal(preview.train.crops[0], own.astype(np.uint8))
    blend = share * own + (1 - share) * theirs
    assert np.abs(preview.train.crops[1].astype(float) - blend).max() <= 0.005 * 255 + 1


def test_cutmix_pastes_a_box_of_the_other_image_in_the_share_its_label_says(
        tmp_path: Path) -> None:
    first, second = _class_folders(tmp_path)
    config = _config(crop_mode="standard", cutmix_alpha=1.0)
    plain = _config(crop_mode="standard")
    for seed in range(6):
        preview = five_crop_preview(str(first), config, seed=seed, partner=str(second))
        assert preview.train.labels[1].startswith("after cutmix: ")
        own = five_crop_preview(str(first), plain, seed=seed).train.crops[0]
        theirs = five_crop_preview(str(second), plain, seed=seed + 1).train.crops[0]
        mixed = preview.train.crops[1]
        from_own = (mixed == own).all(axis=2)
        from_theirs = (mixed == theirs).all(axis=2)
        assert (from_own | from_theirs).all(), "every pixel comes from one of the two crops"
        differing = ~(own == theirs).all(axis=2)
        if differing.any():
            taken = from_own[differing].mean()
            assert abs(taken - _own_share(preview.train.labels[1])) <= 0.15


def test_mixing_without_a_readable_partner_says_why_and_shows_one_tile(tmp_path: Path) -> None:
    first, _ = _class_folders(tmp_path)
    broken = tmp_path / "train" / "square" / "broken.png"
    broken.write_bytes(b"not a png")
    config = _config(crop_mode="standard", mixup_alpha=0.2)
    preview = five_crop_preview(str(first), config, seed=0, partner=str(broken))
    assert len(preview.train.crops) == 1
    assert "cannot be read" in preview.mixing_note and "broken.png" in preview.mixing_note
    alone = five_crop_preview(str(first), config, seed=0)
    assert len(alone.train.crops) == 1 and "not drawn here" in alone.mixing_note
