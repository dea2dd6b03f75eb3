"""Groups of copies are images close to one another (complete linkage), never a chain; a close
hash alone does not make two pictures copies."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from workbench.core.data.health.duplicate_groups import near_groups, tight_groups
from workbench.core.data.health.generated_folders import write_distinct_images
from workbench.core.data.health.health_check import check_health
from workbench.core.data.health.image_facts import ImageFacts


def _thumbnail(pixels: np.ndarray) -> str:
    return base64.b64encode(pixels.astype(np.uint8).tobytes()).decode("ascii")


def _checkerboard(cell: int) -> np.ndarray:
    ys, xs = np.mgrid[0:16, 0:16]
    return np.where((ys // cell + xs // cell) % 2 == 0, 60, 190)


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


def test_a_middle_image_close_to_two_others_pairs_with_one_of_them_only():
    # B is A with noise, C is B with more: A~B and B~C by hash (8 bits each, the threshold is
    # 12) and thumbnails (correlation >= 0.95), A and C by neither (16 bits, below 0.95).
    rng = np.random.default_rng(0)
    a = _checkerboard(4).astype(np.float64)
    b = np.clip(np.round(a + rng.normal(0, 17, a.shape)), 0, 255)
    c = np.clip(np.round(b + rng.normal(0, 17, a.shape)), 0, 255)

    def correlation(first, second):
        return np.corrcoef(first.ravel(), second.ravel())[0, 1]

    assert correlation(a, b) > 0.96 and correlation(b, c) > 0.96 and correlation(a, c) < 0.94
    facts = [_facts("a", "0000000000000000", a), _facts("b", "00000000000000ff", b),
             _facts("c", "000000000000ffff", c)]
    assert near_groups(facts) == [["/data/a.png", "/data/b.png"]]


def test_a_close_hash_with_another_picture_is_not_a_copy():
    same_hash = "8f3c00ff12345678"
    facts = [_facts("board", same_hash, _checkerboard(4)),
             _facts("stripes", same_hash, np.where(np.mgrid[0:16, 0:16][1] % 4 < 2, 40, 210)),
             _facts("board_copy", "8f3c00ff12345679", _checkerboard(4) + 3)]
    assert near_groups(facts) == [["/data/board.png", "/data/board_copy.png"]]


def _arrow(colour: tuple[int, int, int]) -> Image.Image:
    """A thick arrow of ``colour`` on a transparent 96 px page, as clip art has them."""
    image = Image.new("RGBA", (96, 96), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.rectangle((30, 40, 80, 56), fill=(*colour, 255))
    draw.polygon([(8, 48), (36, 20), (36, 76)], fill=(*colour, 255))
    return image


def test_the_same_drawing_in_another_colour_is_not_a_copy(tmp_path):
    folder = tmp_path / "clipart" / "arrows"
    folder.mkdir(parents=True)
    _arrow((200, 30, 30)).save(folder / "red.png")
    _arrow((30, 30, 200)).save(folder / "blue.png")
    over_grey = Image.alpha_composite(Image.new("RGBA", (96, 96), (128, 128, 128, 255)),
                                      _arrow((200, 30, 30)))
    over_grey.convert("RGB").save(folder / "red_again.jpg", quality=75)
    write_distinct_images(tmp_path / "clipart" / "others", 6, seed=3)
    report = check_health(tmp_path / "clipart", cache_dir=str(tmp_path / "cache"), threads=2)
    groups = [set(item.files) for item in report.finding("near_duplicate").items]
    assert groups == [{str(folder / "red.png"), str(folder / "red_again.jpg")}]


STARS = Path("/usr/share/openclipart/png/shapes/stars")


@pytest.mark.skipif(not STARS.is_dir(), reason="Debian's openclipart-png is not installed")
def test_thin_line_stars_of_different_points_are_not_copies_but_a_re_encoding_is(tmp_path):
    # Real clip art: stars of 35, 38 and 41 points look alike at 16 px (faint thin lines).
    folder = tmp_path / "clipart" / "stars"
    folder.mkdir(parents=True)
    names = ("star_35pt12step.png", "star_38pt13step.png", "star_41pt14step.png")
    for name in names:
        shutil.copy(STARS / name, folder / name)
    with Image.open(STARS / names[0]) as star:
        page = Image.new("RGBA", star.size, (128, 128, 128, 255))
        Image.alpha_composite(page, star.convert("RGBA")).convert("RGB").save(
            folder / "star_35_again.jpg", quality=75)
    write_distinct_images(tmp_path / "clipart" / "others", 6, seed=3)
    report = check_health(tmp_path / "clipart", cache_dir=str(tmp_path / "cache"), threads=2)
    groups = [set(item.files) for item in report.finding("near_duplicate").items]
    assert groups == [{str(folder / names[0]), str(folder / "star_35_again.jpg")}]
