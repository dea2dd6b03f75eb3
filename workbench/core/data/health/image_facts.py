"""Decode one image fully, once, and measure what the health check needs from it.

JPEGs are decoded at a reduced scale (``Image.draft``) to at least ``ANALYSIS_SIDE`` pixels a
side: every byte of the file is still decoded, so truncated and corrupt data fail here as in
training, at a fraction of the cost. The figures are measured on a copy whose longer side is
``METRIC_SIDE``, so they do not depend on the file's resolution.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from PIL import Image

from workbench.core.data.health.drawing_detail import (
    DETAIL_SOURCE_SIDE,
    detail_thumbnails,
    is_drawing,
)
from workbench.core.data.image_decoding import (
    ImageDecodeError,
    check_regular_file,
    decode_failure_reason,
    displayed_size,
    prepare_image,
)

# Smallest side decoded: enough for a 32x32 perceptual hash and the figures below (a JPEG
# photo is then decoded at 1/8 scale).
ANALYSIS_SIDE = 64
# Longer side of the copy the brightness, contrast and sharpness are measured on.
METRIC_SIDE = 64
# Side of the grey thumbnails two near-duplicate candidates are compared on (duplicate_groups).
THUMBNAIL_SIDE = 16
# Share of each side the second thumbnail leaves out: a copy cropped by a few percent lines up
# with it, not with the whole picture.
THUMBNAIL_INSET = 0.03
# A thumbnail with less grey-level spread (standard deviation) than this is faint (thin line
# art on a transparent page): copies of it are judged on a FINE_SIDE thumbnail, which images
# up to FINE_KEPT_SPREAD keep (a re-encoded copy's spread may fall either side of 8).
FAINT_SPREAD = 8.0
FINE_KEPT_SPREAD = 12.0
FINE_SIDE = 48
# Side of the colour thumbnail that tells a red arrow from the same arrow in blue.
COLOUR_SIDE = 4
_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
_GREY_MODES = ("1", "L", "LA", "I", "I;16", "I;16L", "I;16B", "I;16N", "F")


@dataclass(frozen=True)
class ImageFacts:
    """What one file is, as far as the health check is concerned.

    Attributes:
        path, size_bytes, mtime_ns: the file, and the key its facts are cached under.
        error: why the file cannot be decoded (Pillow's reason); None when it can. The
            figures below are 0 / "" for such a file.
        width, height: the size in pixels, upright (EXIF orientation applied).
        grayscale: a grey mode, or colour channels that never differ visibly.
        mean, std: luminance mean and standard deviation, 0..255.
        sharpness: variance of the Laplacian over the luminance variance (0 for a flat image);
            blur lowers it, contrast does not change it.
        pixel_digest: SHA-1 of the decoded pixels: equal for exact duplicates.
        phash: the 64-bit perceptual hash (imagehash.phash) in hex: close for near duplicates.
        thumbnail, inset_thumbnail: ``THUMBNAIL_SIDE`` square grey copies (base64 of the
            bytes) of the whole picture and of its centre without ``THUMBNAIL_INSET`` of each
            side: two images the hash calls close are copies only when these agree.
        colours: a ``COLOUR_SIDE`` square RGB copy (base64): copies have the same colours.
        fine_thumbnail: for a faint thumbnail only (spread below ``FINE_KEPT_SPREAD``), a
            ``FINE_SIDE`` square grey copy.
        detail: for a drawing on a flat page only, grey copies of the whole and the centre at
            up to 96 px (``drawing_detail``): look-alike drawings are told apart on them.
    """

    path: str
    size_bytes: int
    mtime_ns: int
    error: str | None = None
    width: int = 0
    height: int = 0
    grayscale: bool = False
    mean: float = 0.0
    std: float = 0.0
    sharpness: float = 0.0
    pixel_digest: str = ""
    phash: str = ""
    thumbnail: str = ""
    inset_thumbnail: str = ""
    colours: str = ""
    fine_thumbnail: str = ""
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImageFacts:
        return cls(**data)


def file_key(path: str) -> tuple[int, int]:
    """(size in bytes, modification time in ns): a changed file gets another key."""
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns


def image_facts(path: str) -> ImageFacts:
    """Decode ``path`` and measure it; a file that fails carries the reason in ``error``."""
    try:
        info = check_regular_file(path)
    except ImageDecodeError as exc:
        return ImageFacts(path, 0, 0, exc.reason)
    try:
        with Image.open(path) as image:
            width, height = displayed_size(image)  # upright, as training sees it
            grey_mode = image.mode in _GREY_MODES
            rgb = prepare_image(image, "RGB", (ANALYSIS_SIDE, ANALYSIS_SIDE))
            rgb.load()  # decodes every byte: a truncated file fails here
    except ImageDecodeError as exc:
        return ImageFacts(path, info.st_size, info.st_mtime_ns, exc.reason)
    except Exception as exc:  # noqa: BLE001 - malformed files raise all kinds of errors
        return ImageFacts(path, info.st_size, info.st_mtime_ns, decode_failure_reason(exc))
    return _measured(path, info, width, height, grey_mode, rgb)


def _detail_source(path: str, rgb: Image.Image, width: int, height: int) -> Image.Image:
    """The picture a drawing's detail and 48 px thumbnails are made from: ``rgb``, or, for a
    JPEG that was decoded at a reduced scale for the 64 px figures, the file decoded again at
    the least reduction that keeps ``DETAIL_SOURCE_SIDE`` pixels a side.

    The detail of a PNG drawing is shrunk from its full pixels; a JPEG copy of it shrunk by the
    decoder's DCT scaling (1/2 to 1/8) carries other fine detail. Of 179 JPEG (quality 75)
    copies of openclipart drawings that were decoded reduced, the detail correlated with the
    original's 0.64 at least (median 0.92), blocks up to 39 grey levels apart (median 8.3); made
    from a decode of 192 px or more, 0.98 at least (median 0.999), blocks up to 6.5 (median 0.6).
    """
    wanted = min(DETAIL_SOURCE_SIDE, width, height)
    if min(rgb.size) >= wanted:
        return rgb
    try:
        with Image.open(path) as image:
            again = prepare_image(image, "RGB", (wanted, wanted))
            again.load()
    except Exception:  # noqa: BLE001 - replaced since the first decode: keep the reduced one
        return rgb
    return again


def _measured(path: str, info: os.stat_result, width: int, height: int, grey_mode: bool,
              rgb: Image.Image) -> ImageFacts:
    import imagehash  # imports scipy: only the health check needs it

    pixels = np.asarray(rgb, dtype=np.uint8)
    digest = hashlib.sha1(pixels.tobytes())
    digest.update(f"{rgb.width}x{rgb.height}".encode())
    small = rgb.copy() if max(rgb.size) <= METRIC_SIDE else rgb.resize(
        _fitted(rgb.size, METRIC_SIDE), Image.Resampling.BILINEAR)
    values = np.asarray(small, dtype=np.float32)
    luma = values @ _LUMA
    channel_spread = float(np.abs(values - values.mean(axis=2, keepdims=True)).max())
    thumbnail = _thumbnail(rgb, 0.0)
    faint = float(thumbnail_pixels(thumbnail).std()) < FINE_KEPT_SPREAD
    # A drawing's finer thumbnails come from the decode its detail needs (a JPEG's 1/8 decode
    # moved the 48 px thumbnail of a faint 495 px drawing's copy to 0.964 of its original's).
    fine_source = _detail_source(path, rgb, width, height) if is_drawing(luma) else rgb
    return ImageFacts(
        path, info.st_size, info.st_mtime_ns, None, width, height,
        grayscale=grey_mode or channel_spread < 8.0,
        mean=round(float(luma.mean()), 3), std=round(float(luma.std()), 3),
        sharpness=round(_sharpness(luma), 4), pixel_digest=digest.hexdigest(),
        phash=str(imagehash.phash(rgb)), thumbnail=thumbnail,
        fine_thumbnail=_thumbnail(fine_source, 0.0, FINE_SIDE) if faint else "",
        inset_thumbnail=_thumbnail(rgb, THUMBNAIL_INSET),
        detail=detail_thumbnails(fine_source, luma),
        colours=base64.b64encode(rgb.resize((COLOUR_SIDE, COLOUR_SIDE), Image.Resampling.BOX)
                                 .tobytes()).decode("ascii"))


def _thumbnail(rgb: Image.Image, inset: float, side: int = THUMBNAIL_SIDE) -> str:
    """A grey ``side`` square of ``rgb`` without ``inset`` of each side, as base64."""
    dx, dy = rgb.width * inset, rgb.height * inset
    grey = rgb.convert("L").resize((side, side), Image.Resampling.BILINEAR,
                                   box=(dx, dy, rgb.width - dx, rgb.height - dy))
    return base64.b64encode(grey.tobytes()).decode("ascii")


def colour_pixels(text: str) -> np.ndarray:
    """The ``COLOUR_SIDE`` square float32 RGB pixels a colours string holds."""
    data = np.frombuffer(base64.b64decode(text), dtype=np.uint8)
    return data.astype(np.float32).reshape(COLOUR_SIDE, COLOUR_SIDE, 3)


def thumbnail_pixels(text: str) -> np.ndarray:
    """The square float32 grey pixels a thumbnail string holds (16 or 48 a side)."""
    data = np.frombuffer(base64.b64decode(text), dtype=np.uint8)
    side = round(len(data) ** 0.5)
    return data.astype(np.float32).reshape(side, side)


def _fitted(size: tuple[int, int], side: int) -> tuple[int, int]:
    """``size`` scaled so its longer side is ``side``."""
    width, height = size
    scale = side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _sharpness(luma: np.ndarray) -> float:
    """Laplacian variance over luminance variance: high-frequency share of the detail."""
    if min(luma.shape) < 3:
        return 0.0
    variance = float(luma.var())
    if variance < 1e-6:
        return 0.0
    laplacian = (luma[1:-1, :-2] + luma[1:-1, 2:] + luma[:-2, 1:-1] + luma[2:, 1:-1]
                 - 4.0 * luma[1:-1, 1:-1])
    return float(laplacian.var()) / variance
