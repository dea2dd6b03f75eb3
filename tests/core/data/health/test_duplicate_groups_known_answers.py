"""Known answers of the copy grouping, from hand-built facts: thumbnails whose correlations
and detail are stated in the comments, hashes a known number of bits apart, and the exact
edges of each rule (the hash distance, the blank spread, the faint side, the thumbnail-only
search of a folder at its size limit)."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest
from PIL import Image, ImageDraw

import workbench.core.data.health.duplicate_groups as duplicate_groups
from workbench.core.data.health.drawing_detail import detail_thumbnails
from workbench.core.data.health.duplicate_groups import (
    colour_difference,
    connected_groups,
    exact_groups,
    hash_distance,
    near_groups,
    picture_correlation,
    same_blank,
    same_colours,
    same_fine_picture,
    same_picture,
    thumbnail_detail,
    tight_groups,
)
from workbench.core.data.health.image_facts import ImageFacts

YS, XS = np.mgrid[0:16, 0:16]
# A 1 px checkerboard of 60 and 190: its Laplacian is +-4 x 130 where the thumbnail's variance
# is 65^2, so its detail is 64.
BOARD = np.where((YS + XS) % 2 == 0, 60, 190).astype(np.float32)
# A ramp 40..220 (linear: its Laplacian is 0, detail 0) and a parabola along the rows.
RAMP = (XS * 8 + YS * 4 + 40).astype(np.float32)
PARABOLA = ((YS - 7.5) ** 2).astype(np.float32)
RED, BLUE = (200, 30, 30), (30, 30, 200)


def _flipped(pixels: np.ndarray, places: list[tuple[int, int]]) -> np.ndarray:
    """``pixels`` (a board of two greys) with the grey swapped at ``places``."""
    low, high = float(pixels.min()), float(pixels.max())
    out = pixels.copy()
    for y, x in places:
        out[y, x] = high if out[y, x] == low else low
    return out


# Two dark and two light squares swapped: the board's +-1 pattern keeps 256 - 2 x 4 of 256, so
# it correlates 248/256 = 0.969 with the board: a copy with detail (>= 0.95), no copy for the
# thumbnail-only search (< 0.99).
FLIPPED = _flipped(BOARD, [(0, 0), (9, 9), (5, 4), (14, 13)])


def _text(pixels: np.ndarray) -> str:
    return base64.b64encode(np.asarray(pixels).astype(np.uint8).tobytes()).decode("ascii")


def _colours(rgb: tuple[int, int, int]) -> str:
    return _text(np.tile(np.array(rgb, np.uint8), (4, 4, 1)))


def _facts(name: str, whole: np.ndarray | None, phash: str = "0" * 16, *,
           inset: np.ndarray | None = None, digest: str = "", colours: str = "",
           side: int = 64, mean: float = 128.0, std: float = 40.0, fine: str = "",
           detail: str = "") -> ImageFacts:
    text = "" if whole is None else _text(whole)
    return ImageFacts(f"/data/{name}.png", 1, 1, None, side, side, mean=mean, std=std,
                      pixel_digest=digest or name, phash=phash, thumbnail=text,
                      inset_thumbnail=text if inset is None else _text(inset),
                      colours=colours, fine_thumbnail=fine, detail=detail)


def _paths(*names: str) -> list[str]:
    return [f"/data/{name}.png" for name in names]


def test_exact_groups_are_files_with_the_same_pixels_sorted():
    facts = [ImageFacts("/z.png", 1, 1, pixel_digest="d1"),
             ImageFacts("/b.png", 1, 1, pixel_digest="d2"),
             ImageFacts("/a.png", 1, 1, pixel_digest="d1"),
             ImageFacts("/c.png", 1, 1, pixel_digest="d3"),
             ImageFacts("/y.png", 1, 1, pixel_digest="d2"),
             # undecodable files have no digest: they are no copies of one another
             ImageFacts("/e1.png", 1, 1, "broken"), ImageFacts("/e2.png", 1, 1, "broken")]
    assert exact_groups(facts) == [["/a.png", "/z.png"], ["/b.png", "/y.png"]]


def test_the_hash_distance_counts_the_differing_bits():
    assert hash_distance("0000000000000fff", "0000000000000000") == 12
    assert hash_distance("ffffffffffffffff", "0000000000000000") == 64
    assert hash_distance("8f3c00ff12345678", "8f3c00ff12345679") == 1


def test_the_correlation_of_thumbnails_by_hand():
    first = np.array([[0, 1], [2, 3]], np.float32)
    # less the means: (-1.5, -0.5, 0.5, 1.5) and (-2, -1, 0, 3): 8 / sqrt(5 x 14)
    assert duplicate_groups._correlation(first, np.array([[0, 1], [2, 5]], np.float32)) \
        == pytest.approx(8 / math.sqrt(70))
    assert duplicate_groups._correlation(first, 3 - first) == pytest.approx(-1.0)
    # a spread of a fraction of a grey level still correlates (its norm 0.75 is above 1e-6)
    faint = np.array([[0, 0], [0, 1]], np.float32)
    assert duplicate_groups._correlation(faint, faint) == pytest.approx(1.0)
    assert duplicate_groups._correlation(faint, np.zeros((2, 2), np.float32)) == 0.0
    assert duplicate_groups._correlation(BOARD, np.zeros((1, 1), np.float32)) == 0.0


def test_the_detail_of_a_checkerboard_a_ramp_and_a_flat_thumbnail():
    assert thumbnail_detail(BOARD) == pytest.approx(64.0)
    assert thumbnail_detail(RAMP) == 0.0
    assert thumbnail_detail(np.full((16, 16), 90.0, np.float32)) == 0.0
    # a 0/1 board: variance 1/4, Laplacian +-4 (variance 16)
    assert thumbnail_detail((BOARD > 100).astype(np.float32)) == pytest.approx(64.0)


def test_colour_differences_by_hand():
    red, blue = (np.tile(np.array(c, np.float32), (4, 4, 1)) for c in (RED, BLUE))
    # (210, 40, 40) / 290 against (40, 40, 210) / 290: 170 + 0 + 170 over 290
    assert colour_difference(red, blue) == pytest.approx(340 / 290)
    # greys of any brightness have the same chromaticity
    assert colour_difference(np.full((4, 4, 3), 50, np.float32),
                             np.full((4, 4, 3), 200, np.float32)) == pytest.approx(0.0)
    # near black: (10, 10, 15) / 35 against a third each: 2 x (1/3 - 2/7) + (3/7 - 1/3)
    near_black = np.zeros((4, 4, 3), np.float32)
    near_black[..., 2] = 5
    assert colour_difference(near_black, np.zeros((4, 4, 3), np.float32)) \
        == pytest.approx(4 / 21)


def test_same_colours_needs_both_colours_and_a_small_difference():
    red, blue = _facts("red", BOARD, colours=_colours(RED)), _facts("blue", BOARD,
                                                                      colours=_colours(BLUE))
    assert not same_colours(red, blue)
    assert same_colours(red, _facts("red2", BOARD, colours=_colours((200, 31, 30))))
    assert same_colours(red, _facts("old", BOARD))  # measured before colours were kept
    assert same_colours(_facts("old", BOARD), red)


def test_the_bar_follows_the_less_detailed_of_the_two_thumbnails():
    # the board and its flipped copy (detail about 60): 0.969 passes the detailed bar 0.95
    assert same_picture((BOARD, BOARD), (FLIPPED, FLIPPED))
    # two smooth thumbnails (detail 0) correlating 0.975 are not the same picture (0.99)...
    bent = RAMP + 0.5 * PARABOLA
    assert not same_picture((RAMP, RAMP), (bent, bent))
    # ... at 0.998 they are
    slightly = RAMP + 0.1 * PARABOLA
    assert same_picture((RAMP, RAMP), (slightly, slightly))
    # the ramp (detail 0) and the ramp with a faint board (+-7: detail 1.79) correlate 0.986:
    # the smooth bar holds, since one of the two has no detail
    textured = RAMP + 7 * np.where((YS + XS) % 2 == 0, 1.0, -1.0).astype(np.float32)
    assert not same_picture((RAMP, RAMP), (textured, textured))
    assert not same_picture((textured, textured), (RAMP, RAMP))


def test_the_correlation_is_the_best_of_three_alignments():
    rng = np.random.default_rng(5)
    x, y, z, w = (rng.integers(0, 256, (16, 16)).astype(np.float32) for _ in range(4))
    # whole against whole
    assert picture_correlation(_facts("a", x, inset=y), _facts("b", x, inset=z)) \
        == pytest.approx(1.0)
    # the first one's centre against the second's whole (the second is a crop of the first)
    assert picture_correlation(_facts("a", x, inset=y), _facts("b", y, inset=z)) \
        == pytest.approx(1.0)
    # the first one's whole against the second's centre
    assert picture_correlation(_facts("a", x, inset=y), _facts("b", z, inset=x)) \
        == pytest.approx(1.0)
    # four unrelated noise thumbnails: well below any bar
    assert abs(picture_correlation(_facts("a", x, inset=y), _facts("b", z, inset=w))) < 0.3
    # without its centre thumbnail an image has no thumbnails to compare at all
    no_inset = ImageFacts("/data/b.png", 1, 1, pixel_digest="b", thumbnail=_text(x))
    assert picture_correlation(_facts("a", x, inset=y), no_inset) == 0.0


def _blank(name: str, *, side: int = 64, mean: float = 128.0, std: float = 0.0,
           grey: int = 128, colours: tuple[int, int, int] = (128, 128, 128),
           thumbnail: np.ndarray | None = None) -> ImageFacts:
    pixels = np.full((16, 16), grey, np.float32) if thumbnail is None else thumbnail
    return _facts(name, pixels, side=side, mean=mean, std=std, colours=_colours(colours))


def test_blank_pages_are_copies_only_at_the_same_size_grey_and_colour():
    page = _blank("page")
    assert same_blank(page, _blank("again", mean=129.0, std=0.05))  # both edges included
    assert not same_blank(page, _blank("other_size", side=65))
    assert not same_blank(page, _blank("darker", mean=129.5))
    assert not same_blank(page, _blank("noisy", std=0.06))
    assert not same_blank(page, _blank("tinted", colours=(128, 128, 160)))
    # one thumbnail pixel a grey level off: a spread of 0.062, above 0.05
    speck = np.full((16, 16), 128, np.float32)
    speck[3, 3] = 129
    assert not same_blank(page, _blank("speck", thumbnail=speck))
    assert not same_blank(_blank("speck", thumbnail=speck), page)
    no_thumbnail = ImageFacts("/data/x.png", 1, 1, None, 64, 64, mean=128.0,
                              colours=_colours((128, 128, 128)))
    assert not same_blank(page, no_thumbnail)


FAINT = np.where((YS + XS) % 2 == 0, 122, 132).astype(np.float32)  # spread 5, below 8
BIG = np.mgrid[0:48, 0:48]
FINE_BOARD = _text(np.where((BIG[0] // 4 + BIG[1] // 4) % 2 == 0, 90, 160))
FINE_STRIPES = _text(np.where(BIG[1] // 6 % 2 == 0, 90, 160))


def test_faint_pictures_are_judged_on_their_48_px_thumbnails():
    faint = _facts("faint", FAINT, side=48, fine=FINE_BOARD)
    assert same_fine_picture(faint, _facts("again", FAINT, side=48, fine=FINE_BOARD))
    assert not same_fine_picture(faint, _facts("other", FAINT, side=48, fine=FINE_STRIPES))
    # a faint one against one that is not faint (and so keeps no 48 px thumbnail): no copy
    assert not same_fine_picture(faint, _facts("strong", BOARD, side=48))
    assert not same_fine_picture(_facts("strong", BOARD, side=48), faint)
    # 47 px a side is smaller than the 48 px thumbnail: judged by the 16 px rules alone
    assert same_fine_picture(_facts("small", FAINT, side=47, fine=FINE_BOARD),
                             _facts("small2", FAINT, side=47, fine=FINE_STRIPES))
    # neither faint
    assert same_fine_picture(_facts("a", BOARD, side=48), _facts("b", BOARD, side=48))


def test_chains_duplicates_and_cliques_by_hand():
    # the closest pair first decides: B goes with C, then A cannot join
    assert tight_groups(3, [(1, 2), (0, 1)]) == [[1, 2]]
    # a pair listed twice counts once: {0, 1} and 2 share one link, not the two both need
    assert tight_groups(3, [(0, 1), (1, 2), (1, 2)]) == [[0, 1]]
    assert tight_groups(3, [(0, 1), (1, 2), (2, 1)]) == [[0, 1]]
    # an image paired with itself changes nothing
    assert tight_groups(3, [(0, 0), (0, 1), (1, 2)]) == [[0, 1]]
    # two pairs join when every member of one pairs with every member of the other
    full = [(0, 1), (2, 3), (0, 2), (0, 3), (1, 2), (1, 3)]
    assert tight_groups(5, full) == [[0, 1, 2, 3]]
    assert tight_groups(5, full[:-1]) == [[0, 1], [2, 3]]
    # a group of three takes a fourth only with its three links; the links a merged group
    # inherits are counted for the next merge
    three = [(0, 1), (0, 2), (1, 2)]
    assert tight_groups(5, [*three, (3, 0), (3, 1), (3, 2)]) == [[0, 1, 2, 3]]
    assert tight_groups(5, [*three, (3, 0), (3, 1)]) == [[0, 1, 2]]
    # a smaller group joins a larger one whichever is named first
    assert tight_groups(5, [(3, 4), *three, (3, 0), (3, 1), (3, 2), (4, 0), (4, 1), (4, 2)]) \
        == [[0, 1, 2, 3, 4]]
    assert tight_groups(4, [(0, 1), (2, 3), (0, 2), (1, 2), (0, 3)]) == [[0, 1], [2, 3]]
    assert tight_groups(6, [(4, 5), (1, 2)]) == [[1, 2], [4, 5]]


def test_connected_groups_follow_chains():
    assert connected_groups(6, [(3, 4), (0, 1), (1, 2)]) == [[0, 1, 2], [3, 4]]
    assert connected_groups(3, []) == []
    assert connected_groups(5, [(4, 0), (2, 4)]) == [[0, 2, 4]]


def test_the_hash_distance_is_a_bound_that_includes_its_edge():
    board = _facts("board", BOARD)
    # 12 bits apart (the default bound) with a 0.969 correlation: one group
    assert near_groups([board, _facts("copy", FLIPPED, "0000000000000fff")]) == [
        _paths("board", "copy")]
    # 13 bits: not candidates, and 0.969 is below the thumbnail-only bar
    assert near_groups([board, _facts("copy", FLIPPED, "0000000000001fff")]) == []
    assert near_groups([board, _facts("copy", FLIPPED, "0000000000000fff")], max_bits=11) == []
    assert near_groups([board, _facts("copy", FLIPPED, "0000000000000001")], max_bits=1) == [
        _paths("board", "copy")]


def test_fewer_than_two_hashed_images_have_no_groups():
    assert near_groups([_facts("board", BOARD)]) == []
    unhashed = _facts("copy", BOARD, "")
    assert near_groups([_facts("board", BOARD), unhashed]) == []


def test_the_same_pixels_are_copies_without_thumbnails_and_join_first():
    assert near_groups([_facts("a", None, digest="same"), _facts("b", None, digest="same")]) \
        == [_paths("a", "b")]
    # A and B have the same pixels (their thumbnails made differ by hand: 0.953); B and C
    # correlate 0.969, A and C 0.922 (no pair). The same pixels join first: {A, B}, C alone.
    six = [(1, 1), (2, 7), (3, 3), (6, 10), (12, 4), (8, 15)]
    a = _facts("a", _flipped(BOARD, six), digest="same")
    b = _facts("b", BOARD, digest="same")
    c = _facts("c", FLIPPED)
    assert near_groups([a, b, c]) == [_paths("a", "b")]
    assert near_groups([c, b, a]) == [_paths("a", "b")]


def test_blank_pages_of_the_same_size_are_copies_whatever_their_thumbnails_say():
    assert near_groups([_blank("page"), _blank("again", mean=128.5)]) == [
        _paths("again", "page")]
    assert near_groups([_blank("page"), _blank("other", side=100)]) == []


def test_colours_veto_a_copy_found_by_the_hash_and_by_the_thumbnails_alone():
    red = _facts("red", BOARD, colours=_colours(RED))
    # by the hash (0.969)
    assert near_groups([red, _facts("blue", FLIPPED, colours=_colours(BLUE))]) == []
    assert near_groups([red, _facts("red2", FLIPPED, colours=_colours(RED))]) == [
        _paths("red", "red2")]
    # by the thumbnails alone (the hashes 64 bits apart, the thumbnails the same)
    far = "f" * 16
    assert near_groups([red, _facts("blue", BOARD, far, colours=_colours(BLUE))]) == []
    assert near_groups([red, _facts("red2", BOARD, far, colours=_colours(RED))]) == [
        _paths("red", "red2")]


def test_faint_pictures_must_agree_at_48_px_by_the_hash_and_by_the_thumbnails_alone():
    faint = _facts("faint", FAINT, side=48, fine=FINE_BOARD)
    faint_flipped = _flipped(FAINT, [(0, 0), (9, 9), (5, 4), (14, 13)])  # 0.969, detail high
    assert near_groups([faint, _facts("other", faint_flipped, side=48, fine=FINE_STRIPES)]) == []
    assert near_groups([faint, _facts("again", faint_flipped, side=48, fine=FINE_BOARD)]) == [
        _paths("again", "faint")]
    far = "f" * 16
    assert near_groups([faint, _facts("other", FAINT, far, side=48, fine=FINE_STRIPES)]) == []
    assert near_groups([faint, _facts("again", FAINT, far, side=48, fine=FINE_BOARD)]) == [
        _paths("again", "faint")]


def _drawing_detail(badge: bool) -> str:
    """The detail thumbnails of a black frame on a white 96 px page, with a filled badge in
    its corner or without."""
    image = Image.new("RGB", (96, 96), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 20, 76, 76), outline=(0, 0, 0), width=2)
    if badge:
        draw.rectangle((60, 60, 84, 84), fill=(0, 0, 0))
    grey = np.asarray(image.convert("L").resize((64, 64)), dtype=np.float32)
    return detail_thumbnails(image, grey)


def test_drawings_must_be_the_same_drawing_by_the_hash_and_by_the_thumbnails_alone():
    plain, badged = _drawing_detail(False), _drawing_detail(True)
    assert plain and badged
    for phash, thumbnail in (("0000000000000001", FLIPPED), ("f" * 16, BOARD)):
        frame = _facts("frame", BOARD, detail=plain)
        assert near_groups([frame, _facts("badge", thumbnail, phash, detail=badged)]) == []
        assert near_groups([frame, _facts("again", thumbnail, phash, detail=plain)]) == [
            _paths("again", "frame")]
        # a drawing against a picture that keeps no detail: the thumbnails decide
        assert near_groups([frame, _facts("photo", thumbnail, phash)]) == [
            _paths("frame", "photo")]
        assert near_groups([_facts("photo", thumbnail, phash), frame]) == [
            _paths("frame", "photo")]


def test_flat_thumbnails_correlate_with_nothing_in_the_thumbnail_search():
    flat = np.full((16, 16), 90, np.float32)
    # not blank (a spread of 40 in the 40 px figures, too small to be judged at 48 px),
    # hashes 64 bits apart
    assert near_groups([_facts("a", flat, side=40), _facts("b", flat, "f" * 16, side=40)]) == []


def test_the_thumbnail_search_covers_a_folder_of_exactly_its_limit(monkeypatch):
    monkeypatch.setattr(duplicate_groups, "THUMBNAIL_SEARCH_LIMIT", 3)
    far = "f" * 16
    copies = [_facts("a", BOARD), _facts("b", BOARD, far)]
    other = _facts("other", RAMP, "00000000ffffffff")
    assert near_groups([*copies, other]) == [_paths("a", "b")]
    assert near_groups([*copies, other, _facts("more", RAMP[::-1], "0000ffffffff0000")]) == []


def test_copies_are_found_across_the_blocks_of_1024_rows():
    # 2,100 images of random hashes and thumbnails; pairs of copies straddle the blocks of
    # 1,024 rows or lie in the third: 3 and 1,070, 2,050 and 2,090 by the thumbnails alone
    # (hashes far apart); 1,030 and 1,090, 2,060 and 2,095 by the hash (2 bits) with the
    # board's 0.969.
    rng = np.random.default_rng(1)
    hashes = [f"{value:016x}" for value in rng.integers(0, 2 ** 63, 2100, dtype=np.int64)]
    thumbnails = [rng.integers(0, 256, (16, 16)).astype(np.float32) for _ in range(2100)]
    thumbnails[1070], thumbnails[2090] = thumbnails[3], thumbnails[2050]
    # the second pair: a board of 2 px squares, four of its pixels swapped (0.969)
    coarse = np.where((YS // 2 + XS // 2) % 2 == 0, 60, 190).astype(np.float32)
    for (first, second), (board, copy) in zip(
            ((1030, 1090), (2060, 2095)),
            ((BOARD, FLIPPED), (coarse, _flipped(coarse, [(0, 0), (9, 9), (0, 2), (9, 11)]))),
            strict=True):
        thumbnails[first], thumbnails[second] = board, copy
        hashes[second] = f"{int(hashes[first], 16) ^ 0b101:016x}"
    facts = [_facts(f"{i:04d}", thumbnails[i], hashes[i]) for i in range(2100)]
    assert near_groups(facts) == [_paths("0003", "1070"), _paths("1030", "1090"),
                                  _paths("2050", "2090"), _paths("2060", "2095")]



def test_a_group_of_two_takes_a_third_only_when_both_pair_with_it():
    # A~C and B~C, A and B not: C goes with A (the first pair), B stays out
    assert tight_groups(3, [(0, 2), (1, 2)]) == [[0, 2]]
    assert tight_groups(2, [(1, 1), (0, 1)]) == [[0, 1]]


def test_a_brightened_copy_is_found_by_its_thumbnails_alone():
    # 40 grey levels brighter, hashes 64 bits apart: each thumbnail less its own mean is the
    # same (correlation 1.0)
    assert near_groups([_facts("a", BOARD), _facts("b", BOARD + 40, "f" * 16)]) == [
        _paths("a", "b")]


def test_a_thumbnail_one_grey_level_from_flat_still_correlates():
    # one pixel of 256 a level above the rest: a spread of 0.06, its norm 0.998 (not flat);
    # 40 px a side, so not judged at 48 px
    speck = np.full((16, 16), 128, np.float32)
    speck[3, 3] = 129
    assert near_groups([_facts("a", speck, side=40), _facts("b", speck, "f" * 16, side=40)]) \
        == [_paths("a", "b")]


def test_a_candidate_without_thumbnails_is_no_copy():
    assert near_groups([_facts("a", BOARD), _facts("b", None)]) == []
    assert near_groups([_facts("b", None), _facts("a", BOARD)]) == []


def test_the_detail_bar_is_judged_on_the_whole_thumbnails_not_the_centres():
    # wholes with detail (0.969), centres a smooth ramp that correlates with nothing
    assert same_picture((BOARD, RAMP), (FLIPPED, RAMP))
    assert same_picture((FLIPPED, RAMP), (BOARD, RAMP))


def test_the_bars_include_their_edges():
    # a 20 px board (+-65) with 5 + 5 squares swapped: (400 - 20) / 400 = 0.95 exactly
    ys, xs = np.mgrid[0:20, 0:20]
    board = np.where((ys + xs) % 2 == 0, 60, 190).astype(np.float32)
    lows, highs = [(i, i) for i in range(0, 10, 2)], [(i, i + 1) for i in range(0, 10, 2)]
    swapped = _flipped(board, lows + highs)
    assert duplicate_groups._correlation(board, swapped) == 0.95
    assert same_picture((board, board), (swapped, swapped))
    # three and three swapped: 0.97 exactly, the 48 px bar of faint pictures (any square side)
    fine = _flipped(board, lows[:3] + highs[:3])
    first = _facts("first", FAINT, side=48, fine=_text(board))
    assert same_fine_picture(first, _facts("second", FAINT, side=48, fine=_text(fine)))
    # a thumbnail whose detail is exactly 1.0 (4 px, found by search) has the detailed bar:
    # 0.987 passes it
    exact = np.array([[2, 3, 4, 3], [2, 0, 0, 0], [3, 1, 1, 3], [3, 2, 4, 5]], np.float32)
    assert thumbnail_detail(exact) == 1.0
    other = exact.copy()
    other[1, 3] = 1  # detail 1.4, correlation 0.987
    assert same_picture((exact, exact), (other, other))
    # a 16 px spread of exactly 8 (greys 120 and 136) is not faint: the 16 px rules judge it
    spread_8 = np.where((YS + XS) % 2 == 0, 120, 136).astype(np.float32)
    assert same_fine_picture(_facts("a", spread_8, side=48), _facts("b", spread_8, side=48))


def test_drawings_join_by_their_fine_detail_first():
    # B is the board, A the board with six squares swapped (0.953 with B), C the flipped board
    # (0.969 with B, 0.922 with A: no pair). By the thumbnails B would go with C; but A and B
    # are the same drawing (detail correlation 1.0) and C is a 60 px copy (0.984): A and B.
    frame, small = _drawing_detail(False), _small_frame_detail()
    six = [(1, 1), (2, 7), (3, 3), (6, 10), (12, 4), (8, 15)]
    a = _facts("a", _flipped(BOARD, six), detail=frame)
    b = _facts("b", BOARD, detail=frame)
    c = _facts("c", FLIPPED, detail=small)
    assert near_groups([a, b, c]) == [_paths("a", "b")]


def _small_frame_detail() -> str:
    """The frame of ``_drawing_detail`` drawn at 60 px."""
    image = Image.new("RGB", (96, 96), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 20, 76, 76), outline=(0, 0, 0), width=2)
    image = image.resize((60, 60), Image.Resampling.BILINEAR)
    grey = np.asarray(image.convert("L").resize((64, 64)), dtype=np.float32)
    return detail_thumbnails(image, grey)
