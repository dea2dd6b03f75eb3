"""Every odd or broken image file a user might collect, through every door it can come in by.

For each case a file is generated in a two-class dataset and sent through the verifying scan,
``load_image_uint8``, the augmentation preview, the training dataset and the thumbnail
decoder. A valid-but-unusual image must decode to the right pixels; a broken one must be
reported with its path and a reason, never crash, never hang (each case has a 3 s timeout).
"""

from __future__ import annotations

import builtins
import io
import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from workbench.core.data import image_decoding
from workbench.core.data.data_pipeline import ImageSampleDataset
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.decode_failures import read_failure_log
from workbench.core.data.five_crop_preview import five_crop_preview
from workbench.core.data.image_cache import ImageDecodeError, load_image_uint8
from workbench.core.data.image_decoding import MAX_DECODED_PIXELS, TRANSPARENT_BACKGROUND
from workbench.core.data.multicrop import IGNORE_LABEL
from workbench.core.data.transforms import build_train_transform
from workbench.core.runs.config import TrainConfig
from workbench.gui.widgets.thumbnail_browser import decode_thumbnail

# Pillow warns about what these cases are made of (bomb-sized headers, corrupt EXIF); the
# workbench's answer is the ImageDecodeError or the ignored orientation checked below.
pytestmark = [
    pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning"),
    pytest.mark.filterwarnings("ignore:Corrupt EXIF data:UserWarning"),
]

RESIZE = 32
CONFIG = TrainConfig(resize_size=RESIZE, crop_size=28, crop_mode="five_crop")
GREY = TRANSPARENT_BACKGROUND[0]
RED = (255, 0, 0)


# ----------------------------------------------------------------------------- file makers
def _solid(mode: str, size: tuple[int, int], colour) -> Image.Image:
    return Image.new(mode, size, colour)


def _encoded(image: Image.Image, format_name: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format_name, **options)
    return buffer.getvalue()


def _noise_rgb(size=(48, 40)) -> Image.Image:
    pixels = np.random.default_rng(0).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` RGB pixels, with no pixel data."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IEND", b"")


def _png_bomb(side: int) -> bytes:
    """A real, complete 1-bit PNG of side x side black pixels: a few KB that decode to ~side^2."""
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    row = b"\x00" * (1 + (side + 7) // 8)
    compressor = zlib.compressobj(9)
    data = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", data)
            + _png_chunk(b"IEND", b""))


def _jpeg_with_orientation(orientation) -> bytes:
    """A 40x20 JPEG, red in its stored top-left quarter, with an EXIF orientation tag."""
    image = _solid("RGB", (40, 20), (0, 0, 255))
    image.paste(RED, (0, 0, 20, 10))
    exif = Image.Exif()
    exif[0x0112] = orientation
    return _encoded(image, "JPEG", quality=95, exif=exif.tobytes())


def _jpeg_with_garbage_exif() -> bytes:
    data = _encoded(_solid("RGB", (40, 20), RED), "JPEG", quality=95)
    garbage = b"Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08\xff\xff" + bytes(range(256)) * 2
    segment = b"\xff\xe1" + struct.pack(">H", len(garbage) + 2) + garbage
    return data[:2] + segment + data[2:]


def _frames(format_name: str, colours) -> bytes:
    frames = [_solid("RGB", (24, 24), colour) for colour in colours]
    options = {"save_all": True, "append_images": frames[1:]}
    if format_name == "GIF":
        options["duration"] = 100
    return _encoded(frames[0], format_name, **options)


def _palette_with_transparency() -> bytes:
    image = Image.new("P", (24, 24), 0)
    image.putpalette([255, 0, 0] * 256)
    return _encoded(image, "PNG", transparency=0)


def _half_transparent_rgba() -> bytes:
    image = _solid("RGBA", (24, 24), (*RED, 255))
    image.paste((0, 0, 255, 0), (12, 0, 24, 24))  # right half: invisible blue
    return _encoded(image, "PNG")


def _sixteen_bit_bands() -> bytes:
    bands = np.repeat(np.array([[0, 32768, 65535]], dtype=np.uint16), 3, axis=1)
    pixels = np.repeat(np.repeat(bands, 24, axis=0), 4, axis=1)  # 24 x 36, three bands
    return _encoded(Image.fromarray(pixels), "PNG")


def _int32_tiff() -> bytes:
    return _encoded(Image.fromarray(np.full((24, 24), 65535, dtype=np.int32), "I"), "TIFF")


def _float_tiff() -> bytes:
    return _encoded(Image.fromarray(np.full((24, 24), 0.5, dtype=np.float32), "F"), "TIFF")


def _truncated(data: bytes, keep: float) -> bytes:
    return data[: int(len(data) * keep)]


def _flipped_ihdr(data: bytes) -> bytes:
    """The PNG with one bit of its width flipped, which its header checksum catches."""
    position = data.index(b"IHDR") + 7
    return data[:position] + bytes([data[position] ^ 0x01]) + data[position + 1:]


# ----------------------------------------------------------------------------- checks
def _mean_rgb(image: torch.Tensor) -> tuple[float, ...]:
    return tuple(float(v) for v in image.float().mean(dim=(1, 2)))


def _is(colour) -> Callable[[torch.Tensor], None]:
    def check(image: torch.Tensor) -> None:
        assert _mean_rgb(image) == pytest.approx(tuple(float(c) for c in colour), abs=3)
    return check


def _shape(height: int, width: int) -> Callable[[torch.Tensor], None]:
    def check(image: torch.Tensor) -> None:
        assert tuple(image.shape) == (3, height, width)
    return check


def _sixteen_bit_rescaled(image: torch.Tensor) -> None:
    # Bands 0, 32768 and 65535 become 0, 128 and 255 (clipping would give 0, 255, 255).
    row = image[0, image.shape[1] // 2]
    third = image.shape[2] // 3
    assert int(row[third // 2]) == 0
    assert abs(int(row[third + third // 2]) - 128) <= 1
    assert int(row[-third // 2]) == 255


def _half_grey(image: torch.Tensor) -> None:
    left, right = image[:, :, :8], image[:, :, -8:]
    assert _mean_rgb(left) == pytest.approx((255.0, 0.0, 0.0), abs=3)
    assert _mean_rgb(right) == pytest.approx((float(GREY),) * 3, abs=3)


def _rotated_clockwise(image: torch.Tensor) -> None:
    # Orientation 6: the stored 40x20 image is shown rotated 90 degrees clockwise, so it is
    # portrait and the stored top-left (red) corner is now the top-right.
    assert tuple(image.shape) == (3, 64, 32)
    assert _mean_rgb(image[:, :16, 16:]) == pytest.approx((255.0, 0.0, 0.0), abs=40)
    assert _mean_rgb(image[:, :16, :16])[2] > 200  # top-left is blue


def _rotated_half_turn(image: torch.Tensor) -> None:
    assert tuple(image.shape) == (3, 32, 64)
    assert _mean_rgb(image[:, 16:, 32:]) == pytest.approx((255.0, 0.0, 0.0), abs=40)


def _as_stored(image: torch.Tensor) -> None:
    assert tuple(image.shape) == (3, 32, 64)  # landscape: orientation ignored


# ----------------------------------------------------------------------------- the cases
@dataclass(frozen=True)
class Case:
    """A file to write and what each door must do with it."""

    name: str
    filename: str
    write: Callable[[Path], None]
    check: Callable[[torch.Tensor], None] | None = None  # None: decoding must fail
    reason: str = ""  # in the decode error's reason
    scan_reason: str = ""  # "" when the verifying scan accepts the file


def _bytes(data_or_maker) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        data = data_or_maker() if callable(data_or_maker) else data_or_maker
        path.write_bytes(data)
    return write


def _image(make: Callable[[], Image.Image], format_name: str, **options) -> Callable[[Path], None]:
    return _bytes(lambda: _encoded(make(), format_name, **options))


JPEG = _encoded(_noise_rgb(), "JPEG", quality=90)
PNG = _encoded(_noise_rgb(), "PNG")
WEBP = _encoded(_noise_rgb(), "WEBP", quality=90)
GIF = _encoded(_noise_rgb().convert("P"), "GIF")
BIG = f"{12000 * 12000:,}"

GOOD_CASES = [
    Case("rgb_png", "a.png", _bytes(PNG), _shape(32, 38)),
    Case("jpeg", "a.jpg", _bytes(JPEG), _shape(32, 38)),
    Case("cmyk_jpeg", "a.jpg", _image(lambda: _solid("CMYK", (24, 24), (0, 255, 255, 0)), "JPEG"),
         _is(RED)),
    Case("sixteen_bit_gray_png", "a.png", _bytes(_sixteen_bit_bands), _sixteen_bit_rescaled),
    Case("int32_tiff", "a.tif", _bytes(_int32_tiff), _is((255, 255, 255))),
    Case("float_tiff", "a.tif", _bytes(_float_tiff), _is((128, 128, 128))),
    Case("rgba_half_transparent", "a.png", _bytes(_half_transparent_rgba), _half_grey),
    Case("la_transparent", "a.png", _image(lambda: _solid("LA", (24, 24), (255, 0)), "PNG"),
         _is((GREY,) * 3)),
    Case("palette_transparency", "a.png", _bytes(_palette_with_transparency),
         _is((GREY,) * 3)),
    Case("gray_colour_key", "a.png",
         _image(lambda: _solid("L", (24, 24), 7), "PNG", transparency=7), _is((GREY,) * 3)),
    Case("one_bit", "a.png", _image(lambda: _solid("1", (24, 24), 1), "PNG"),
         _is((255, 255, 255))),
    Case("grayscale", "a.png", _image(lambda: _solid("L", (24, 24), 90), "PNG"),
         _is((90, 90, 90))),
    Case("exif_rotate_90", "a.jpg", _bytes(lambda: _jpeg_with_orientation(6)), _rotated_clockwise),
    Case("exif_rotate_180", "a.jpg", _bytes(lambda: _jpeg_with_orientation(3)),
         _rotated_half_turn),
    Case("exif_orientation_out_of_range", "a.jpg", _bytes(lambda: _jpeg_with_orientation(99)),
         _as_stored),
    Case("exif_garbage", "a.jpg", _bytes(_jpeg_with_garbage_exif), _as_stored),
    Case("animated_gif", "a.gif", _bytes(lambda: _frames("GIF", [RED, (0, 0, 255)])), _is(RED)),
    Case("multipage_tiff", "a.tiff", _bytes(lambda: _frames("TIFF", [RED, (0, 255, 0)])),
         _is(RED)),
    Case("webp", "a.webp", _bytes(WEBP), _shape(32, 38)),
    Case("bmp", "a.bmp", _image(lambda: _solid("RGB", (24, 24), RED), "BMP"), _is(RED)),
    Case("one_pixel", "a.png", _image(lambda: _solid("RGB", (1, 1), RED), "PNG"),
         _shape(32, 32)),
    Case("smaller_than_crop", "a.png", _image(lambda: _solid("RGB", (5, 7), RED), "PNG"),
         _shape(44, 32)),
    Case("upper_case_extension", "A.JPG", _bytes(JPEG), _shape(32, 38)),
    Case("panorama_within_limit", "a.png", _image(lambda: _solid("RGB", (400, 10), RED), "PNG"),
         _shape(32, 1280)),
]

BAD_CASES = [
    Case("zero_bytes", "a.jpg", _bytes(b""), reason="not an image Pillow can identify",
         scan_reason="empty file (0 bytes)"),
    Case("text_as_jpeg", "a.jpg", _bytes(b"just some notes, not a photo\n" * 20),
         reason="not an image Pillow can identify",
         scan_reason="not an image Pillow can identify"),
    Case("html_as_png", "a.png", _bytes(b"<!doctype html><html><body>404</body></html>"),
         reason="not an image Pillow can identify",
         scan_reason="not an image Pillow can identify"),
    Case("svg_as_png", "a.png", _bytes(b'<svg xmlns="http://www.w3.org/2000/svg"></svg>'),
         reason="not an image Pillow can identify",
         scan_reason="not an image Pillow can identify"),
    Case("heic_as_jpeg", "a.jpg", _bytes(b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00" * 8),
         reason="not an image Pillow can identify",
         scan_reason="not an image Pillow can identify"),
    Case("pdf_as_jpeg", "a.jpg", _bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" * 10),
         reason="not an image Pillow can identify",
         scan_reason="not an image Pillow can identify"),
    Case("truncated_jpeg", "a.jpg", _bytes(lambda: _truncated(JPEG, 0.5)), reason="truncated"),
    Case("truncated_png", "a.png", _bytes(lambda: _truncated(PNG, 0.5)), reason="truncated"),
    # Pillow's WebP reader decodes when it opens a file, so even the scan sees the damage.
    Case("truncated_webp", "a.webp", _bytes(lambda: _truncated(WEBP, 0.5)),
         reason="cannot decode image", scan_reason="cannot decode image"),
    Case("truncated_gif", "a.gif", _bytes(lambda: _truncated(GIF, 0.5)),
         reason="cannot decode image"),
    Case("jpeg_header_only", "a.jpg", _bytes(lambda: JPEG[:200]), reason="cannot decode image",
         scan_reason="cannot decode image"),
    Case("png_bad_header_checksum", "a.png", _bytes(lambda: _flipped_ihdr(PNG)),
         reason="not an image Pillow can identify",
         scan_reason="not an image Pillow can identify"),
    Case("png_bomb_header", "a.png", _bytes(lambda: _png_header_only(12000, 12000)),
         reason=BIG, scan_reason=BIG),
    Case("png_bomb_real", "a.png", _bytes(lambda: _png_bomb(12000)), reason=BIG, scan_reason=BIG),
    Case("png_far_beyond_limit", "a.png", _bytes(lambda: _png_header_only(20000, 20000)),
         reason="too large to decode safely", scan_reason="too large to decode safely"),
    Case("too_elongated", "a.png", _image(lambda: _solid("RGB", (2000, 1), RED), "PNG"),
         reason="too elongated", scan_reason="too elongated"),
]


def _dataset_with(tmp_path: Path, case: Case) -> Path:
    root = tmp_path / "data"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        (root / name / "good.png").write_bytes(PNG)
    path = root / "a" / case.filename
    case.write(path)
    return path


def _scan_verdict(path: Path) -> str:
    scan = scan_dataset(path.parents[1], val_fraction=0.5, verify=True)
    samples = {p for p, _ in scan.train + scan.val}
    reasons = {s.path: s.reason for s in scan.skipped}
    assert (str(path) in samples) != (str(path) in reasons)
    return reasons.get(str(path), "")


def _decode_everywhere(path: Path, log: Path):
    """The outcome of each door: a tensor or an ImageDecodeError, per door."""
    outcomes = {}
    for door, call in (
        ("load", lambda: load_image_uint8(str(path), RESIZE)),
        ("preview", lambda: five_crop_preview(str(path), CONFIG)),
        ("thumbnail", lambda: decode_thumbnail(str(path), 64)),
    ):
        try:
            outcomes[door] = call()
        except ImageDecodeError as exc:
            outcomes[door] = exc
    dataset = ImageSampleDataset([(str(path), 1)], build_train_transform(CONFIG), RESIZE, False,
                                 None, str(log))
    outcomes["dataset"] = dataset[0]
    return outcomes


@pytest.mark.timeout(3)
@pytest.mark.parametrize("case", GOOD_CASES, ids=lambda case: case.name)
def test_valid_but_unusual_image_decodes_alike_everywhere(tmp_path: Path, case: Case) -> None:
    path = _dataset_with(tmp_path, case)
    assert _scan_verdict(path) == ""
    outcomes = _decode_everywhere(path, tmp_path / "failures.tsv")

    image = outcomes["load"]
    assert isinstance(image, torch.Tensor) and image.dtype == torch.uint8
    assert min(image.shape[1:]) == RESIZE
    case.check(image)
    preview = outcomes["preview"]
    assert np.array_equal(preview.train.resized, image.permute(1, 2, 0).numpy())
    assert len(preview.train.crops) == 5 and preview.train.crops[0].shape == (28, 28, 3)
    crops, label = outcomes["dataset"]
    assert label == 1 and tuple(crops.shape) == (5, 3, 28, 28)
    thumbnail = outcomes["thumbnail"]
    assert thumbnail.dtype == np.uint8 and thumbnail.ndim == 3 and max(thumbnail.shape) <= 64
    # Pillow may warn (garbage EXIF): a warning line in the log is no failure.
    assert read_failure_log(str(tmp_path / "failures.tsv")) == []


@pytest.mark.timeout(3)
@pytest.mark.parametrize("case", BAD_CASES, ids=lambda case: case.name)
def test_broken_image_is_reported_by_path_and_reason_everywhere(
    tmp_path: Path, case: Case
) -> None:
    path = _dataset_with(tmp_path, case)
    scan_reason = _scan_verdict(path)
    assert case.scan_reason in scan_reason if case.scan_reason else scan_reason == ""
    outcomes = _decode_everywhere(path, tmp_path / "failures.tsv")

    for door in ("load", "preview", "thumbnail"):
        error = outcomes[door]
        assert isinstance(error, ImageDecodeError), door
        assert error.path == str(path) and str(path) in str(error)
        assert case.reason in error.reason, (door, error.reason)
    crops, label = outcomes["dataset"]
    assert label == IGNORE_LABEL and not crops.any()
    [(logged_path, logged_reason)] = read_failure_log(str(tmp_path / "failures.tsv"))
    assert logged_path == str(path) and case.reason in logged_reason


@pytest.mark.timeout(3)
def test_a_bomb_is_refused_before_its_pixels_are_allocated(tmp_path: Path) -> None:
    path = tmp_path / "bomb.png"
    path.write_bytes(_png_bomb(12000))
    with pytest.raises(ImageDecodeError) as error:
        load_image_uint8(str(path), RESIZE)
    assert f"{MAX_DECODED_PIXELS:,}" in error.value.reason
    assert Image.MAX_IMAGE_PIXELS == 89478485  # the global is left as Pillow ships it
    from PIL import ImageFile

    assert ImageFile.LOAD_TRUNCATED_IMAGES is False


@pytest.mark.timeout(3)
def test_a_big_jpeg_is_decoded_reduced_where_a_png_of_that_size_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A smaller limit stands in for a 100-megapixel photo: draft() decodes the JPEG at 1/4,
    # under the limit, while the PNG of the same size must decode whole and is refused.
    monkeypatch.setattr(image_decoding, "MAX_DECODED_PIXELS", 160 * 160)
    picture = _noise_rgb((200, 200))
    (tmp_path / "big.jpg").write_bytes(_encoded(picture, "JPEG"))
    (tmp_path / "big.png").write_bytes(_encoded(picture, "PNG"))
    assert tuple(load_image_uint8(str(tmp_path / "big.jpg"), RESIZE).shape) == (3, 32, 32)
    with pytest.raises(ImageDecodeError, match="40,000 pixels; the limit is 25,600"):
        load_image_uint8(str(tmp_path / "big.png"), RESIZE)


@pytest.mark.timeout(3)
@pytest.mark.parametrize("kind", ["fifo", "dangling_symlink", "symlink_loop", "folder"])
def test_a_path_that_is_not_a_readable_file_is_reported_without_blocking(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "a.jpg"
    if kind == "fifo":
        os.mkfifo(path)  # opening it for reading would block forever
    elif kind == "dangling_symlink":
        path.symlink_to(tmp_path / "gone.jpg")
    elif kind == "symlink_loop":
        path.symlink_to(path)
    else:
        path.mkdir()
    for call in (lambda: load_image_uint8(str(path), RESIZE),
                 lambda: five_crop_preview(str(path), CONFIG),
                 lambda: decode_thumbnail(str(path), 64)):
        with pytest.raises(ImageDecodeError) as error:
            call()
        assert error.value.path == str(path)
        assert error.value.reason.startswith(("cannot open file", "not a regular file"))


@pytest.mark.timeout(3)
def test_a_file_the_os_refuses_to_read_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tests run as root, for whom chmod does not block reads: refuse at open() instead.
    path = _dataset_with(tmp_path, Case("locked", "locked.png", _bytes(PNG)))
    real_open = builtins.open

    def refusing_open(file, *args, **kwargs):
        if os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing_open)
    assert _scan_verdict(path) == "cannot read file (Permission denied)"
    with pytest.raises(ImageDecodeError) as error:
        load_image_uint8(str(path), RESIZE)
    assert error.value.path == str(path)
    assert error.value.reason == "cannot read file (Permission denied)"


@pytest.mark.timeout(3)
def test_transparency_is_filled_alike_in_training_preview_and_thumbnail(tmp_path: Path) -> None:
    path = tmp_path / "logo.png"
    path.write_bytes(_encoded(_solid("RGBA", (40, 40), (0, 0, 0, 0)), "PNG"))
    trained = load_image_uint8(str(path), RESIZE)
    previewed = five_crop_preview(str(path), CONFIG).val.resized
    thumbnail = decode_thumbnail(str(path), 64)
    for pixels in (trained.numpy(), previewed, thumbnail):
        assert np.all(pixels == GREY)
