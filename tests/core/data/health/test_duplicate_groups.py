"""Groups of copies are images close to one another (complete linkage), never a chain; a close
hash alone does not make two pictures copies."""

from __future__ import annotations

import base64

import numpy as np

from workbench.core.data.health.duplicate_groups import near_groups, tight_groups
from workbench.core.data.health.image_facts import ImageFacts


def _thumbnail(pixels: np.ndarray) -> str:
    return base64.b64encode(pixels.astype(np.uint8).tobytes()).decode("ascii")


def _checkerboard(cell: int) -> np.ndarray:
    ys, xs = np.mgrid[0:16, 0:16]
    return np.where((ys // cell + xs // cell) % 2 == 0, 40, 210)


def _facts(name: str, phash: str, pixels: np.ndarray) -> ImageFacts:
    text = _thumbnail(pixels)
    return ImageFacts(f"/data/{name}.png", 1, 1, None, 64, 64, pixel_digest=name,
                      phash=phash, thumbnail=text, inset_thumbnail=text)


def test_pairs_that_chain_are_not_one_group():
    # A~B, B~C, A!~C: at most a pair, never all three.
    assert tight_groups(3, [(0, 1), (1, 2)]) == [[0, 1]]
    # A clique of three keeps its tail out: D pairs only with C.
    assert tight_groups(4, [(0, 1), (0, 2), (1, 2), (2, 3)]) == [[0, 1, 2]]
    # Two cliques joined by one pair stay two groups.
    pairs = [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (3, 5), (4, 5)]
    assert tight_groups(6, pairs) == [[0, 1, 2], [3, 4, 5]]


def test_hashes_within_the_threshold_of_a_middle_image_only_pair_it_once():
    picture = _checkerboard(4)
    # 8 bits from A to B and from B to C, 16 from A to C (the threshold is 12).
    facts = [_facts("a", "0000000000000000", picture), _facts("b", "00000000000000ff", picture),
             _facts("c", "000000000000ffff", picture)]
    assert near_groups(facts) == [["/data/a.png", "/data/b.png"]]


def test_a_close_hash_with_another_picture_is_not_a_copy():
    same_hash = "8f3c00ff12345678"
    facts = [_facts("board", same_hash, _checkerboard(4)),
             _facts("stripes", same_hash, np.where(np.mgrid[0:16, 0:16][1] % 4 < 2, 40, 210)),
             _facts("board_copy", "8f3c00ff12345679", _checkerboard(4) + 3)]
    assert near_groups(facts) == [["/data/board.png", "/data/board_copy.png"]]
