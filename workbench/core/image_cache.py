"""Decode an image once, resized, and keep the uint8 pixels on disk for every later epoch.

JPEGs are decoded by libjpeg at a reduced scale (``Image.draft``) that is never smaller than
the target, which makes a 4000x3000 photo decode many times faster than a full decode. The
cached array is a plain ``.npy`` file named by a hash of the source file's path, size and
modification time and of the resize settings, so an edited image is decoded afresh.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageOps

from workbench.core.atomic_io import atomic_write_bytes

# Pillow's own "resize in two steps" shortcut for big downscales (e.g. large PNGs);
# at 3.0 the result is indistinguishable from a single fair resample.
_REDUCING_GAP = 3.0
_ORIENTATION_TAG = 0x0112
_TRANSPOSING_ORIENTATIONS = (5, 6, 7, 8)


class ImageDecodeError(Exception):
    """An image file could not be decoded; ``path`` and ``reason`` say which and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def default_cache_dir() -> Path:
    """Where resized images are cached: ``$WORKBENCH_CACHE_DIR`` or the user's cache folder."""
    override = os.environ.get("WORKBENCH_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    if os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "workbench" / "images"


def resized_size(width: int, height: int, resize_size: int) -> tuple[int, int]:
    """(width, height) with the shorter side at ``resize_size``, rounded as torchvision's Resize."""
    if width <= height:
        return resize_size, max(1, int(resize_size * height / width))
    return max(1, int(resize_size * width / height)), resize_size


def load_image_uint8(
    path: str, resize_size: int, grayscale: bool = False, cache_dir: str | None = None
) -> torch.Tensor:
    """Decode ``path`` to a uint8 ``[C,H,W]`` tensor whose shorter side is ``resize_size``.

    Args:
        path: an image file Pillow can read.
        resize_size: length of the shorter side after the (antialiased) resize.
        grayscale: one luminance channel instead of RGB.
        cache_dir: when given, reuse (or write) the resized pixels there.

    Returns:
        A contiguous uint8 tensor, 3 or 1 channels, EXIF orientation applied.

    Raises:
        ImageDecodeError: the file is missing, unreadable, or not an image.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ImageDecodeError(path, f"cannot open file ({exc.strerror or exc})") from exc
    cache_file = None
    if cache_dir:
        cache_file = cache_path(path, resize_size, grayscale, cache_dir, info)
        cached = _read_cached(cache_file, resize_size, grayscale)
        if cached is not None:
            return torch.from_numpy(cached)
    array = _decode(path, resize_size, grayscale)
    if cache_file is not None:
        _write_cached(cache_file, array)
    return torch.from_numpy(array)


def decode_pil_image(image: Image.Image, resize_size: int, grayscale: bool = False) -> np.ndarray:
    """Resize an opened Pillow image to a contiguous uint8 ``[C,H,W]`` array.

    A JPEG that has not been loaded yet is decoded at a reduced scale first.
    """
    mode = "L" if grayscale else "RGB"
    width, height = image.size
    # Only a JPEG not yet loaded honours draft(): libjpeg then decodes at 1/2, 1/4 or 1/8
    # scale, never below the requested size. Orientation does not matter here: the shorter
    # side is the same either way.
    image.draft(mode, resized_size(width, height, resize_size))
    if image.getexif().get(_ORIENTATION_TAG, 1) != 1:
        image = ImageOps.exif_transpose(image)
    if image.mode != mode:
        image = image.convert(mode)
    target = resized_size(image.width, image.height, resize_size)
    if image.size != target:
        image = image.resize(target, Image.Resampling.BILINEAR, reducing_gap=_REDUCING_GAP)
    array = np.asarray(image, dtype=np.uint8)
    if array.ndim == 2:
        return array[None].copy()  # asarray of a Pillow image is read-only
    return np.ascontiguousarray(array.transpose(2, 0, 1))


def read_image_size(path: str) -> tuple[int, int]:
    """(width, height) as displayed (EXIF orientation applied), from the header only."""
    try:
        with Image.open(path) as image:
            width, height = image.size
            orientation = image.getexif().get(_ORIENTATION_TAG, 1)
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageDecodeError(path, _reason(exc)) from exc
    if orientation in _TRANSPOSING_ORIENTATIONS:
        return height, width
    return width, height


def cache_path(
    path: str,
    resize_size: int,
    grayscale: bool,
    cache_dir: str | os.PathLike[str],
    info: os.stat_result | None = None,
) -> Path:
    """The cache file for these settings of this version of ``path``."""
    info = info or os.stat(path)
    key = "\0".join(
        (os.path.abspath(path), str(info.st_size), str(info.st_mtime_ns), str(resize_size),
         "L" if grayscale else "RGB")
    )
    digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()
    return Path(cache_dir) / digest[:2] / f"{digest}.npy"


def _decode(path: str, resize_size: int, grayscale: bool) -> np.ndarray:
    try:
        with Image.open(path) as image:
            return decode_pil_image(image, resize_size, grayscale)
    except Exception as exc:  # noqa: BLE001 - malformed files raise all kinds of errors
        raise ImageDecodeError(path, _reason(exc)) from exc


def _reason(exc: BaseException) -> str:
    from PIL import UnidentifiedImageError

    if isinstance(exc, UnidentifiedImageError):
        return "not an image Pillow can identify"
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    text = str(exc) or type(exc).__name__
    return f"cannot decode image ({text})"


def _read_cached(cache_file: Path, resize_size: int, grayscale: bool) -> np.ndarray | None:
    """The cached array, or None when it is missing or not what these settings produce."""
    try:
        array = np.load(cache_file, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    channels = 1 if grayscale else 3
    if (
        not isinstance(array, np.ndarray)
        or array.dtype != np.uint8
        or array.ndim != 3
        or array.shape[0] != channels
        or min(array.shape[1:]) != resize_size
        or not array.flags.c_contiguous
    ):
        return None
    return array


def _write_cached(cache_file: Path, array: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    try:
        atomic_write_bytes(cache_file, buffer.getvalue(), durable=False)
    except OSError:
        pass  # a full or read-only cache folder costs speed, never the run
