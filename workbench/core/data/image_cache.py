"""Decode an image once, resized, and keep the uint8 pixels on disk for every later epoch.

JPEGs are decoded by libjpeg at a reduced scale (``Image.draft``) that is never smaller than
the target, which makes a 4000x3000 photo decode many times faster than a full decode. The
cached array is a plain ``.npy`` file named by a hash of the source file's path, size and
modification time and of the resize settings, so an edited image is decoded afresh. How odd
files (16-bit, transparent, rotated, huge, truncated) decode is ``image_decoding``'s business.

No file is written that would leave less than ``cache_folder.FREE_SPACE_RESERVE`` free on the
cache's disk; an image that is not cached is simply decoded again next epoch.

Writing a cached array costs a file creation (1.5-2.5 ms on the 2-core test machine, ten times
the decode of an 8 px scan; ``bench/loading/image_cache_benchmark.py``), so a caller that decodes a
whole folder once while training waits (the images kept on the device) hands the writes to a
background thread instead (``write_in_background``): the run starts on the decoded pixels and
the cache is there for the next run. ``wait_for_cache_writes`` waits for them.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from workbench.core.data.cache_folder import has_room

# Decoding lives in image_decoding (no torch); these names are imported from here by callers.
from workbench.core.data.image_decoding import (  # noqa: F401 - re-exported
    ImageDecodeError,
    check_regular_file,
    decode_file,
    decode_pil_image,
    read_image_size,
    resized_size,
)
from workbench.core.runs.atomic_io import atomic_write_bytes

# Part of every cache key: bump it when decoding changes what pixels a file gives
# (2: transparency over grey, 16-bit rescaled; 3: small downscales resized by torch), so
# stale arrays are never reused.
_DECODING_VERSION = "3"
# Bytes of arrays waiting for the background writer; past it a write is done at once, so a
# large folder never holds a second copy of its pixels in memory.
BACKGROUND_WRITES_BYTES = 64 * 1024 * 1024


def load_image_uint8(
    path: str, resize_size: int, grayscale: bool = False, cache_dir: str | None = None,
    upscale: bool = True, interpolation: str = "bilinear", write_in_background: bool = False,
) -> torch.Tensor:
    """Decode ``path`` to a uint8 ``[C,H,W]`` tensor whose shorter side is ``resize_size``.

    Args:
        path: an image file Pillow can read.
        resize_size: length of the shorter side after the (antialiased) resize.
        grayscale: one luminance channel instead of RGB.
        cache_dir: when given, reuse (or write) the resized pixels there.
        upscale: False keeps an image whose shorter side is below ``resize_size`` at its
            own size (the training crops' source: never enlarged before it is cropped).
        interpolation: the resize's, 'bilinear' or 'bicubic' (antialiased either way); part
            of the cache key.
        write_in_background: a new cache file is written by a background thread (up to
            ``BACKGROUND_WRITES_BYTES`` waiting), not before this returns.

    Returns:
        A contiguous uint8 tensor, 3 or 1 channels, EXIF orientation applied.

    Raises:
        ImageDecodeError: the file is missing, unreadable, or not an image.
    """
    info = check_regular_file(path)
    cache_file = None
    if cache_dir:
        cache_file = cache_path(path, resize_size, grayscale, cache_dir, info, upscale,
                                interpolation)
        cached = _read_cached(cache_file, resize_size, grayscale, upscale)
        if cached is not None:
            return torch.from_numpy(cached)
    array = decode_file(path, resize_size, grayscale, upscale, interpolation)
    if cache_file is not None:
        if write_in_background:
            _BACKGROUND.write(cache_file, _npy_bytes(array))
        else:
            _store(cache_file, _npy_bytes(array))
    return torch.from_numpy(array)


def wait_for_cache_writes() -> None:
    """Return once every cache file handed to the background writer is written (or failed,
    which only costs a decode later)."""
    _BACKGROUND.wait()


def cache_path(
    path: str,
    resize_size: int,
    grayscale: bool,
    cache_dir: str | os.PathLike[str],
    info: os.stat_result | None = None,
    upscale: bool = True,
    interpolation: str = "bilinear",
) -> Path:
    """The cache file for these settings of this version of ``path``."""
    info = info or os.stat(path)
    parts = [os.path.abspath(path), str(info.st_size), str(info.st_mtime_ns), str(resize_size),
             "L" if grayscale else "RGB", _DECODING_VERSION]
    if not upscale:
        parts.append("at most")  # a different array for small originals: its own file
    if interpolation != "bilinear":
        # Other pixels, so another file; bilinear keeps the keys that caches already hold.
        parts.append(interpolation)
    key = "\0".join(parts)
    digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()
    return Path(cache_dir) / digest[:2] / f"{digest}.npy"


def _read_cached(cache_file: Path, resize_size: int, grayscale: bool,
                 upscale: bool = True) -> np.ndarray | None:
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
        or (min(array.shape[1:]) != resize_size if upscale
            else min(array.shape[1:]) > resize_size)
        or not array.flags.c_contiguous
    ):
        return None
    return array


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _store(cache_file: Path, data: bytes) -> None:
    try:
        if not has_room(cache_file.parent, len(data)):
            return  # the disk's last free space is for checkpoints, not for a speed-up
        atomic_write_bytes(cache_file, data, durable=False)
    except OSError:
        pass  # a full or read-only cache folder costs speed, never the run


class _BackgroundWriter:
    """One thread that writes cache files in the order given, started on first use in each
    process; at most ``BACKGROUND_WRITES_BYTES`` wait, past that a write is done at once.
    Python joins the thread at exit, so what was handed over is written before it ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._owner = 0
        self.waiting = 0

    def write(self, cache_file: Path, data: bytes) -> None:
        with self._lock:
            if self.waiting + len(data) > BACKGROUND_WRITES_BYTES:
                pool = None
            else:
                pool = self._thread()
                self.waiting += len(data)
        if pool is None:
            _store(cache_file, data)
            return
        pool.submit(self._write, cache_file, data)

    def _write(self, cache_file: Path, data: bytes) -> None:
        try:
            _store(cache_file, data)
        finally:
            with self._lock:
                self.waiting -= len(data)

    def wait(self) -> None:
        with self._lock:
            pool = self._pool if self._owner == os.getpid() else None
        if pool is not None:
            pool.submit(lambda: None).result()  # one thread: everything before it is done

    def _thread(self) -> ThreadPoolExecutor:
        if self._pool is None or self._owner != os.getpid():  # a forked loader process
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="workbench-cache-writer")
            self._owner = os.getpid()
            self.waiting = 0
        return self._pool


_BACKGROUND = _BackgroundWriter()
