"""Group images with the same pixels, and images whose perceptual hashes are close.

Near duplicates are found by comparing every pair of 64-bit perceptual hashes (imagehash's
``phash``: the DCT of a 32x32 grey copy, one bit a coefficient above the median). Pairs within
``NEAR_DUPLICATE_BITS`` differing bits are joined, and groups are the connected components.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from workbench.core.data.health.image_facts import ImageFacts

# Measured on generated scenes (distinct_image, 200 at 64 and 96 px): copies re-encoded at JPEG
# quality 30 differ from their original by at most 6 bits, resized to half by 4, cropped by 2%
# of each side by 10, brightened by 25% by 10 (99th percentiles 4, 2, 10, 8); no two of 400
# distinct scenes differ by fewer than 14. The health benchmark measures precision and recall.
NEAR_DUPLICATE_BITS = 10
# Rows of hashes compared against all others at once (memory: rows x images bytes).
_CHUNK = 1024


def exact_groups(facts: list[ImageFacts]) -> list[list[str]]:
    """Paths with the same decoded pixels, groups of two or more, each sorted."""
    by_digest: dict[str, list[str]] = defaultdict(list)
    for item in facts:
        if item.pixel_digest:
            by_digest[item.pixel_digest].append(item.path)
    return sorted(sorted(paths) for paths in by_digest.values() if len(paths) > 1)


def near_groups(facts: list[ImageFacts], max_bits: int = NEAR_DUPLICATE_BITS) -> list[list[str]]:
    """Connected groups of images whose perceptual hashes differ by at most ``max_bits`` bits
    (exact duplicates included), groups of two or more, each sorted."""
    hashed = [item for item in facts if item.phash]
    if len(hashed) < 2:
        return []
    hashes = np.array([int(item.phash, 16) for item in hashed], dtype=np.uint64)
    groups = connected_groups(len(hashed), _close_pairs(hashes, max_bits))
    return sorted(sorted(hashed[index].path for index in group) for group in groups)


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
