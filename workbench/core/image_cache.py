"""Decode an image once, resized, and keep the uint8 pixels on disk for every later epoch.

JPEGs are decoded by libjpeg at a reduced scale (``Image.draft``) that is never smaller than
the target, which makes a 4000x3000 photo decode many times faster than a full decode. The
cached array is a plain ``.npy`` file named by a hash of the source file's path, size and
modification time and of the resize settings, so an edited image is decoded afresh. How odd
files (16-bit, transparent, rotated, huge, truncated) decode is ``image_decoding``'s business.

The cache never fills its disk: no file is written while less than ``FREE_SPACE_RESERVE`` would
stay free (the run's checkpoints need room more than the cache does); an image that is not
cached is simply decoded again next epoch. ``cache_usage`` and ``clear_cache`` (``workbench
cache``) show and empty it.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from workbench.core.atomic_io import atomic_write_bytes

# Decoding lives in image_decoding (no torch); these names are imported from here by callers.
from workbench.core.image_decoding import (  # noqa: F401 - re-exported
    ImageDecodeError,
    check_regular_file,
    decode_file,
    decode_pil_image,
    read_image_size,
    resized_size,
)
from workbench.core.units import GIB, byte_amount

# Part of every cache key: bump it when decoding changes what pixels a file gives
# (2: transparency over grey, 16-bit rescaled; 3: small downscales resized by torch), so
# stale arrays are never reused.
_DECODING_VERSION = "3"
# The cache writes nothing that would leave less than this free on its disk.
FREE_SPACE_RESERVE = 2 * GIB
# Names the cache writes: <2 hex>/<40 hex>.npy, and the temp files of unfinished writes.
_CACHE_SUBFOLDER = re.compile(r"[0-9a-f]{2}")
_CACHE_FILE = re.compile(r"(\.)?[0-9a-f]{40}\.npy(\..*\.tmp)?")


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
    info = check_regular_file(path)
    cache_file = None
    if cache_dir:
        cache_file = cache_path(path, resize_size, grayscale, cache_dir, info)
        cached = _read_cached(cache_file, resize_size, grayscale)
        if cached is not None:
            return torch.from_numpy(cached)
    array = decode_file(path, resize_size, grayscale)
    if cache_file is not None:
        _write_cached(cache_file, array)
    return torch.from_numpy(array)


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
         "L" if grayscale else "RGB", _DECODING_VERSION)
    )
    digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()
    return Path(cache_dir) / digest[:2] / f"{digest}.npy"


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
    data = buffer.getvalue()
    try:
        if free_bytes(cache_file.parent) - len(data) < FREE_SPACE_RESERVE:
            return  # the disk's last free space is for checkpoints, not for a speed-up
        atomic_write_bytes(cache_file, data, durable=False)
    except OSError:
        pass  # a full or read-only cache folder costs speed, never the run


def free_bytes(folder: str | os.PathLike[str]) -> int:
    """Free bytes on the disk that holds ``folder`` (or its nearest existing parent)."""
    path = Path(folder).absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return shutil.disk_usage(path).free


@dataclass(frozen=True)
class CacheUsage:
    """How many cached images a cache folder holds and how many bytes they take."""

    files: int
    bytes: int


def cache_usage(cache_dir: str | os.PathLike[str]) -> CacheUsage:
    """The cache's files and bytes (only the files the cache itself writes count)."""
    files = total = 0
    for entry in _cache_entries(Path(cache_dir)):
        try:
            total += entry.stat().st_size
            files += 1
        except OSError:
            pass  # removed meanwhile by another run
    return CacheUsage(files, total)


def clear_cache(cache_dir: str | os.PathLike[str]) -> CacheUsage:
    """Delete the cached images in ``cache_dir`` and their emptied subfolders; any other file
    is left where it is. Returns what was deleted."""
    files = total = 0
    for entry in _cache_entries(Path(cache_dir)):
        try:
            size = entry.stat().st_size
            entry.unlink()
        except OSError:
            continue
        files += 1
        total += size
    for folder in _cache_subfolders(Path(cache_dir)):
        try:
            folder.rmdir()
        except OSError:
            pass  # not empty: it holds something that is not ours
    return CacheUsage(files, total)


def estimated_cache_bytes(images: int, resize_size: int, channels: int) -> int:
    """About how much ``images`` resized photos take in the cache (4:3 assumed)."""
    return images * channels * resize_size * math.ceil(resize_size * 4 / 3)


def cache_messages(cache_dir: str, images: int, resize_size: int,
                   channels: int) -> list[tuple[str, str]]:
    """(level, text) lines for the run log: where the cache is and whether it has room for
    this dataset's ``images``."""
    free = free_bytes(cache_dir)
    room = max(0, free - FREE_SPACE_RESERVE)
    needed = estimated_cache_bytes(images, resize_size, channels)
    messages = [("info", f"Resized images are cached in {cache_dir} ({byte_amount(free)} free "
                         f"there); `workbench cache` shows its size and clears it.")]
    if needed > room:
        messages.append((
            "warning",
            f"cache_dir: the resized images of this dataset take about {byte_amount(needed)}, "
            f"but {cache_dir} has room for {byte_amount(room)} (the cache leaves "
            f"{byte_amount(FREE_SPACE_RESERVE)} free for checkpoints). Images past that are "
            "decoded again every epoch; choose a cache_dir on a larger disk, lower "
            "resize_size, or clear the cache with `workbench cache --clear`."))
    return messages


def _cache_subfolders(cache_dir: Path) -> list[Path]:
    try:
        return [entry for entry in cache_dir.iterdir()
                if entry.is_dir() and _CACHE_SUBFOLDER.fullmatch(entry.name)]
    except OSError:
        return []  # no cache yet, or not readable


def _cache_entries(cache_dir: Path):
    for folder in _cache_subfolders(cache_dir):
        try:
            names = list(folder.iterdir())
        except OSError:
            continue
        yield from (entry for entry in names
                    if _CACHE_FILE.fullmatch(entry.name) and entry.is_file())
