"""The health check on real scans nobody here drew: scikit-learn's digit scans as a user has them
(28x28 grey PNGs in train/ and val/ class folders). Distinct scans are not called copies, no
group of "copies" is a chain of look-alikes, and what every image shares is one line."""

from __future__ import annotations

import itertools

import imagehash
import numpy as np
from PIL import Image

from workbench.bench.real_image_sets import write_real_set
from workbench.core.data.health.health_check import check_health

GROUP_KINDS = ("exact_duplicate", "near_duplicate", "leakage", "conflicting_label")


def _phash_and_thumbnails(path: str) -> tuple[imagehash.ImageHash, list[np.ndarray]]:
    """Computed here from the file with Pillow and imagehash, not from the check's facts."""
    with Image.open(path) as image:
        grey = image.convert("L")
    inset = grey.width * 0.03, grey.height * 0.03
    thumbnails = [np.asarray(grey.resize((16, 16), Image.Resampling.BILINEAR, box=box),
                             dtype=np.float64).ravel()
                  for box in ((0, 0, grey.width, grey.height),
                              (inset[0], inset[1], grey.width - inset[0],
                               grey.height - inset[1]))]
    return imagehash.phash(grey.convert("RGB")), thumbnails


def _best_correlation(first: list[np.ndarray], second: list[np.ndarray]) -> float:
    pairs = ((first[0], second[0]), (first[1], second[0]), (first[0], second[1]))
    return max(float(np.corrcoef(a, b)[0, 1]) for a, b in pairs)


def test_digit_scans_flag_at_most_two_percent_and_no_group_chains(tmp_path):
    root = write_real_set("digits28", tmp_path / "digits", train_per_class=20, val_per_class=10)
    report = check_health(root, cache_dir=str(tmp_path / "cache"), threads=2)
    assert report.images == 300

    for finding in report.problem_findings():
        files = {p for item in finding.items for p in item.files}
        assert len(files) <= 6, (finding.kind, len(files))  # 2% of 300

    # Every image is 28x28: one line about the folder, no image named.
    tiny = report.finding("tiny")
    assert tiny is not None and tiny.items == ()
    assert tiny.verdict == "all 300 images are 28x28: they are upscaled to the crop"

    # Every two members of any group are close to each other, not only through others.
    for kind in GROUP_KINDS:
        finding = report.finding(kind)
        for item in finding.items if finding else ():
            measured = {p: _phash_and_thumbnails(p) for p in item.files}
            for first, second in itertools.combinations(item.files, 2):
                (hash_a, thumbs_a), (hash_b, thumbs_b) = measured[first], measured[second]
                assert hash_a - hash_b <= 12, (kind, first, second)
                assert _best_correlation(thumbs_a, thumbs_b) >= 0.95, (kind, first, second)
