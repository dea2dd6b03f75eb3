"""The data health check: its speed against a plain Pillow loop, and how well it finds copies.

Speed: the same folder of JPEG photos is read by ``Image.open(path).load()`` one file after
the other (the baseline: the least any check that decodes every file must do), by a first
health check (fresh cache) and by a rescan of the unchanged folder.

Copies: a generated set of originals, each with a copy re-encoded at JPEG quality 30, one
resized to half, one cropped by 2% of each side and one brightened by 25%, among distinct
images. Pairs of files the check puts in one duplicate group are compared with the true
pairs: precision, recall (also per kind of copy), and the share of distinct images flagged.
"""

from __future__ import annotations

import itertools
import random
import tempfile
import time
from pathlib import Path

from PIL import Image

from workbench.bench.report import BenchRow, info_row, ratio_row
from workbench.core.data.health.duplicate_groups import NEAR_DUPLICATE_BITS
from workbench.core.data.health.generated_folders import (
    NEAR_COPY_KINDS,
    distinct_image,
    near_copy,
)
from workbench.core.data.health.health_check import check_health

GROUP = "health"
FIRST_SCAN_TARGET = 1.0
RESCAN_TARGET = 20.0
PHOTO_SIZE = (800, 600)


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """Speed rows (first scan, rescan) and copy-finding rows; ``device`` is not used."""
    photos, originals, distinct = (60, 20, 60) if quick else (1500, 150, 400)
    with tempfile.TemporaryDirectory(prefix="workbench-health-bench-") as tmp:
        return [*_speed_rows(Path(tmp), photos), *_copy_rows(Path(tmp), originals, distinct)]


def _speed_rows(tmp: Path, count: int) -> list[BenchRow]:
    root = tmp / "photos"
    paths = _write_photos(root, count)
    import imagehash  # noqa: F401 - imported once a process (scipy: about a second), not timed

    started = time.perf_counter()
    for path in paths:
        with Image.open(path) as image:
            image.load()
    plain = count / (time.perf_counter() - started)
    cache = str(tmp / "cache")
    first = check_health(root, cache_dir=cache)
    rescan = check_health(root, cache_dir=cache)
    assert rescan.reused == count, "the rescan decoded files again"
    setting = (f"{count} JPEG photos {PHOTO_SIZE[0]}x{PHOTO_SIZE[1]} quality 90, page cache "
               "warm for all three")
    first_rate, rescan_rate = count / first.seconds, count / rescan.seconds
    return [
        ratio_row(GROUP, "health check first scan vs Image.open().load() loop", first_rate,
                  plain, "img/s", FIRST_SCAN_TARGET, setting=setting,
                  seconds=round(first.seconds, 3)),
        ratio_row(GROUP, "health check rescan (unchanged) vs Image.open().load() loop",
                  rescan_rate, plain, "img/s", RESCAN_TARGET, setting=setting,
                  seconds=round(rescan.seconds, 3)),
    ]


def _write_photos(root: Path, count: int) -> list[Path]:
    rng = random.Random(0)
    paths = []
    for index in range(count):
        folder = root / ("a" if index % 2 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"photo_{index:05d}.jpg"
        distinct_image(rng, 200).resize(PHOTO_SIZE, Image.Resampling.BILINEAR).save(
            path, quality=90)
        paths.append(path)
    return paths


def _copy_rows(tmp: Path, originals: int, distinct: int) -> list[BenchRow]:
    root = tmp / "copies"
    truth, kind_of_pair, loners = _write_copy_set(root, originals, distinct)
    report = check_health(root, cache_dir=str(tmp / "cache"))
    found: set[frozenset[str]] = set()
    flagged: set[str] = set()
    for kind in ("exact_duplicate", "near_duplicate"):
        finding = report.finding(kind)
        for item in finding.items if finding else ():
            found |= {frozenset(p) for p in itertools.combinations(item.files, 2)}
            flagged |= set(item.files)
    hits = found & truth
    precision = len(hits) / max(1, len(found))
    recall = len(hits) / len(truth)
    per_kind = {kind: round(sum(1 for pair in hits if kind_of_pair.get(pair) == kind)
                            / originals, 4) for kind in NEAR_COPY_KINDS}
    false_positive = len(flagged & loners) / len(loners)
    setting = (f"{originals} originals 96 px with one copy of each kind "
               f"({', '.join(NEAR_COPY_KINDS)}), {distinct} distinct images, threshold "
               f"{NEAR_DUPLICATE_BITS} of 64 bits")
    return [
        info_row(GROUP, "near-duplicate precision (pairs)", precision, "share", setting=setting,
                 predicted_pairs=len(found), true_pairs=len(truth)),
        info_row(GROUP, "near-duplicate recall (pairs)", recall, "share", setting=setting,
                 recall_original_to_copy_by_kind=per_kind),
        info_row(GROUP, "distinct images flagged as duplicates", false_positive, "share",
                 setting=setting, flagged=len(flagged & loners)),
    ]


def _write_copy_set(root: Path, originals: int, distinct: int
                    ) -> tuple[set[frozenset[str]], dict[frozenset[str], str], set[str]]:
    """Files on disk; the true pairs, the copy kind of each original-copy pair, the loners."""
    rng = random.Random(1)
    folder = root / "things"
    folder.mkdir(parents=True)
    truth: set[frozenset[str]] = set()
    kind_of_pair: dict[frozenset[str], str] = {}
    for index in range(originals):
        image = distinct_image(rng, 96)
        group = [str(folder / f"original_{index:04d}.png")]
        image.save(group[0])
        for kind in NEAR_COPY_KINDS:
            path = str(folder / f"original_{index:04d}_{kind}.jpg")
            near_copy(image, kind).save(path, quality=90)
            kind_of_pair[frozenset((group[0], path))] = kind
            group.append(path)
        truth |= {frozenset(p) for p in itertools.combinations(group, 2)}
    loners = set()
    (root / "others").mkdir()
    for index in range(distinct):
        path = root / "others" / f"distinct_{index:04d}.png"
        distinct_image(rng, 96).save(path)
        loners.add(str(path))
    return truth, kind_of_pair, loners
