"""Turn whatever image file a user collected into plain 8-bit pixels, or say why it cannot be.

One path for training, preview and thumbnails, so they agree on every odd case:

- Size: a file whose decoded size exceeds ``MAX_DECODED_PIXELS`` is refused before its pixels
  are allocated. JPEGs are first scaled down while decoding (``Image.draft``), so a huge photo
  is only refused when even the reduced decode is too large. Pillow's global
  ``MAX_IMAGE_PIXELS`` and ``LOAD_TRUNCATED_IMAGES`` are left alone: a truncated file is an
  error, never silently grey.
- Shape: an image whose sides differ more than ``MAX_ASPECT_RATIO`` times is refused, because
  resizing its shorter side would make an enormous array.
- Orientation: the EXIF orientation is applied; a missing, garbage or unreadable EXIF block
  means "as stored".
- Depth: 16-bit and 32-bit integer images are rescaled from 0..65535 to 0..255 (not clipped);
  float images are scaled from 0..1 when their values lie within it, else clipped to 0..255.
- Transparency (RGBA, LA, palette or colour-key transparency) is composited over
  ``TRANSPARENT_BACKGROUND``, a mid grey close to the mean of ImageNet photos, by
  ``workbench.core.transparency`` (which the run report uses too).
- CMYK, 1-bit, palette and other modes are converted by Pillow; multi-frame GIF/TIFF/WebP files
  give their first frame.

The final resize is antialiased, bilinear or bicubic (``INTERPOLATIONS``; each model's weights
name theirs), as torchvision's ``v2.Resize``: by torch's kernel when the image is less than
twice the target (a JPEG after its reduced decode; about twice as fast as Pillow there), by
Pillow's reduce-then-resample above that (faster for big downscales). torch is imported only
for that resize, which thumbnails never reach: the GUI's thumbnail threads use this module
without loading torch.
"""

from __future__ import annotations

import os
import re
import stat

import numpy as np
from PIL import Image, UnidentifiedImageError

from workbench.core.transparency import (  # noqa: F401 - TRANSPARENT_BACKGROUND re-exported
    TRANSPARENT_BACKGROUND,
    composite_transparency,
    has_transparency,
)

# Pillow's default MAX_IMAGE_PIXELS (about 89.5 megapixels, 256 MiB as RGB), as our own fixed
# limit: the global can be changed by any library, and beyond it Pillow only warns.
MAX_DECODED_PIXELS = 1024 * 1024 * 1024 // 4 // 3
# Wider than any phone panorama; a 1x2000 strip resized to a shorter side of 256 would be
# half a million pixels long.
MAX_ASPECT_RATIO = 50.0

_ORIENTATION_TAG = 0x0112
_TRANSPOSING_ORIENTATIONS = (5, 6, 7, 8)
_ORIENTATION_METHODS = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
# Downscale factor below which torch resizes (faster there); Pillow above it.
TORCH_RESIZE_MAX_FACTOR = 2.0
_WIDE_INTEGER_MODES = ("I", "I;16", "I;16L", "I;16B", "I;16N")
# The resize interpolations (config field ``interpolation``) and Pillow's filter for each.
_PILLOW_FILTERS = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}
INTERPOLATIONS = tuple(_PILLOW_FILTERS)


class ImageDecodeError(Exception):
    """An image file could not be decoded; ``path`` and ``reason`` say which and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def resized_size(width: int, height: int, resize_size: int) -> tuple[int, int]:
    """(width, height) with the shorter side at ``resize_size``, rounded as torchvision's Resize."""
    if width <= height:
        return resize_size, max(1, int(resize_size * height / width))
    return max(1, int(resize_size * width / height)), resize_size


def check_regular_file(path: str) -> os.stat_result:
    """``os.stat(path)``, refusing what is not a plain file (a FIFO would block a read forever).

    Raises:
        ImageDecodeError: missing, unreadable, or not a regular file.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ImageDecodeError(path, f"cannot open file ({exc.strerror or exc})") from exc
    if not stat.S_ISREG(info.st_mode):
        raise ImageDecodeError(path, "not a regular file")
    return info


def prepare_image(image: Image.Image, mode: str, draft_size: tuple[int, int]) -> Image.Image:
    """An 8-bit ``mode`` ("RGB" or "L") image, displayed the right way up, transparency filled.

    Args:
        image: an opened, not yet loaded Pillow image.
        mode: "RGB" or "L".
        draft_size: the smallest (width, height) the caller needs; a JPEG is decoded at the
            largest reduction (1/2, 1/4, 1/8) that is still at least this big.

    Raises:
        ImageDecodeError: too many pixels or too elongated (checked before decoding); any
            decoding error is left to the caller, which knows the path.
    """
    check_decoded_size(image, mode, draft_size)
    image = _oriented(image)
    return _to_8bit_mode(image, mode)


def check_decoded_size(
    image: Image.Image, mode: str = "RGB", draft_size: tuple[int, int] = (1, 1)
) -> None:
    """Refuse, before any pixel is allocated, an image too large or too elongated to decode.

    A JPEG not yet loaded is first set to decode at the largest reduction that still gives
    ``draft_size``; the default asks for the largest reduction there is (1/8), which is how
    a scan judges a file before the resize size is known.

    Raises:
        ImageDecodeError: the decoded size is over ``MAX_DECODED_PIXELS`` or the sides differ
            more than ``MAX_ASPECT_RATIO`` times.
    """
    # Only a JPEG not yet loaded honours draft(); its size then reports the reduced decode.
    image.draft(mode, draft_size)
    width, height = image.size
    if width * height > MAX_DECODED_PIXELS:
        raise ImageDecodeError(image_path(image),
                               too_large_reason(f"{width}x{height} = {width * height:,} pixels"))
    if max(width, height) > MAX_ASPECT_RATIO * max(1, min(width, height)):
        raise ImageDecodeError(
            image_path(image),
            f"image too elongated ({width}x{height}; sides may differ at most "
            f"{MAX_ASPECT_RATIO:g} times)",
        )


def decode_pil_image(image: Image.Image, resize_size: int, grayscale: bool = False,
                     upscale: bool = True, interpolation: str = "bilinear") -> np.ndarray:
    """Resize an opened Pillow image to a contiguous uint8 ``[C,H,W]`` array.

    A JPEG that has not been loaded yet is decoded at a reduced scale first. Orientation,
    bit depth and transparency are handled as the module docstring describes. With
    ``upscale`` False an image whose shorter side is below ``resize_size`` keeps its size.
    ``interpolation``: 'bilinear' or 'bicubic', antialiased either way.

    Raises:
        ImageDecodeError: the image cannot be decoded; the path is the image's file name.
        ValueError: ``interpolation`` is not one of ``INTERPOLATIONS``.
    """
    _check_interpolation(interpolation)
    try:
        return _decode_opened(image, resize_size, grayscale, upscale, interpolation)
    except ImageDecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - malformed files raise all kinds of errors
        raise ImageDecodeError(image_path(image), decode_failure_reason(exc)) from exc


def decode_file(path: str, resize_size: int, grayscale: bool = False,
                upscale: bool = True, interpolation: str = "bilinear") -> np.ndarray:
    """``decode_pil_image`` of the file at ``path``; every failure is an ``ImageDecodeError``
    (a wrong ``interpolation`` a ValueError)."""
    _check_interpolation(interpolation)
    check_regular_file(path)
    try:
        with Image.open(path) as image:
            return _decode_opened(image, resize_size, grayscale, upscale, interpolation)
    except ImageDecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - malformed files raise all kinds of errors
        raise ImageDecodeError(path, decode_failure_reason(exc)) from exc


def read_image_size(path: str) -> tuple[int, int]:
    """(width, height) as displayed (EXIF orientation applied), from the header only.

    Raises:
        ImageDecodeError: the file is missing, not a regular file or not an image.
    """
    check_regular_file(path)
    try:
        with Image.open(path) as image:
            width, height = image.size
            orientation = exif_orientation(image)
    except Exception as exc:  # noqa: BLE001 - malformed headers raise all kinds of errors
        raise ImageDecodeError(path, decode_failure_reason(exc)) from exc
    if orientation in _TRANSPOSING_ORIENTATIONS:
        return height, width
    return width, height


def displayed_size(image: Image.Image) -> tuple[int, int]:
    """(width, height) of an opened image as displayed (EXIF orientation applied)."""
    width, height = image.size
    if exif_orientation(image) in _TRANSPOSING_ORIENTATIONS:
        return height, width
    return width, height


def exif_orientation(image: Image.Image) -> int:
    """The EXIF orientation 1..8; 1 ("as stored") when missing, garbage or unreadable."""
    try:
        value = image.getexif().get(_ORIENTATION_TAG, 1)
    except Exception:  # noqa: BLE001 - a corrupt EXIF block must not cost the image
        return 1
    return value if isinstance(value, int) and value in range(1, 9) else 1


def image_path(image: Image.Image) -> str:
    """The file an opened image came from, or a placeholder for an in-memory one."""
    return str(getattr(image, "filename", "") or "<image in memory>")


TOO_LARGE = "image too large to decode safely"


def too_large_reason(size: str, limit: int | None = None) -> str:
    """Why an image over the limit (``MAX_DECODED_PIXELS`` unless Pillow's own, lowered by
    someone, refused it first) is refused, and what to do; ``size`` says how large it is
    ("12715x8277 = 105,242,055 pixels")."""
    limit = MAX_DECODED_PIXELS if limit is None else limit
    return (f"{TOO_LARGE} ({size}; the limit is {limit:,} pixels, a guard "
            "against decompression bombs): shrink it below the limit, for example to 8,000 "
            "pixels on the longer side, or leave it out")


def decode_failure_reason(exc: BaseException) -> str:
    """A short, plain reason for a decoding exception."""
    if isinstance(exc, UnidentifiedImageError):
        return "not an image Pillow can identify"
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    if isinstance(exc, Image.DecompressionBombError):
        # Pillow refuses at twice its own limit, before ours is reached; say it as ours.
        size = re.search(r"\((\d+) pixels\)", str(exc))
        limit = re.search(r"limit of (\d+) pixels", str(exc))
        return too_large_reason(f"{int(size.group(1)):,} pixels" if size else str(exc),
                                min(int(limit.group(1)), MAX_DECODED_PIXELS) if limit
                                else MAX_DECODED_PIXELS)
    if isinstance(exc, MemoryError):
        return "not enough memory to decode this image"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read file ({exc.strerror})"
    text = str(exc) or type(exc).__name__
    return f"cannot decode image ({text})"


def _check_interpolation(interpolation: str) -> None:
    if interpolation not in _PILLOW_FILTERS:
        raise ValueError(f"interpolation: '{interpolation}' is not one of "
                         f"{', '.join(INTERPOLATIONS)}")


def _decode_opened(image: Image.Image, resize_size: int, grayscale: bool,
                   upscale: bool = True, interpolation: str = "bilinear") -> np.ndarray:
    mode = "L" if grayscale else "RGB"
    if not upscale:
        resize_size = min(resize_size, min(image.size))  # never larger than the original
    # The shorter side is the same either way up, so the draft size ignores orientation.
    image = prepare_image(image, mode, resized_size(*image.size, resize_size))
    target = resized_size(image.width, image.height, resize_size)
    if image.size != target and min(image.size) < TORCH_RESIZE_MAX_FACTOR * min(target):
        return _resized_by_torch(np.array(image, dtype=np.uint8), target, interpolation)
    if image.size != target:
        # reducing_gap=3: Pillow resizes big downscales in two steps, indistinguishable from one.
        image = image.resize(target, _PILLOW_FILTERS[interpolation], reducing_gap=3.0)
    array = np.asarray(image, dtype=np.uint8)
    if array.ndim == 2:
        return array[None].copy()  # asarray of a Pillow image is read-only
    return np.ascontiguousarray(array.transpose(2, 0, 1))


def _resized_by_torch(pixels: np.ndarray, target: tuple[int, int],
                      interpolation: str = "bilinear") -> np.ndarray:
    """HxW or HxWxC uint8 -> contiguous CxHxW uint8 of ``target`` (width, height).

    torch reads the interleaved pixels in place (a channels-last view) and writes the planes.
    Both go through torch's uint8 kernels, as torchvision's ``v2.Resize`` does on the CPU.
    """
    import torch  # only training and the preview resize, and both have torch loaded

    tensor = torch.from_numpy(pixels)
    tensor = tensor[None, None] if tensor.dim() == 2 else tensor.permute(2, 0, 1)[None]
    width, height = target
    resized = torch.nn.functional.interpolate(tensor, size=(height, width), mode=interpolation,
                                              antialias=True, align_corners=False)
    return resized[0].contiguous().numpy()


def _oriented(image: Image.Image) -> Image.Image:
    method = _ORIENTATION_METHODS.get(exif_orientation(image))
    return image if method is None else image.transpose(method)


def _to_8bit_mode(image: Image.Image, mode: str) -> Image.Image:
    if image.mode in _WIDE_INTEGER_MODES or image.mode == "F":
        image = _rescaled_to_l(image)
    if has_transparency(image):
        image = composite_transparency(image)
    if image.mode != mode:
        image = image.convert(mode)
    return image


def _rescaled_to_l(image: Image.Image) -> Image.Image:
    """16/32-bit integer or float pixels -> 8-bit "L" by scaling, where Pillow would clip."""
    values = np.asarray(image).astype(np.float64)
    if image.mode == "F":
        finite = values[np.isfinite(values)]
        in_unit_range = finite.size == 0 or (finite.min() >= 0.0 and finite.max() <= 1.0)
        scaled = values * 255.0 if in_unit_range else values
    else:
        scaled = np.clip(values, 0, 65535) * (255.0 / 65535.0)
    scaled = np.nan_to_num(scaled, nan=0.0, posinf=255.0, neginf=0.0)
    return Image.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8), "L")

