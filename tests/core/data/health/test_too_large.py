"""An image over the decoded-size limit (a decompression-bomb guard) is named as that, with its
size, the limit and what to do, the same in the health check, the scan and training."""

from __future__ import annotations

import random

import pytest
from PIL import Image

from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.health.generated_folders import distinct_image
from workbench.core.data.health.health_check import check_health
from workbench.core.data.health.image_facts import image_facts
from workbench.core.data.image_decoding import ImageDecodeError, decode_file

pytestmark = pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
# 9500 x 9500 = 90,250,000 pixels, just over the 89,478,485 limit; one palette byte a pixel
# in memory while it is written, about 11 kB on disk.
POSTER = (9500, 9500)
EXPECTED = ("image too large to decode safely (9500x9500 = 90,250,000 pixels; the limit is "
            "89,478,485 pixels, a guard against decompression bombs): shrink it below the "
            "limit, for example to 8,000 pixels on the longer side, or leave it out")


def test_an_over_limit_poster_is_named_with_its_size_and_the_limit_everywhere(tmp_path):
    root = tmp_path / "clipart"
    rng = random.Random(2)
    for label in ("signs", "shapes"):
        (root / label).mkdir(parents=True)
        for index in range(4):
            distinct_image(rng).save(root / label / f"{index}.png")
    poster = root / "signs" / "poster.png"
    Image.new("P", POSTER, 3).save(poster)

    report = check_health(root, cache_dir=str(tmp_path / "cache"), threads=2)
    too_large = report.finding("too_large")
    assert too_large is not None
    assert [(item.files, item.reason) for item in too_large.items] == [
        ((str(poster),), EXPECTED)]
    assert too_large.leave_out() == [str(poster)]
    assert report.finding("unreadable") is None  # Pillow can decode it; the limit refuses it

    with pytest.raises(ImageDecodeError) as training:
        decode_file(str(poster), 224)
    assert training.value.reason == EXPECTED
    skipped = scan_dataset(str(root), verify=True).skipped
    assert [(s.path, s.reason) for s in skipped] == [(str(poster), EXPECTED)]


def test_pillows_own_refusal_names_the_limit_that_refused(tmp_path, monkeypatch):
    path = tmp_path / "photo.png"
    distinct_image(random.Random(1), 100).save(path)
    # Someone lowered Pillow's global: Pillow refuses above twice it, before our check.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    assert image_facts(str(path)).error == (
        "image too large to decode safely (10,000 pixels; the limit is 2,000 pixels, a guard "
        "against decompression bombs): shrink it below the limit, for example to 8,000 pixels "
        "on the longer side, or leave it out")
