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
    # B goes with the one it is closer to (0.972 against 0.968): the closest pairs join first.
    assert correlation(b, c) > correlation(a, b)
    assert near_groups(facts) == [["/data/b.png", "/data/c.png"]]


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


CLIPART = Path("/usr/share/openclipart/png")
# Pairs the 16 px and 48 px thumbnails call copies and a viewer does not: a speech bubble with
# its tail in the middle and on the left, a blank page and one with lines, an arrow end and a
# circle end, stars of 47 and 56 points.
LOOK_ALIKES = (("shapes/callouts/rectg_c.png", "shapes/callouts/rectg_l.png"),
               ("office/paper1.png", "office/paper2.png"),
               ("computer/icons/flat-theme/action/line_arrow_end.png",
                "computer/icons/flat-theme/action/line_circle_end.png"),
               ("shapes/stars/star_47pt21step.png", "shapes/stars/star_56pt25step.png"))
# A star and its neighbours in point count, among which a re-encoded copy of it must find it.
STAR_FAMILY = ("star_84pt29step.png", "star_67pt23step.png", "star_73pt25step.png",
               "star_81pt28step.png", "star_90pt31step.png", "star_93pt32step.png")


def _copy_over_grey(source: Path, target: Path, half: bool = False) -> None:
    """``source`` over the page grey, optionally at half size, as a JPEG of quality 75."""
    with Image.open(source) as opened:
        image = opened.convert("RGBA")
    if half:
        image = image.resize((image.width // 2, image.height // 2), Image.Resampling.BILINEAR)
    page = Image.new("RGBA", image.size, (128, 128, 128, 255))
    Image.alpha_composite(page, image).convert("RGB").save(target, quality=75)


def _groups(root: Path, cache: Path) -> list[set[str]]:
    report = check_health(root, cache_dir=str(cache), threads=2)
    finding = report.finding("near_duplicate")
    return [set(item.files) for item in finding.items] if finding else []


@pytest.mark.skipif(not CLIPART.is_dir(), reason="Debian's openclipart-png is not installed")
def test_look_alike_drawings_are_not_copies_but_a_re_saved_half_size_one_is(tmp_path):
    folder = tmp_path / "clipart" / "drawings"
    folder.mkdir(parents=True)
    for first, second in LOOK_ALIKES:
        shutil.copy(CLIPART / first, folder / Path(first).name)
        shutil.copy(CLIPART / second, folder / Path(second).name)
    _copy_over_grey(CLIPART / LOOK_ALIKES[0][0], folder / "rectg_c_half.jpg", half=True)
    groups = _groups(tmp_path / "clipart", tmp_path / "cache")
    for first, second in LOOK_ALIKES:
        pair = {str(folder / Path(first).name), str(folder / Path(second).name)}
        assert not any(pair <= group for group in groups), pair
    assert {str(folder / "rectg_c.png"), str(folder / "rectg_c_half.jpg")} in groups


@pytest.mark.skipif(not CLIPART.is_dir(), reason="Debian's openclipart-png is not installed")
def test_a_re_encoded_star_is_grouped_with_its_original_not_with_a_look_alike(tmp_path):
    folder = tmp_path / "clipart" / "stars"
    folder.mkdir(parents=True)
    for name in STAR_FAMILY:
        shutil.copy(CLIPART / "shapes" / "stars" / name, folder / name)
    _copy_over_grey(folder / STAR_FAMILY[0], folder / "star_again.jpg")
    groups = _groups(tmp_path / "clipart", tmp_path / "cache")
    copy = str(folder / "star_again.jpg")
    assert [group for group in groups if copy in group] == [
        {str(folder / STAR_FAMILY[0]), copy}]


def _envelope(side: int) -> Image.Image:
    """An envelope icon of 1 px lines on a transparent ``side`` px page, as clip art draws
    them: a light body, its flap and a written address."""
    image = Image.new("RGBA", (side, side), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    s = side / 100
    draw.rectangle((18 * s, 30 * s, 82 * s, 72 * s), fill=(245, 240, 225, 255),
                   outline=(20, 20, 20, 255), width=1)
    draw.line((18 * s, 30 * s, 50 * s, 55 * s, 82 * s, 30 * s), fill=(20, 20, 20, 255), width=1)
    for row, length in enumerate((24, 17, 29, 21)):
        y = (58 + 3 * row) * s
        draw.line((45 * s, y, (45 + length) * s, y), fill=(60, 60, 140, 255), width=1)
    return image


def test_a_jpeg_copy_of_a_drawing_is_compared_at_its_originals_detail(tmp_path):
    # A 133 px JPEG is decoded at half scale for the 64 px figures; its drawing detail made
    # from that decode correlated 0.61 with the PNG's (blocks 42 grey levels apart): no copy.
    folder = tmp_path / "icons" / "office"
    folder.mkdir(parents=True)
    _envelope(133).save(folder / "envelope.png")
    _copy_over_grey(folder / "envelope.png", folder / "envelope_again.jpg")
    write_distinct_images(tmp_path / "icons" / "others", 6, seed=3)
    assert _groups(tmp_path / "icons", tmp_path / "cache") == [
        {str(folder / "envelope.png"), str(folder / "envelope_again.jpg")}]


def _cropped_copy(source: Path, target: Path) -> None:
    """``source`` without 3% of each side, as a PNG (transparency kept)."""
    with Image.open(source) as opened:
        image = opened.convert("RGBA")
    dx, dy = max(1, image.width * 3 // 100), max(1, image.height * 3 // 100)
    image.crop((dx, dy, image.width - dx, image.height - dy)).save(target)


@pytest.mark.skipif(not CLIPART.is_dir(), reason="Debian's openclipart-png is not installed")
def test_jpeg_copies_of_clip_art_icons_are_found_with_the_other_copies(tmp_path):
    # Re-encoded copies of openclipart icons missed before: an envelope (133 px) whose copy's
    # detail correlated 0.64; a sign (165 px) whose copy did not pair with its half-size and
    # cropped copies, so the four made two pairs.
    folder = tmp_path / "clipart" / "icons"
    folder.mkdir(parents=True)
    envelope = folder / "envelope_juliane_krug_01.png"
    sign = folder / "ne_pas_toucher_yves_guil_01.png"
    shutil.copy(CLIPART / "office" / envelope.name, envelope)
    shutil.copy(CLIPART / "signs_and_symbols" / sign.name, sign)
    _copy_over_grey(envelope, folder / "envelope_again.jpg")
    _copy_over_grey(sign, folder / "sign_again.jpg")
    with Image.open(sign) as opened:
        image = opened.convert("RGBA")
    image.resize((image.width // 2, image.height // 2), Image.Resampling.BILINEAR).save(
        folder / "sign_half.png")
    _cropped_copy(sign, folder / "sign_cropped.png")
    groups = _groups(tmp_path / "clipart", tmp_path / "cache")
    assert sorted(groups, key=len) == [
        {str(envelope), str(folder / "envelope_again.jpg")},
        {str(sign), *(str(folder / name) for name in
                      ("sign_again.jpg", "sign_half.png", "sign_cropped.png"))}]


def _blank_and_its_jpeg(folder: Path, size: tuple[int, int]) -> tuple[Path, Path]:
    """A fully transparent PNG of ``size`` and its JPEG re-encoding over the page grey."""
    page = folder / "blank.png"
    Image.new("RGBA", size, (0, 0, 0, 0)).save(page)
    _copy_over_grey(page, folder / "blank_again.jpg")
    return page, folder / "blank_again.jpg"


def test_a_blank_page_and_its_jpeg_are_copies_but_a_blank_of_another_size_is_not(tmp_path):
    # Both one grey everywhere: their thumbnails correlate with nothing, so they were no copies.
    folder = tmp_path / "pages" / "signs"
    folder.mkdir(parents=True)
    page, again = _blank_and_its_jpeg(folder, (794, 1123))
    Image.new("RGBA", (600, 400), (0, 0, 0, 0)).save(folder / "other_blank.png")
    write_distinct_images(tmp_path / "pages" / "others", 6, seed=3)
    assert _groups(tmp_path / "pages", tmp_path / "cache") == [{str(page), str(again)}]


@pytest.mark.skipif(not CLIPART.is_dir(), reason="Debian's openclipart-png is not installed")
def test_openclipart_blank_page_and_its_jpeg_are_copies(tmp_path):
    # signs_and_symbols/teschio_fabio_olivo_01.png: 794x1123, every pixel transparent.
    folder = tmp_path / "clipart" / "signs"
    folder.mkdir(parents=True)
    page = folder / "teschio_fabio_olivo_01.png"
    shutil.copy(CLIPART / "signs_and_symbols" / page.name, page)
    _copy_over_grey(page, folder / "teschio_again.jpg")
    write_distinct_images(tmp_path / "clipart" / "others", 6, seed=3)
    assert _groups(tmp_path / "clipart", tmp_path / "cache") == [
        {str(page), str(folder / "teschio_again.jpg")}]


def _wire_box(size: tuple[int, int]) -> Image.Image:
    """A box drawn in 2 px black lines on a transparent page: faint at 16 px (spread 4)."""
    width, height = size
    image = Image.new("RGBA", size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    x0, y0, x1, y1 = width * 0.2, height * 0.35, width * 0.65, height * 0.85
    dx, dy = width * 0.15, -height * 0.2
    for start, end in (((x0, y0), (x1, y0)), ((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)),
                       ((x0, y1), (x0, y0)), ((x0 + dx, y0 + dy), (x1 + dx, y0 + dy)),
                       ((x1 + dx, y0 + dy), (x1 + dx, y1 + dy)), ((x0, y0), (x0 + dx, y0 + dy)),
                       ((x1, y0), (x1 + dx, y0 + dy)), ((x1, y1), (x1 + dx, y1 + dy))):
        draw.line((start, end), fill=(0, 0, 0, 255), width=2)
    return image


def test_a_jpeg_copy_of_faint_line_art_is_compared_at_its_originals_resolution(tmp_path):
    # The 48 px thumbnail of the JPEG made from its 1/4 decode correlated 0.957 with the PNG's
    # (0.97 needed): no copy.
    folder = tmp_path / "drawings" / "boxes"
    folder.mkdir(parents=True)
    _wire_box((495, 317)).save(folder / "box.png")
    _copy_over_grey(folder / "box.png", folder / "box_again.jpg")
    write_distinct_images(tmp_path / "drawings" / "others", 6, seed=3)
    assert _groups(tmp_path / "drawings", tmp_path / "cache") == [
        {str(folder / "box.png"), str(folder / "box_again.jpg")}]


@pytest.mark.skipif(not CLIPART.is_dir(), reason="Debian's openclipart-png is not installed")
def test_jpeg_copies_of_faint_clip_art_are_found(tmp_path):
    # Missed before at 48 px: 0.947 (a 1,054 px wire box) and 0.964 (495 px passports).
    folder = tmp_path / "clipart" / "faint"
    folder.mkdir(parents=True)
    originals = [CLIPART / "signs_and_symbols" / "mpcad_box_30x20x100_cels_01.png",
                 CLIPART / "shapes" / "collection_of_passport__01.png"]
    expected = []
    for source in originals:
        shutil.copy(source, folder / source.name)
        _copy_over_grey(source, folder / f"{source.stem}_again.jpg")
        expected.append({str(folder / source.name), str(folder / f"{source.stem}_again.jpg")})
    groups = _groups(tmp_path / "clipart", tmp_path / "cache")
    assert sorted(groups, key=sorted) == sorted(expected, key=sorted)
