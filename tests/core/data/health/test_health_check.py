"""The health check on real generated folders: every kind of problem found and named, distinct
images left alone, the user's folder untouched, a rescan reusing what it knows, cancel."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from tests.core.data.health.conftest import folder_snapshot
from workbench.core.data.cache_folder import REPORT_FILE, health_folder
from workbench.core.data.health.findings import report_from_dict
from workbench.core.data.health.generated_folders import (
    NEAR_COPY_KINDS,
    distinct_image,
    near_copy,
    write_distinct_images,
)
from workbench.core.data.health.health_check import HealthCheckCancelled, check_health


def _files_of(report, kind: str) -> set[str]:
    finding = report.finding(kind)
    return set() if finding is None else {p for item in finding.items for p in item.files}


def _items_of(report, kind: str) -> list:
    finding = report.finding(kind)
    return [] if finding is None else list(finding.items)


def test_every_problem_is_found_and_named(problem_folder, tmp_path):
    root, problems = problem_folder
    before = folder_snapshot(root)
    report = check_health(root, cache_dir=str(tmp_path / "cache"), threads=2)

    unreadable = {item.files[0]: item.reason for item in _items_of(report, "unreadable")}
    assert set(unreadable) == {str(problems[k]) for k in ("truncated", "short_bmp", "corrupt")}
    assert "truncated" in unreadable[str(problems["truncated"])]
    assert "truncated" in unreadable[str(problems["short_bmp"])]
    assert "identify" in unreadable[str(problems["corrupt"])]

    leaks = _items_of(report, "leakage")
    assert [set(item.files) for item in leaks] == [
        {str(root / "train" / "cat" / "cat_2.png"), str(problems["leaked"])}]
    assert leaks[0].leave_out == (str(root / "train" / "cat" / "cat_2.png"),)
    conflicts = _items_of(report, "conflicting_label")
    assert [set(item.files) for item in conflicts] == [
        {str(root / "train" / "cat" / "cat_3.png"), str(problems["conflict"])}]
    assert "cat, dog" in conflicts[0].reason
    near = [set(item.files) for item in _items_of(report, "near_duplicate")]
    assert {str(root / "train" / "cat" / "cat_0.png"), str(problems["reencoded"])} in near
    assert {str(root / "train" / "cat" / "cat_1.png"), str(problems["resized"])} in near
    assert _files_of(report, "near_blank") == {str(problems["blank"])}
    assert _files_of(report, "dark") == {str(problems["dark"])}
    assert _files_of(report, "blurry") == {str(problems["blurry"])}
    assert "mildly imbalanced" in report.finding("imbalance").verdict

    # Written to the cache, read back whole; the user's folder is exactly as it was.
    written = health_folder(root, str(tmp_path / "cache")) / REPORT_FILE
    assert report.report_path == str(written)
    assert report_from_dict(__import__("json").loads(written.read_text())).to_dict() == \
        {**report.to_dict(), "seconds": round(report.seconds, 3)}
    assert folder_snapshot(root) == before


def test_distinct_images_are_not_flagged(tmp_path):
    """A few hundred distinct generated images: the measured false-positive rate stays < 1%."""
    root = tmp_path / "distinct"
    write_distinct_images(root / "a", 150, seed=1)
    write_distinct_images(root / "b", 150, seed=2)
    report = check_health(root, cache_dir=str(tmp_path / "cache"), threads=2)
    flagged = set().union(*(_files_of(report, f.kind) for f in report.problem_findings()))
    assert report.images == 300
    assert len(flagged) / report.images < 0.01, sorted(flagged)


def test_near_copies_of_every_kind_are_grouped_with_their_original(tmp_path):
    rng = random.Random(5)
    folder = tmp_path / "copies" / "things"
    folder.mkdir(parents=True)
    expected = []
    for index in range(12):
        original = distinct_image(rng)
        original.save(folder / f"original_{index}.png")
        kind = NEAR_COPY_KINDS[index % len(NEAR_COPY_KINDS)]
        near_copy(original, kind).save(folder / f"copy_{index}_{kind}.jpg", quality=90)
        expected.append({str(folder / f"original_{index}.png"),
                         str(folder / f"copy_{index}_{kind}.jpg")})
    (tmp_path / "copies" / "others").mkdir()
    distinct_image(rng).save(tmp_path / "copies" / "others" / "one.png")
    report = check_health(tmp_path / "copies", cache_dir=str(tmp_path / "cache"), threads=2)
    groups = [set(item.files) for item in _items_of(report, "near_duplicate")]
    assert sorted(map(sorted, groups)) == sorted(map(sorted, expected))


def test_rescan_reuses_unchanged_files_and_decodes_changed_ones(tmp_path):
    root = tmp_path / "bmp"
    rng = random.Random(3)
    for label in ("a", "b"):
        (root / label).mkdir(parents=True)
        for index in range(4):
            distinct_image(rng).save(root / label / f"{index}.bmp")
    changing = root / "a" / "0.bmp"
    distinct_image(rng).point(lambda v: v // 12).save(changing)  # very dark
    cache = str(tmp_path / "cache")
    first = check_health(root, cache_dir=cache, threads=2)
    assert first.reused == 0
    assert _files_of(first, "dark") == {str(changing)}

    second = check_health(root, cache_dir=cache, threads=2)
    assert second.reused == 8
    assert _files_of(second, "dark") == {str(changing)}

    # Same size (a BMP of the same dimensions), new content and modification time.
    size = changing.stat().st_size
    stamp = changing.stat().st_mtime_ns
    distinct_image(rng).save(changing)
    os.utime(changing, ns=(stamp + 5_000_000_000, stamp + 5_000_000_000))
    assert changing.stat().st_size == size
    third = check_health(root, cache_dir=cache, threads=2)
    assert third.reused == 7
    assert _files_of(third, "dark") == set()


def test_cancel_stops_the_check_without_a_report(tmp_path):
    root = tmp_path / "many"
    write_distinct_images(root / "a", 40, seed=1)
    write_distinct_images(root / "b", 40, seed=2)
    cancel = threading.Event()
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        if done >= 4:
            cancel.set()

    with pytest.raises(HealthCheckCancelled):
        check_health(root, cache_dir=str(tmp_path / "cache"), threads=1, progress=progress,
                     cancel=cancel)
    assert seen and seen[-1][0] < 80 and all(total == 80 for _, total in seen)
    assert not (health_folder(root, str(tmp_path / "cache")) / REPORT_FILE).exists()


def test_a_report_inside_the_folder_is_refused(problem_folder):
    root, _ = problem_folder
    with pytest.raises(ValueError, match="writes nothing there"):
        check_health(root, report_path=str(Path(root) / "health.json"), threads=2)
    assert not (Path(root) / "health.json").exists()


def test_tiny_elongated_bright_and_grey_images_are_named(tmp_path):
    root = tmp_path / "odd"
    write_distinct_images(root / "a", 12, seed=4)
    write_distinct_images(root / "b", 12, seed=5)
    rng = random.Random(9)
    odd = {"tiny": root / "a" / "tiny.png", "extreme_aspect": root / "a" / "strip.png",
           "bright": root / "b" / "bright.png", "grayscale": root / "b" / "grey.png"}
    distinct_image(rng, 20).save(odd["tiny"])
    distinct_image(rng, 200).resize((200, 40)).save(odd["extreme_aspect"])
    distinct_image(rng).point(lambda v: 235 + v // 20).save(odd["bright"])
    distinct_image(rng).convert("L").save(odd["grayscale"])
    report = check_health(root, cache_dir=str(tmp_path / "cache"), threads=2)
    for kind, path in odd.items():
        assert _files_of(report, kind) == {str(path)}, kind
    assert "20x20 pixels" in _items_of(report, "tiny")[0].reason
    assert "sides 5.0:1" in _items_of(report, "extreme_aspect")[0].reason
    assert report.finding("imbalance").verdict.startswith("balanced")
