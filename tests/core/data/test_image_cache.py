"""load_image_uint8 on real files: resize, draft decoding, orientation, the disk cache, errors."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from workbench.core.data import image_cache
from workbench.core.data.generated.synthetic_images import draw_shape_image
from workbench.core.data.image_cache import (
    ImageDecodeError,
    cache_path,
    load_image_uint8,
    read_image_size,
)


def _photo(path: Path, size: tuple[int, int], seed: int = 0, **save: object) -> Path:
    draw_shape_image("circle", size, random.Random(seed)).save(path, **save)
    return path


def _reference(path: Path, target: tuple[int, int], mode: str = "RGB") -> np.ndarray:
    """Full decode + Pillow bilinear resize, as [C,H,W]."""
    with Image.open(path) as image:
        array = np.asarray(image.convert(mode).resize(target, Image.Resampling.BILINEAR))
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


def _torch_reference(path: Path, target: tuple[int, int], mode: str = "RGB") -> np.ndarray:
    """Full decode + torch's antialiased bilinear resize, as [C,H,W]."""
    with Image.open(path) as image:
        array = torch.from_numpy(np.array(image.convert(mode)))
    planes = array[None, None] if array.dim() == 2 else array.permute(2, 0, 1)[None]
    resized = torch.nn.functional.interpolate(planes.float(), size=target[::-1],
                                              mode="bilinear", antialias=True)
    return resized[0].round().clamp(0, 255).to(torch.uint8).numpy()


def _within_one_level(ours: np.ndarray, reference: np.ndarray) -> bool:
    return ours.shape == reference.shape and \
        int(np.abs(ours.astype(int) - reference.astype(int)).max()) <= 1


@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_small_downscale_is_torch_antialiased_bilinear_within_a_level_of_pillow(
        tmp_path: Path, mode: str) -> None:
    path = _photo(tmp_path / "wide.png", (64, 48))  # 1.5x down: torch resizes
    image = load_image_uint8(str(path), 32, grayscale=mode == "L")
    assert image.dtype == torch.uint8 and image.is_contiguous()
    assert tuple(image.shape) == ((3 if mode == "RGB" else 1), 32, 42)  # int(32 * 64 / 48)
    assert _within_one_level(image.numpy(), _torch_reference(path, (42, 32), mode))
    assert _within_one_level(image.numpy(), _reference(path, (42, 32), mode))


def test_large_downscale_is_pillows_resize(tmp_path: Path) -> None:
    path = _photo(tmp_path / "wide.png", (256, 192))  # 6x down: Pillow reduces, then resizes
    image = load_image_uint8(str(path), 32)
    assert tuple(image.shape) == (3, 32, 42)
    with Image.open(path) as source:
        expected = np.asarray(source.convert("RGB").resize((42, 32), Image.Resampling.BILINEAR,
                                                           reducing_gap=3.0))
    assert np.array_equal(image.numpy(), expected.transpose(2, 0, 1))


def test_tall_and_alpha_and_palette_images_become_rgb(tmp_path: Path) -> None:
    tall = _photo(tmp_path / "tall.png", (30, 50))
    assert tuple(load_image_uint8(str(tall), 20).shape) == (3, 33, 20)
    Image.new("RGBA", (40, 40), (10, 20, 30, 0)).save(tmp_path / "alpha.png")
    Image.new("P", (40, 40), 7).save(tmp_path / "palette.png")
    for name in ("alpha.png", "palette.png"):
        assert tuple(load_image_uint8(str(tmp_path / name), 16).shape) == (3, 16, 16)


def test_large_jpeg_is_draft_decoded_close_to_full_decode(tmp_path: Path, draft_scales) -> None:
    path = _photo(tmp_path / "photo.jpg", (800, 600), quality=90)
    scales = draft_scales
    image = load_image_uint8(str(path), 64)

    assert scales == [8]  # 800x600 -> decoded at 100x75, never below the 85x64 target
    assert tuple(image.shape) == (3, 64, 85)
    difference = np.abs(image.numpy().astype(int) - _reference(path, (85, 64)).astype(int))
    assert difference.mean() < 3.0


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    base = Image.new("RGB", (60, 40), (255, 0, 0))
    base.paste((0, 0, 255), (0, 0, 30, 40))  # left half blue
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways, displayed rotated 90 degrees clockwise
    path = tmp_path / "rotated.jpg"
    base.save(path, exif=exif, quality=95)

    image = load_image_uint8(str(path), 40)

    assert tuple(image.shape) == (3, 60, 40)
    assert read_image_size(str(path)) == (40, 60)
    top, bottom = image[:, 5, 20].tolist(), image[:, 55, 20].tolist()
    assert top[2] > 200 and top[0] < 60  # the blue half is on top after rotation
    assert bottom[0] > 200 and bottom[2] < 60


def test_cache_is_written_then_reused_without_decoding(tmp_path: Path, monkeypatch) -> None:
    path = _photo(tmp_path / "a.png", (64, 48))
    cache = tmp_path / "cache"
    first = load_image_uint8(str(path), 32, cache_dir=str(cache))
    stored = cache_path(str(path), 32, False, cache)
    assert stored.is_file() and np.array_equal(np.load(stored), first.numpy())
    assert cache_path(str(path), 32, True, cache) != stored
    assert cache_path(str(path), 24, False, cache) != stored

    def no_decoding(*args):
        raise AssertionError("a cached image was decoded again")

    monkeypatch.setattr(image_cache, "decode_file", no_decoding)
    again = load_image_uint8(str(path), 32, cache_dir=str(cache))
    assert torch.equal(first, again)


def test_edited_source_is_decoded_afresh(tmp_path: Path) -> None:
    path = _photo(tmp_path / "a.png", (64, 48), seed=1)
    cache = str(tmp_path / "cache")
    before = load_image_uint8(str(path), 32, cache_dir=cache)
    _photo(path, (64, 48), seed=2)
    os.utime(path, ns=(10**18, 10**18))
    after = load_image_uint8(str(path), 32, cache_dir=cache)
    assert not torch.equal(before, after)
    assert np.array_equal(after.numpy(), load_image_uint8(str(path), 32))  # decoded afresh


@pytest.mark.parametrize(
    "damage",
    [
        lambda file: file.write_bytes(b"garbage, not numpy"),
        lambda file: file.write_bytes(file.read_bytes()[:100]),
        lambda file: np.save(file, np.zeros((3, 10, 10), np.uint8)),  # wrong size
        lambda file: np.save(file, np.zeros((3, 32, 42), np.float32)),  # wrong dtype
    ],
)
def test_corrupted_cache_file_is_ignored_and_rewritten(tmp_path: Path, damage) -> None:
    path = _photo(tmp_path / "a.png", (64, 48))
    cache = tmp_path / "cache"
    expected = load_image_uint8(str(path), 32, cache_dir=str(cache))
    stored = cache_path(str(path), 32, False, cache)
    damage(stored)

    assert torch.equal(load_image_uint8(str(path), 32, cache_dir=str(cache)), expected)
    assert np.array_equal(np.load(stored), expected.numpy())


def test_cached_load_is_a_plain_file_read(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    small = draw_shape_image("ring", (171, 128), random.Random(0))
    small.resize((1365, 1024), Image.Resampling.BILINEAR).save(path, compress_level=1)
    cache = str(tmp_path / "cache")
    started = time.perf_counter()
    first = load_image_uint8(str(path), 256, cache_dir=cache)
    cold = time.perf_counter() - started
    assert tuple(first.shape) == (3, 256, 341)
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        load_image_uint8(str(path), 256, cache_dir=cache)
        timings.append(time.perf_counter() - started)
    cached = sorted(timings)[len(timings) // 2]
    assert cached < 0.005
    assert cached < cold / 4


@pytest.mark.parametrize(
    ("write", "reason"),
    [
        (lambda p: p.write_bytes(b"definitely not an image"), "not an image Pillow can identify"),
        (lambda p: p.write_bytes(_jpeg_bytes()[:600]), "cannot decode image"),
        (lambda p: None, "cannot open file"),
    ],
)
def test_undecodable_file_raises_with_path_and_reason(tmp_path: Path, write, reason) -> None:
    path = tmp_path / "bad.jpg"
    write(path)
    with pytest.raises(ImageDecodeError) as error:
        load_image_uint8(str(path), 32, cache_dir=str(tmp_path / "cache"))
    assert error.value.path == str(path)
    assert reason in error.value.reason
    assert str(path) in str(error.value)


def _jpeg_bytes() -> bytes:
    import io

    buffer = io.BytesIO()
    draw_shape_image("square", (64, 48), random.Random(0)).save(buffer, format="JPEG")
    return buffer.getvalue()
