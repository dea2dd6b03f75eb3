"""Whether two drawings that look alike in small thumbnails are the same drawing at the
resolution both files have.

Clip art holds families of pictures that agree in every 16 px and 48 px thumbnail and differ
in what a viewer sees at full size: openclipart's stars of 55 and 58 points, speech bubbles
whose tail points left or right, a smiley with another mouth, a magnifier with a badge. A
drawing (a picture with a flat page: at least ``DRAWN_FLAT_SHARE`` of its pixels at one grey)
keeps grey thumbnails of up to ``DETAIL_SIDE`` pixels a side, no larger than the picture
itself, of the whole and of its centre without 3% of each side. Two drawings are compared at
the smaller of their two sides (a copy resized to half is compared at its own resolution, not
upscaled), with the alignment (whole, or one against the other's centre) whose thumbnails
correlate best, and are the same drawing when:

- their fine detail (each thumbnail less its own blur) correlates at least
  ``DETAIL_CORRELATION``: a re-encoding or a resizing moves the lines a little, another star
  draws other lines;
- no block of an eighth of the side differs by more than ``DETAIL_BLOCK_DIFFERENCE`` grey levels
  on average, once the two have the same mean and spread: a tail, a mouth or a badge is a
  region that differs, noise and a brightening are not.

Chosen on openclipart as Debian ships it (``python -m workbench.bench.health_benchmark``; docs,
Data health).
"""

from __future__ import annotations

import base64
import zlib
from functools import lru_cache

import numpy as np
from PIL import Image

# Largest side of the detail thumbnails: openclipart's 100 px stars are told apart at 96 px,
# not at 64 (their lines merge).
DETAIL_SIDE = 96
# Least side a drawing is decoded at for its detail thumbnails (a JPEG is otherwise decoded at
# a reduced scale for the 64 px figures): the thumbnails are shrunk from at least twice their
# side, as those of a PNG are.
DETAIL_SOURCE_SIDE = 2 * DETAIL_SIDE
# A picture narrower than this keeps none: the 16 px and 48 px rules judge it alone.
DETAIL_MIN_SIDE = 48
# Share of the pixels (64 px copy) within one grey level of the most common grey from which a
# picture is a drawing on a page: 90% of openclipart's files (on a transparent or white page)
# and 95% of those the 16 px rules call copies; photographs and the generated scenes of the
# tests (0.27 at most) are below it and keep no detail thumbnails.
DRAWN_FLAT_SHARE = 0.3
# Correlation of the fine detail two copies keep. Of the copies of 400 openclipart files that
# the 16 px rules find, about 99% of each kind reach it (JPEG quality 75: 1% below 0.67; half
# size: all above 0.85; cropped by 3%: 1% below 0.65, small icons compared at their own 60 px,
# where a 1 px crop against the thumbnail's 3% moves the lines); 57% of the pairs of
# openclipart's stars of N points that the 16 px rules pass are below it (median 0.57).
DETAIL_CORRELATION = 0.65
# Most grey levels (mean absolute difference) one block of an eighth of the side may differ
# by: copies of clip art 95% up to 28, 99% up to 34; speech bubbles with the tail elsewhere 60
# to 105, a magnifier with and without a badge 134.
DETAIL_BLOCK_DIFFERENCE = 40.0
# Spread (grey levels) of the fine detail below which a picture has none to compare (a flat
# square): only the blocks decide.
FLAT_DETAIL = 0.5
_INSET = 0.03


def detail_thumbnails(rgb: Image.Image, metric_grey: np.ndarray) -> str:
    """The detail thumbnails of a drawing (its side, the whole, the centre; zlib and base64),
    or "" for a picture that is no drawing or is smaller than ``DETAIL_MIN_SIDE``.

    Args:
        rgb: the decoded picture, transparency already over the page grey.
        metric_grey: the picture's grey values at the metric size (64 px), 0..255.
    """
    side = min(DETAIL_SIDE, rgb.width, rgb.height)
    if side < DETAIL_MIN_SIDE or not is_drawing(metric_grey):
        return ""
    grey = rgb.convert("L")
    # A poster is first shrunk by whole pixels (a box filter, fast) to at least twice the side.
    factor = min(grey.width, grey.height) // (2 * side)
    if factor > 1:
        grey = grey.reduce(factor)
    dx, dy = grey.width * _INSET, grey.height * _INSET
    whole = grey.resize((side, side), Image.Resampling.BILINEAR)
    inset = grey.resize((side, side), Image.Resampling.BILINEAR,
                        box=(dx, dy, grey.width - dx, grey.height - dy))
    data = bytes([side]) + whole.tobytes() + inset.tobytes()
    return base64.b64encode(zlib.compress(data, 6)).decode("ascii")


def is_drawing(metric_grey: np.ndarray) -> bool:
    """Whether a picture (its grey values at the metric size) is a drawing on a flat page."""
    return flat_share(metric_grey) >= DRAWN_FLAT_SHARE


def flat_share(grey: np.ndarray) -> float:
    """Share of the pixels within one grey level of the most common grey."""
    levels = np.clip(np.round(grey), 0, 255).astype(np.int64).ravel()
    if levels.size == 0:
        return 0.0
    counts = np.bincount(levels, minlength=256)
    mode = int(counts.argmax())
    return float(counts[max(0, mode - 1):mode + 2].sum()) / levels.size


def alike_drawings(detail: float | None, block: float) -> bool:
    """Whether a pair's ``drawing_difference`` is that of copies."""
    return (detail is None or detail >= DETAIL_CORRELATION) and block <= DETAIL_BLOCK_DIFFERENCE


def drawing_difference(first: str, second: str) -> tuple[float | None, float]:
    """(Correlation of the fine detail, largest block difference in grey levels) of two
    drawings' detail thumbnails, at the smaller side and the best of three alignments; the
    correlation is None when either has no fine detail to speak of (``FLAT_DETAIL``)."""
    side = min(_prepared(first, 0).side, _prepared(second, 0).side)
    one, other = _prepared(first, side), _prepared(second, side)
    # Which alignment: whole against whole, or one against the other's centre (a crop).
    candidates = ((0, 0), (1, 0), (0, 1))
    mine, theirs = max(candidates,
                       key=lambda pair: float(one.shape[pair[0]] @ other.shape[pair[1]]))
    fine, other_fine = one.fine[mine], other.fine[theirs]
    detail = None if fine is None or other_fine is None else float(fine @ other_fine)
    # Brightness and contrast matched first: a brightened copy differs everywhere, not in a
    # region.
    a, b = one.pixels[mine], other.pixels[theirs]
    spread, other_spread = float(a.std()), float(b.std())
    if spread > 1e-3 and other_spread > 1e-3:
        b = (b - b.mean()) * (spread / other_spread) + a.mean()
    difference = np.abs(a - b)
    cell = max(2, side // 8)
    cut = side // cell * cell
    blocks = difference[:cut, :cut].reshape(cut // cell, cell, cut // cell, cell)
    return detail, float(blocks.mean(axis=(1, 3)).max())


class _Prepared:
    """One picture's (whole, centre) thumbnails at one side: the pixels, and unit vectors of
    the pixels and of their fine detail (less the mean; None for no detail)."""

    def __init__(self, whole: np.ndarray, inset: np.ndarray) -> None:
        self.side = whole.shape[0]
        self.pixels = (whole, inset)
        self.shape = tuple(_unit(p) for p in self.pixels)
        self.fine = tuple(_unit(p - _blurred(p), FLAT_DETAIL) for p in self.pixels)


def forget_prepared() -> None:
    """Drop the decoded thumbnails (about 220 KB a drawing): kept for one grouping only, not
    for the rest of the session."""
    _prepared.cache_clear()


def _unit(pixels: np.ndarray, least_spread: float = 1e-3) -> np.ndarray | None:
    values = pixels.ravel() - pixels.mean()
    norm = float(np.linalg.norm(values))
    if norm < least_spread * np.sqrt(values.size):
        return None if least_spread > 1e-3 else np.zeros_like(values)
    return values / norm


@lru_cache(maxsize=8192)
def _prepared(text: str, side: int) -> _Prepared:
    """The thumbnails of ``text`` shrunk to ``side`` (0: as kept); one picture meets many
    look-alikes, so each is decoded once."""
    if side == 0:
        data = zlib.decompress(base64.b64decode(text))
        kept = data[0]
        pixels = np.frombuffer(data, dtype=np.uint8, offset=1).astype(np.float32)
        return _Prepared(pixels[:kept * kept].reshape(kept, kept),
                         pixels[kept * kept:].reshape(kept, kept))
    kept = _prepared(text, 0)
    if kept.side == side:
        return kept
    return _Prepared(*(_shrunk(p, side) for p in kept.pixels))


def _shrunk(pixels: np.ndarray, side: int) -> np.ndarray:
    image = Image.fromarray(pixels, "F").resize((side, side), Image.Resampling.BOX)
    return np.asarray(image, dtype=np.float32)


def _blurred(pixels: np.ndarray) -> np.ndarray:
    """A binomial (1 4 6 4 1) blur along both axes, edges repeated: a Gaussian of sigma 1."""
    kernel = np.array([1.0, 4.0, 6.0, 4.0, 1.0], dtype=np.float32) / 16.0
    out = pixels
    for axis in (0, 1):
        padded = np.pad(out, [(2, 2) if a == axis else (0, 0) for a in (0, 1)], mode="edge")
        length = out.shape[axis]
        out = sum(weight * np.take(padded, np.arange(k, k + length), axis=axis)
                  for k, weight in enumerate(kernel))
    return out
