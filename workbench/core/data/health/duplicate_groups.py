"""Group images with the same pixels, and images that are the same picture.

Two images are near duplicates ("the same picture") when both of two tests agree:

- their 64-bit perceptual hashes (imagehash's ``phash``: the DCT of a 32x32 grey copy, one bit
  a coefficient above the median) differ by at most ``NEAR_DUPLICATE_BITS`` bits, which finds
  the candidates among all pairs cheaply;
- their 16 px grey thumbnails correlate (Pearson) at least ``SAME_PICTURE_CORRELATION``,
  taking the best of the whole thumbnails and of one against the other's centre (a crop of a
  few percent lines up with the centre). For a pair with little fine detail (``thumbnail
  detail`` below ``DETAILED``: upscaled scans, soft pictures), the hash alone says little (all
  1,797 of scikit-learn's 8x8 digit scans lie within a few chains of 10 bits), so the bar is
  ``SMOOTH_CORRELATION``.

Thumbnails that correlate at least ``THUMBNAIL_ONLY_CORRELATION`` are copies whatever their
hashes (line art whose hash a re-encoding moves), in folders of up to
``THUMBNAIL_SEARCH_LIMIT`` images.

Two drawings (clip art on a flat page) must also be the same drawing at the resolution both
files have (``drawing_detail``): openclipart's stars of N points, speech bubbles with the tail
elsewhere and icons with another badge agree in every small thumbnail.

A group is images that are each the same picture as every other member (complete linkage),
never a chain of pairs whose ends have nothing in common; the closest pairs join first, so a
copy joins its own original before a look-alike of it. Measured by ``python -m
workbench.bench.health_benchmark`` on real sets (README, Data health).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from workbench.core.data.health.drawing_detail import (
    alike_drawings,
    drawing_difference,
    forget_prepared,
)
from workbench.core.data.health.image_facts import (
    FAINT_SPREAD,
    FINE_SIDE,
    ImageFacts,
    colour_pixels,
    thumbnail_pixels,
)

# The candidates' hash distance. On the real sets re-encoded (JPEG quality 75), resized and
# 3%-cropped copies lie within 12 bits 0.87..1.00 of the time; distinct digit scans (8x8, upscaled)
# as close as 0 bits, which the thumbnails below tell apart.
NEAR_DUPLICATE_BITS = 12
# Thumbnail correlation of a pair with detail (photographs, drawings): re-encoded copies of
# 32 px photo patches reach 0.95 in 0.84 of pairs, no distinct photo patch pair does.
SAME_PICTURE_CORRELATION = 0.95
# ... and of a pair with little detail: distinct 28 px digit scans reach 0.99 in 0.3% of
# their candidate pairs (0.98 in 3%), their re-encoded copies all reach it.
SMOOTH_CORRELATION = 0.99
# Laplacian variance over variance of the 16 px thumbnail above which a picture has detail
# (digit scans 0.12..0.62, photo patches median 0.96).
DETAILED = 1.0
# Correlation at 48 px that two faint pictures (16 px spread below 8 grey levels: thin line
# art) must reach: openclipart's stars of 35, 38 and 41 points correlate 0.995 at 16 px, 0.98
# to 0.99 at 32 px and 0.93 to 0.95 at 48 px, where a JPEG re-encoding of one keeps 0.99 (60
# random star pairs: up to 0.97; their re-encodings 0.983 or more in 95%).
FINE_CORRELATION = 0.97
# Mean chromaticity difference ((r, g, b) / (r + g + b), L1, over a 4x4 colour thumbnail) up to
# which two pictures have the same colours: the same arrow in red and in blue, flags that share
# a layout, a green and an orange LED are not copies (clip art); brightness does not move it.
SAME_COLOURS = 0.05
# Up to this many images, pairs whose whole thumbnails correlate at least
# THUMBNAIL_ONLY_CORRELATION are copies too, whatever their hashes: the hash of thin line art
# (a star of a few strokes) moves 19..26 bits under JPEG re-encoding while its thumbnail keeps
# 0.995. Without the hash's word the bar is the smooth one: at 0.95 overlapping patches of a
# periodic brick wall pass (5% of the textures set). One matrix product of N x 256
# thumbnails: about a second for 6,000 images.
THUMBNAIL_SEARCH_LIMIT = 20_000
THUMBNAIL_ONLY_CORRELATION = 0.99
# Luminance spread (grey levels, of the 64 px figures and of the 16 px thumbnail) up to which a
# picture is blank, one grey everywhere: a transparent page and its JPEG re-encoding over the
# page grey are 0.0 and 0.0 (openclipart), faint icons on a transparent page 0.1 to 0.9.
BLANK_SPREAD = 0.05
# Rows of hashes compared against all others at once (memory: rows x images bytes).
_CHUNK = 1024
def exact_groups(facts: list[ImageFacts]) -> list[list[str]]:
    """Paths with the same decoded pixels, groups of two or more, each sorted."""
    by_digest: dict[str, list[str]] = defaultdict(list)
    for item in facts:
        if item.pixel_digest:
            by_digest[item.pixel_digest].append(item.path)
    return sorted(sorted(paths) for paths in by_digest.values() if len(paths) > 1)


def near_groups(facts: list[ImageFacts], max_bits: int = NEAR_DUPLICATE_BITS
                ) -> list[list[str]]:
    """Groups of two or more images that are each the same picture as every other member
    (exact duplicates included), each sorted."""
    hashed = [item for item in facts if item.phash]
    if len(hashed) < 2:
        return []
    hashes = np.array([int(item.phash, 16) for item in hashed], dtype=np.uint64)
    thumbnails: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    drawn: dict[tuple[int, int], tuple[float | None, float]] = {}

    def same_drawing_pair(first: int, second: int) -> bool:
        one, other = hashed[first].detail, hashed[second].detail
        if not one or not other:
            return True
        drawn[first, second] = drawing_difference(one, other)
        return alike_drawings(*drawn[first, second])

    def same(first: int, second: int) -> bool:
        if hashed[first].pixel_digest == hashed[second].pixel_digest:
            return True
        if same_blank(hashed[first], hashed[second]):
            return True
        return same_picture(_thumbnails(hashed, first, thumbnails),
                            _thumbnails(hashed, second, thumbnails)) \
            and same_colours(hashed[first], hashed[second]) \
            and same_fine_picture(hashed[first], hashed[second]) \
            and same_drawing_pair(first, second)

    pairs = {pair for pair in _close_pairs(hashes, max_bits) if same(*pair)}
    if len(hashed) <= THUMBNAIL_SEARCH_LIMIT:
        pairs |= {pair for pair in _correlated_pairs(hashed) - pairs
                  if same_colours(hashed[pair[0]], hashed[pair[1]])
                  and same_fine_picture(hashed[pair[0]], hashed[pair[1]])
                  and same_drawing_pair(*pair)}

    def closeness(pair: tuple[int, int]) -> float:
        """2 for the same pixels, else the correlation of the drawings' fine detail, else of
        the 16 px thumbnails."""
        if hashed[pair[0]].pixel_digest == hashed[pair[1]].pixel_digest:
            return 2.0
        detail = drawn.get(pair, (None, 0.0))[0]
        if detail is not None:
            return detail
        return _aligned_correlation(_thumbnails(hashed, pair[0], thumbnails),
                                    _thumbnails(hashed, pair[1], thumbnails))

    # The closest pairs join first: a copy joins its own original before a look-alike does.
    scores = {pair: closeness(pair) for pair in pairs}
    forget_prepared()
    groups = tight_groups(len(hashed), sorted(pairs, key=lambda pair: (-scores[pair], pair)))
    return sorted(sorted(hashed[index].path for index in group) for group in groups)


def picture_correlation(first: ImageFacts, second: ImageFacts) -> float:
    """The thumbnails' correlation of two images, the best alignment of the three."""
    return _aligned_correlation(_thumbnails([first, second], 0, {}),
                                _thumbnails([first, second], 1, {}))


def _aligned_correlation(first: tuple[np.ndarray, np.ndarray],
                         second: tuple[np.ndarray, np.ndarray]) -> float:
    whole, inset = first
    other_whole, other_inset = second
    return max(_correlation(whole, other_whole), _correlation(inset, other_whole),
               _correlation(whole, other_inset))


def same_picture(first: tuple[np.ndarray, np.ndarray],
                 second: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether two (thumbnail, centre thumbnail) pairs show the same picture."""
    whole, other_whole = first[0], second[0]
    correlation = _aligned_correlation(first, second)
    detailed = min(thumbnail_detail(whole), thumbnail_detail(other_whole)) >= DETAILED
    return correlation >= (SAME_PICTURE_CORRELATION if detailed else SMOOTH_CORRELATION)


def same_blank(first: ImageFacts, second: ImageFacts) -> bool:
    """Whether two images are both blank (``BLANK_SPREAD``), of the same size, grey and colours:
    the same picture, whose flat thumbnails correlate with nothing. (The pixel digests differ
    when one is a JPEG, decoded at a reduced scale.) Blank pages of other sizes are not copies."""
    def blank(item: ImageFacts) -> bool:
        return bool(item.thumbnail) and item.std <= BLANK_SPREAD \
            and float(thumbnail_pixels(item.thumbnail).std()) <= BLANK_SPREAD

    return (blank(first) and blank(second)
            and (first.width, first.height) == (second.width, second.height)
            and abs(first.mean - second.mean) <= 1.0 and same_colours(first, second))


def same_fine_picture(first: ImageFacts, second: ImageFacts) -> bool:
    """Whether two images whose 16 px thumbnails are faint (thin line art) correlate at least
    ``FINE_CORRELATION`` at 48 px; True when neither is faint."""
    # Only a picture with more pixels than the 48 px thumbnail can hide detail from the 16 px
    # one: a faint 32 px photo patch is faint at every size (its copies keep the 16 px rule).
    faint = any(item.thumbnail and min(item.width, item.height) >= FINE_SIDE
                and float(thumbnail_pixels(item.thumbnail).std()) < FAINT_SPREAD
                for item in (first, second))
    if not faint:
        return True
    if not first.fine_thumbnail or not second.fine_thumbnail:
        return False  # one faint, the other far from it: not the same picture
    return _correlation(thumbnail_pixels(first.fine_thumbnail),
                        thumbnail_pixels(second.fine_thumbnail)) >= FINE_CORRELATION


def same_colours(first: ImageFacts, second: ImageFacts) -> bool:
    """Whether two images have the same colours where they are (``SAME_COLOURS``); images
    measured before colours were kept count as the same."""
    if not first.colours or not second.colours:
        return True
    return colour_difference(colour_pixels(first.colours),
                             colour_pixels(second.colours)) <= SAME_COLOURS


def colour_difference(first: np.ndarray, second: np.ndarray) -> float:
    """Mean L1 difference of the chromaticities (r, g, b) / (r + g + b) of two colour
    thumbnails; 10 is added to each channel so that near-black cells count as grey."""
    def chromaticity(pixels: np.ndarray) -> np.ndarray:
        lifted = pixels + 10.0
        return lifted / lifted.sum(axis=-1, keepdims=True)

    return float(np.abs(chromaticity(first) - chromaticity(second)).sum(axis=-1).mean())


def thumbnail_detail(pixels: np.ndarray) -> float:
    """Variance of the Laplacian over the variance of a thumbnail (0 for a flat one)."""
    variance = float(pixels.var())
    if variance < 1e-6:
        return 0.0
    laplacian = (pixels[1:-1, :-2] + pixels[1:-1, 2:] + pixels[:-2, 1:-1] + pixels[2:, 1:-1]
                 - 4.0 * pixels[1:-1, 1:-1])
    return float(laplacian.var()) / variance


def tight_groups(count: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    """Groups of two or more of ``count`` items in which every two members are a pair of
    ``pairs`` (complete linkage), each in index order; an item is in one group at most.

    Greedy, in the order of ``pairs`` (closest first): a pair joins the groups of its two
    items when every member of one pairs with every member of the other. A~B, B~C without
    A~C gives {A, B} or {B, C}, never {A, B, C}.
    """
    parent = list(range(count))
    size = [1] * count
    # links[g][h]: how many pairs join group g and group h (both named by their root).
    links: dict[int, dict[int, int]] = defaultdict(dict)
    for first, second in pairs:
        if first != second and second not in links[first]:
            links[first][second] = 1
            links[second][first] = 1
    for first, second in pairs:
        one, other = _find(parent, first), _find(parent, second)
        if one == other or links[one].get(other, 0) < size[one] * size[other]:
            continue
        if size[one] < size[other]:
            one, other = other, one
        parent[other] = one
        size[one] += size[other]
        for group, count_between in links.pop(other).items():
            del links[group][other]
            if group != one:
                links[one][group] = links[one].get(group, 0) + count_between
                links[group][one] = links[one][group]
        links[one].pop(one, None)
    members: dict[int, list[int]] = defaultdict(list)
    for index in range(count):
        members[_find(parent, index)].append(index)
    return sorted(group for group in members.values() if len(group) > 1)


def connected_groups(count: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    """The groups of two or more of ``count`` items that ``pairs`` join, directly or through
    others (connected components), each in index order."""
    parent = list(range(count))
    for first, second in pairs:
        _union(parent, first, second)
    members: dict[int, list[int]] = defaultdict(list)
    for index in range(count):
        members[_find(parent, index)].append(index)
    return [group for group in members.values() if len(group) > 1]


def _thumbnails(hashed: list[ImageFacts], index: int,
                cache: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if index not in cache:
        item = hashed[index]
        if item.thumbnail and item.inset_thumbnail:
            cache[index] = (thumbnail_pixels(item.thumbnail),
                            thumbnail_pixels(item.inset_thumbnail))
        else:
            cache[index] = (np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32))
    return cache[index]


def _correlated_pairs(hashed: list[ImageFacts]) -> set[tuple[int, int]]:
    """(i, j), i < j, whose whole thumbnails correlate at least THUMBNAIL_ONLY_CORRELATION."""
    usable = [i for i, item in enumerate(hashed) if item.thumbnail]
    if len(usable) < 2:
        return set()
    rows = np.stack([thumbnail_pixels(hashed[i].thumbnail).ravel() for i in usable])
    rows -= rows.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(rows, axis=1)
    flat = norms < 1e-3
    rows /= np.where(flat, 1.0, norms)[:, None]
    rows[flat] = 0.0  # a flat thumbnail correlates with nothing
    pairs: set[tuple[int, int]] = set()
    for start in range(0, len(rows), _CHUNK):
        block = rows[start:start + _CHUNK] @ rows.T
        found_rows, found_cols = np.nonzero(block >= THUMBNAIL_ONLY_CORRELATION)
        for row, col in zip(found_rows.tolist(), found_cols.tolist(), strict=True):
            if start + row < col:
                pairs.add((usable[start + row], usable[col]))
    return pairs


def _correlation(first: np.ndarray, second: np.ndarray) -> float:
    """Pearson correlation of two thumbnails; 0 when either is flat or missing."""
    if first.shape != second.shape:
        return 0.0
    a = first.ravel() - first.mean()
    b = second.ravel() - second.mean()
    norm = float(np.sqrt(float(a @ a) * float(b @ b)))
    return float(a @ b) / norm if norm > 1e-6 else 0.0


def hash_distance(first: str, second: str) -> int:
    """Differing bits between two hex perceptual hashes."""
    return (int(first, 16) ^ int(second, 16)).bit_count()


def _close_pairs(hashes: np.ndarray, max_bits: int) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    for start in range(0, len(hashes), _CHUNK):
        block = hashes[start:start + _CHUNK]
        distances = np.bitwise_count(block[:, None] ^ hashes[None, :])
        rows, cols = np.nonzero(distances <= max_bits)
        for row, col in zip(rows.tolist(), cols.tolist(), strict=True):
            if start + row < col:
                pairs.append((start + row, col))
    return pairs


def _find(parent: list[int], index: int) -> int:
    while parent[index] != index:
        parent[index] = parent[parent[index]]
        index = parent[index]
    return index


def _union(parent: list[int], first: int, second: int) -> None:
    parent[_find(parent, first)] = _find(parent, second)
