"""Known answers of what is measured from one image (``image_facts.py``) and how two drawings
are told apart (``drawing_detail.py``), from tiny PNGs written with Pillow and arrays built by
hand."""

from __future__ import annotations

import base64
import hashlib
import os
import zlib

import numpy as np
import pytest
from PIL import Image, ImageDraw

from workbench.core.data.health import drawing_detail, image_facts
from workbench.core.data.health.drawing_detail import (
    alike_drawings,
    detail_thumbnails,
    drawing_difference,
    flat_share,
    is_drawing,
)
from workbench.core.data.health.image_facts import (
    colour_pixels,
    file_key,
    thumbnail_pixels,
)

# drawing_detail.py


def test_the_flat_share_counts_the_pixels_within_one_grey_of_the_commonest():
    # the commonest grey 10 (twice), 9..11 hold 4 of 6
    assert flat_share(np.array([10, 10, 11, 9, 12, 50.0])) == pytest.approx(4 / 6)
    # at grey 0 the window is 0..1
    assert flat_share(np.array([0, 0, 1, 255.0])) == pytest.approx(3 / 4)
    # at 255 it is 254..255; values are rounded and clipped first
    assert flat_share(np.array([255, 255, 254.4, 300.0, 3.0])) == pytest.approx(4 / 5)
    assert flat_share(np.array([-7.0, 0.4, 200.0])) == pytest.approx(2 / 3)
    assert flat_share(np.array([])) == 0.0


def test_a_drawing_has_three_tenths_of_its_pixels_at_one_grey():
    assert is_drawing(np.array([100, 100, 100, 0, 20, 40, 60, 150, 180, 220.0]))
    assert not is_drawing(np.array([100, 100, 0, 20, 40, 60, 150, 180, 220, 250.0]))


def test_alike_drawings_at_the_edges():
    assert alike_drawings(None, 40.0)  # no fine detail: the blocks decide
    assert alike_drawings(0.65, 40.0)
    assert not alike_drawings(0.649, 10.0)
    assert not alike_drawings(0.99, 40.01)
    assert not alike_drawings(None, 41.0)


def _frame(side: int = 100, badge: bool = False) -> Image.Image:
    """A white page with a 3 px black border and a black square in the middle."""
    image = Image.new("RGB", (side, side), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    s = side / 100
    draw.rectangle((0, 0, side - 1, side - 1), outline=(0, 0, 0), width=max(1, round(3 * s)))
    draw.rectangle((40 * s, 40 * s, 59 * s, 59 * s), fill=(0, 0, 0))
    if badge:
        draw.rectangle((70 * s, 70 * s, 90 * s, 90 * s), fill=(0, 0, 0))
    return image


def _metric(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L").resize((64, 64)), dtype=np.float32)


def _decoded(text: str) -> tuple[int, np.ndarray, np.ndarray]:
    data = zlib.decompress(base64.b64decode(text))
    side = data[0]
    pixels = np.frombuffer(data, np.uint8, offset=1)
    return side, pixels[:side * side].reshape(side, side), pixels[side * side:].reshape(side,
                                                                                         side)


def test_detail_thumbnails_keep_the_whole_and_the_centre_at_up_to_96_px():
    frame = _frame()
    side, whole, inset = _decoded(detail_thumbnails(frame, _metric(frame)))
    assert side == 96 and whole.shape == inset.shape == (96, 96)
    # the whole keeps the black border; the centre without 3% a side is white at its edge
    assert whole[0, 0] == 0 and whole[95, 95] == 0 and whole[0, 48] == 0
    assert inset[1, 1] == 255 and inset[94, 94] == 255 and inset[48, 48] == 0
    # a 60 px drawing keeps 60 px thumbnails; a 47 px one none
    small = _frame(60)
    assert _decoded(detail_thumbnails(small, _metric(small)))[0] == 60
    tiny = _frame(47)
    assert detail_thumbnails(tiny, _metric(tiny)) == ""
    assert detail_thumbnails(_frame(48), _metric(_frame(48))) != ""
    # a photograph (no grey holds three tenths of it) keeps none
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 256, (100, 100, 3),
                                                              dtype=np.uint8))
    assert detail_thumbnails(noise, _metric(noise)) == ""


def test_a_poster_is_shrunk_to_the_same_thumbnails():
    # a 400 px copy (first box-reduced by 2) keeps the same picture as the 100 px original
    frame = _frame()
    poster = frame.resize((400, 400), Image.Resampling.NEAREST)
    _, whole, inset = _decoded(detail_thumbnails(poster, _metric(poster)))
    _, original, original_inset = _decoded(detail_thumbnails(frame, _metric(frame)))
    assert np.abs(whole.astype(int) - original).mean() < 3
    assert whole[0, 0] == 0 and inset[1, 1] == 255 and inset[48, 48] == 0


def test_drawing_differences_of_a_copy_a_look_alike_and_a_smaller_copy():
    frame = _frame()
    plain = detail_thumbnails(frame, _metric(frame))
    detail, block = drawing_difference(plain, plain)
    assert detail == pytest.approx(1.0) and block == 0.0
    badged = _frame(badge=True)
    detail, block = drawing_difference(plain, detail_thumbnails(badged, _metric(badged)))
    # the badge: a block of an eighth of the side that is black in one, white in the other
    assert block > 200 and not alike_drawings(detail, block)
    # a 60 px copy is compared at 60 px: fine detail 0.98, blocks 15.8 grey levels apart
    small = _frame(60)
    detail, block = drawing_difference(plain, detail_thumbnails(small, _metric(small)))
    assert detail == pytest.approx(0.984, abs=0.005) and block == pytest.approx(15.75, abs=0.1)
    # the other way round the blocks are matched to the small one's grey: 16.8
    back_detail, back_block = drawing_difference(detail_thumbnails(small, _metric(small)), plain)
    assert back_detail == pytest.approx(detail) and back_block == pytest.approx(16.78, abs=0.1)


def test_a_brightened_copy_differs_in_no_block_and_blank_pages_have_no_detail():
    frame = _frame()
    plain = detail_thumbnails(frame, _metric(frame))
    # grey 0 -> 60 and 255 -> 195: the same drawing at lower contrast, matched before the blocks
    soft = frame.point(lambda v: 60 + v * 135 // 255)
    detail, block = drawing_difference(plain, detail_thumbnails(soft, _metric(soft)))
    assert detail == pytest.approx(1.0, abs=0.01) and block < 2.0
    page = Image.new("RGB", (100, 100), (255, 255, 255))
    blank = detail_thumbnails(page, _metric(page))
    assert drawing_difference(blank, blank) == (None, 0.0)
    detail, block = drawing_difference(plain, blank)
    assert detail is None and block > 100


def test_a_cropped_copy_lines_up_with_the_centre():
    frame = _frame()
    plain = detail_thumbnails(frame, _metric(frame))
    crop = frame.crop((3, 3, 97, 97))
    detail, block = drawing_difference(plain, detail_thumbnails(crop, _metric(crop)))
    assert detail > 0.9 and block < 20
    detail, block = drawing_difference(detail_thumbnails(crop, _metric(crop)), plain)
    assert detail > 0.9 and block < 20


def test_the_blur_is_a_binomial_kernel_with_repeated_edges():
    impulse = np.zeros((9, 9), np.float32)
    impulse[4, 4] = 1.0
    blurred = drawing_detail._blurred(impulse)
    assert blurred[4, 4] == pytest.approx((6 / 16) ** 2)
    assert blurred[4, 5] == pytest.approx(6 / 16 * 4 / 16)
    assert blurred[2, 4] == pytest.approx(6 / 16 / 16)
    assert blurred.sum() == pytest.approx(1.0)
    corner = np.zeros((9, 9), np.float32)
    corner[0, 0] = 1.0
    # the edge repeated twice beyond the corner: weights 1 + 4 + 6 along each axis
    assert drawing_detail._blurred(corner)[0, 0] == pytest.approx((11 / 16) ** 2)


# image_facts.py


def test_a_flat_grey_picture_is_measured_by_hand(tmp_path):
    path = tmp_path / "grey.png"
    Image.new("RGB", (64, 48), (100, 100, 100)).save(path)
    facts = image_facts.image_facts(str(path))
    assert (facts.path, facts.size_bytes, facts.mtime_ns) == (str(path), *file_key(str(path)))
    assert file_key(str(path)) == (os.path.getsize(path), os.stat(path).st_mtime_ns)
    assert facts.error is None and (facts.width, facts.height) == (64, 48)
    assert facts.grayscale and facts.mean == 100.0 and facts.std == 0.0
    assert facts.sharpness == 0.0
    assert facts.pixel_digest == hashlib.sha1(
        np.full((48, 64, 3), 100, np.uint8).tobytes() + b"64x48").hexdigest()
    assert len(facts.phash) == 16
    for thumbnail, side in ((facts.thumbnail, 16), (facts.inset_thumbnail, 16),
                            (facts.fine_thumbnail, 48)):  # faint: it keeps the 48 px one
        assert np.array_equal(thumbnail_pixels(thumbnail), np.full((side, side), 100.0))
    assert np.array_equal(colour_pixels(facts.colours), np.full((4, 4, 3), 100.0))
    assert _decoded(facts.detail)[0] == 48  # one grey everywhere: a (blank) page


def test_a_red_and_blue_picture_is_measured_by_hand(tmp_path):
    path = tmp_path / "halves.png"
    pixels = np.zeros((64, 64, 3), np.uint8)
    pixels[:, :32] = (255, 0, 0)
    pixels[:, 32:] = (0, 0, 255)
    Image.fromarray(pixels).save(path)
    facts = image_facts.image_facts(str(path))
    assert not facts.grayscale
    # luma 0.299 x 255 = 76.245 and 0.114 x 255 = 29.07: mean 52.658, spread 23.587
    assert facts.mean == pytest.approx(52.658) and facts.std == pytest.approx(23.587)
    colours = colour_pixels(facts.colours)
    assert np.array_equal(colours[:, :2], np.tile([255.0, 0, 0], (4, 2, 1)))
    assert np.array_equal(colours[:, 2:], np.tile([0, 0, 255.0], (4, 2, 1)))
    # bilinear: one blended pixel each side of the edge
    assert thumbnail_pixels(facts.thumbnail)[0].tolist() == [76] * 7 + [70, 35] + [29] * 7
    assert facts.sharpness == 0.129  # 0.12903, kept to 4 places
    assert facts.fine_thumbnail == ""  # a spread of 23.6: not faint
    # each half one grey: half the pixels at the commonest grey make it a drawing on a page,
    # whose detail thumbnails are its own 64 px
    assert _decoded(facts.detail)[0] == 64


def test_channels_that_differ_by_less_than_8_levels_are_grey(tmp_path):
    # (100, 111, 100): the green is 7.3 above the mean; (100, 112, 100): 8.0, colour
    for colour, grey in (((100, 111, 100), True), ((100, 112, 100), False)):
        path = tmp_path / f"{colour[1]}.png"
        Image.new("RGB", (64, 64), colour).save(path)
        assert image_facts.image_facts(str(path)).grayscale is grey
    # a grey mode is grey whatever Pillow converts it to
    path = tmp_path / "l.png"
    Image.new("L", (64, 64), 80).save(path)
    assert image_facts.image_facts(str(path)).grayscale


def test_the_figures_are_measured_on_a_64_px_copy(tmp_path):
    assert image_facts._fitted((256, 128), 64) == (64, 32)
    assert image_facts._fitted((1000, 1), 64) == (64, 1)
    assert image_facts._fitted((10, 20), 64) == (32, 64)
    # a 1 px checkerboard at 256 px is grey at 64 px; at 64 px it keeps its detail (64)
    ys, xs = np.mgrid[0:64, 0:64]
    board = np.where((ys + xs) % 2 == 0, 0, 255).astype(np.uint8)
    Image.fromarray(board).convert("RGB").save(tmp_path / "board.png")
    assert image_facts.image_facts(str(tmp_path / "board.png")).sharpness == pytest.approx(64.0)
    assert image_facts._sharpness(np.ones((2, 50), np.float32)) == 0.0
    assert image_facts._sharpness(np.full((8, 8), 7.0, np.float32)) == 0.0


def test_a_rotated_photo_is_measured_upright(tmp_path):
    path = tmp_path / "rotated.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees on display
    Image.new("RGB", (80, 40), (10, 120, 200)).save(path, exif=exif)
    facts = image_facts.image_facts(str(path))
    assert (facts.width, facts.height) == (40, 80)


def test_a_file_that_fails_says_why(tmp_path):
    missing = image_facts.image_facts(str(tmp_path / "gone.png"))
    assert missing.path == str(tmp_path / "gone.png")
    assert (missing.size_bytes, missing.mtime_ns, missing.error) == (
        0, 0, "cannot open file (No such file or directory)")
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    facts = image_facts.image_facts(str(bad))
    assert facts.error == "not an image Pillow can identify"
    assert (facts.size_bytes, facts.mtime_ns) == file_key(str(bad))
    assert facts.pixel_digest == "" and facts.width == 0
    # a PNG cut in half fails while decoding, with its size and time kept
    whole = tmp_path / "whole.png"
    Image.new("RGB", (64, 64), (10, 200, 30)).save(whole)
    cut = tmp_path / "cut.png"
    cut.write_bytes(whole.read_bytes()[:60])
    facts = image_facts.image_facts(str(cut))
    assert facts.error and (facts.path, facts.size_bytes, facts.mtime_ns) == (
        str(cut), *file_key(str(cut)))


def test_more_flat_shares_by_hand():
    # grey 8 is two levels from the commonest 10: outside the window
    assert flat_share(np.array([10, 10, 8, 50.0])) == pytest.approx(2 / 4)
    # black: 0 (three) and 1 fall in the window 0..1, the 2s do not
    assert flat_share(np.array([0, 0, 0, 2, 2, 200.0])) == pytest.approx(3 / 6)
    # values above white count as white
    assert flat_share(np.array([300, 300, 254, 10.0])) == pytest.approx(3 / 4)


def test_a_drawing_taller_or_wider_than_96_px_keeps_its_shorter_side():
    for size in ((60, 120), (120, 60)):
        image = Image.new("RGB", size, (255, 255, 255))
        ImageDraw.Draw(image).rectangle((10, 10, 40, 40), outline=(0, 0, 0), width=2)
        assert _decoded(detail_thumbnails(image, _metric(image)))[0] == 60


def _kept(whole: np.ndarray, inset: np.ndarray | None = None) -> str:
    """Detail thumbnails written by hand, in the stored form (side, whole, centre)."""
    inset = whole if inset is None else inset
    data = bytes([whole.shape[0]]) + whole.astype(np.uint8).tobytes() \
        + inset.astype(np.uint8).tobytes()
    return base64.b64encode(zlib.compress(data)).decode("ascii")


def test_contrast_is_matched_before_the_blocks_whichever_is_fainter():
    ys, xs = np.mgrid[0:96, 0:96]
    pattern = (ys // 12 + xs // 12) % 2
    faint = _kept(100 + pattern)  # 100 and 101: a spread of 0.5
    strong = _kept(100 + 100 * pattern)  # 100 and 200
    assert drawing_difference(faint, strong)[1] == pytest.approx(0.0, abs=1e-3)
    assert drawing_difference(strong, faint)[1] == pytest.approx(0.0, abs=1e-3)


def test_the_blocks_are_an_eighth_of_the_side():
    # 12 px squares of 0 and 255; the copy has two squares swapped (one dark, one light: the
    # mean and spread stay). The square at (12..23, 12..23) is one block of 96 / 8: 255 apart.
    ys, xs = np.mgrid[0:96, 0:96]
    board = 255 * ((ys // 12 + xs // 12) % 2)
    swapped = board.copy()
    swapped[12:24, 12:24] = 255 - swapped[12:24, 12:24]
    swapped[12:24, 24:36] = 255 - swapped[12:24, 24:36]
    assert drawing_difference(_kept(board), _kept(swapped))[1] == 255.0


def test_a_smooth_page_has_no_fine_detail_to_compare():
    # a ramp of 2 grey levels a pixel: the blur keeps it but at the edges (less than 1 level)
    ramp = np.tile(np.arange(96) * 2, (96, 1))
    assert drawing_difference(_kept(ramp), _kept(ramp)) == (None, 0.0)


def test_the_centre_thumbnail_leaves_out_3_percent_a_side(tmp_path):
    # the frame's 3 px black border darkens the whole thumbnail's corner, not the centre's
    _frame().save(tmp_path / "frame.png")
    facts = image_facts.image_facts(str(tmp_path / "frame.png"))
    assert thumbnail_pixels(facts.thumbnail)[0, :3].tolist() == [90, 151, 151]
    assert thumbnail_pixels(facts.inset_thumbnail)[0, :3].tolist() == [195, 223, 223]


def test_a_large_picture_is_measured_at_64_px(tmp_path):
    # 2 px squares at 128 px are 1 px squares at 64 (bilinear): sharpness 60.3; measured at
    # 128 px they would give 16
    ys, xs = np.mgrid[0:128, 0:128]
    board = np.where((ys // 2 + xs // 2) % 2 == 0, 0, 255).astype(np.uint8)
    Image.fromarray(board).convert("RGB").save(tmp_path / "board.png")
    assert image_facts.image_facts(str(tmp_path / "board.png")).sharpness == 60.3091
    assert image_facts._fitted((1, 1000), 64) == (1, 64)
    # a 3 px high picture has a Laplacian: 3x4 with one bright pixel gives variances 6.25 and
    # 11/144
    one = np.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]], np.float32)
    assert image_facts._sharpness(one) == pytest.approx(6.25 * 144 / 11)


def test_grey_is_judged_pixel_by_pixel_and_faint_below_a_spread_of_12(tmp_path):
    halves = np.zeros((64, 64, 3), np.uint8)
    halves[:, :32], halves[:, 32:] = 50, 200
    Image.fromarray(halves).save(tmp_path / "halves.png")
    assert image_facts.image_facts(str(tmp_path / "halves.png")).grayscale
    # a 16 px board of 116 and 140: its thumbnail's spread is exactly 12, not faint
    ys, xs = np.mgrid[0:16, 0:16]
    board = np.where((ys + xs) % 2 == 0, 116, 140).astype(np.uint8)
    Image.fromarray(board).convert("RGB").save(tmp_path / "board.png")
    assert image_facts.image_facts(str(tmp_path / "board.png")).fine_thumbnail == ""


def test_a_refused_picture_keeps_its_size_and_time_for_the_cache(tmp_path):
    # 510 x 10: the sides differ more than 50 times, refused before decoding
    strip = tmp_path / "strip.png"
    Image.new("RGB", (510, 10)).save(strip)
    facts = image_facts.image_facts(str(strip))
    assert facts.error == "image too elongated (510x10; sides may differ at most 50 times)"
    assert (facts.path, facts.size_bytes, facts.mtime_ns) == (str(strip), *file_key(str(strip)))
