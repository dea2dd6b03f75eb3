"""scan_dataset on real folders: layouts, split, skipped files, errors, warnings."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pytest

from workbench.core.data.dataset_scan import DatasetError, DatasetScan, SkippedFile, scan_dataset
from workbench.core.data.generated.synthetic_images import write_shape_dataset


def _files(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*.png")}


def test_flat_layout_split_is_stratified_complete_and_disjoint(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("square", "circle", "cross"),
                               per_class=[10, 2, 7])
    scan = scan_dataset(root, val_fraction=0.2, seed=3)

    assert scan.layout == "flat"
    assert scan.class_names == ["circle", "cross", "square"]
    assert scan.class_to_idx == {"circle": 0, "cross": 1, "square": 2}
    assert scan.val_counts() == [1, 1, 2]  # round(2*.2)=0 -> at least 1; round(7*.2)=1
    assert scan.train_counts() == [1, 6, 8]
    train_paths = {p for p, _ in scan.train}
    val_paths = {p for p, _ in scan.val}
    assert not train_paths & val_paths
    assert train_paths | val_paths == _files(root)
    for path, label in scan.train + scan.val:
        assert Path(path).parent.name == scan.class_names[label]
    assert scan.skipped == [] and scan.mismatches == []


def test_same_seed_same_split_other_seed_other_split(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", per_class=15, size=(16, 12))
    first = scan_dataset(root, seed=1)
    again = scan_dataset(root, seed=1)
    other = scan_dataset(root, seed=2)
    assert first.val == again.val and first.train == again.train
    assert first.val != other.val
    assert first.val_counts() == other.val_counts() == [3, 3, 3, 3]


def test_train_val_layout_reports_mismatched_classes(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square", "ring"),
                               per_class=4, layout="train_val", val_per_class=2)
    # 'ring' only in train; 'bar' only in val.
    for path in (root / "val" / "ring").iterdir():
        path.unlink()
    (root / "val" / "ring").rmdir()
    write_shape_dataset(tmp_path / "extra", classes=("bar",), per_class=3)
    os.rename(tmp_path / "extra" / "bar", root / "val" / "bar")

    scan = scan_dataset(root)

    assert scan.layout == "train_val"
    assert scan.class_names == ["circle", "ring", "square"]
    assert scan.train_counts() == [4, 4, 4]
    assert scan.val_counts() == [2, 0, 2]
    bar_skips = [s for s in scan.skipped if "bar" in s.reason]
    assert len(bar_skips) == 3
    assert all(s.reason == "class 'bar' is not in train" for s in bar_skips)
    assert any("'bar' has no train folder" in m and "3 val images" in m for m in scan.mismatches)
    assert any("'ring' has no val folder" in m for m in scan.mismatches)
    assert set(scan.mismatches) <= set(scan.warnings())


def test_unusable_files_are_skipped_with_reasons_and_nested_images_kept(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=3)
    circle = root / "circle"
    (circle / "notes.txt").write_text("not an image")
    (circle / "empty.png").write_bytes(b"")
    (circle / ".DS_Store").write_bytes(b"\0\0\0")
    (circle / "broken.jpg").write_bytes(b"this is not a jpeg")
    nested = circle / "more" / "deeper"
    nested.mkdir(parents=True)
    (circle / "circle_0000.png").replace(nested / "moved.png")
    (root / "loose.png").write_bytes(b"x")

    scan = scan_dataset(root, val_fraction=0.5)
    reasons = {Path(s.path).name: s.reason for s in scan.skipped}

    assert reasons["notes.txt"] == "not an image file (extension .txt)"
    assert reasons["empty.png"] == "empty file (0 bytes)"
    assert ".DS_Store" not in reasons  # system files are ignored, not reported
    assert reasons["loose.png"] == "image outside any class folder"
    assert "broken.jpg" not in reasons  # not decoded without verify
    circle_files = {Path(p).name for p, label in scan.train + scan.val if label == 0}
    assert circle_files == {"moved.png", "circle_0001.png", "circle_0002.png", "broken.jpg"}

    verified = scan_dataset(root, val_fraction=0.5, verify=True)
    verified_reasons = {Path(s.path).name: s.reason for s in verified.skipped}
    assert verified_reasons["broken.jpg"] == "not an image Pillow can identify"
    assert len(verified.train) + len(verified.val) == 6


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda root: None, "folder does not exist"),
        (lambda root: root.write_text("x"), "is a file, not a folder"),
        (lambda root: (root.mkdir(), (root / "a.png").write_bytes(b"x")), "no class subfolders"),
        (lambda root: (root.mkdir(), (root / ".hidden").mkdir()), "no class subfolders"),
    ],
)
def test_unusable_root_names_folder_and_reason(tmp_path: Path, make, expected: str) -> None:
    root = tmp_path / "dataset"
    make(root)
    with pytest.raises(DatasetError) as error:
        scan_dataset(root)
    assert str(root) in str(error.value)
    assert expected in str(error.value)


def test_class_without_images_names_that_class_folder(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle",), per_class=3)
    (root / "empty_class").mkdir()
    with pytest.raises(DatasetError, match="empty_class: class folder has no images"):
        scan_dataset(root)

    (root / "empty_class" / "readme.txt").write_text("nothing")
    with pytest.raises(DatasetError) as error:
        scan_dataset(root)
    assert str(root / "empty_class") in str(error.value)
    assert "1 file skipped, e.g. not an image file" in str(error.value)


def test_train_folder_without_val_folder_is_explained(tmp_path: Path) -> None:
    write_shape_dataset(tmp_path / "data" / "train", classes=("circle", "square"), per_class=2)
    with pytest.raises(DatasetError, match="has a 'train' folder but no 'val' folder"):
        scan_dataset(tmp_path / "data")


def test_val_fraction_outside_zero_one_is_refused(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", per_class=2, size=(16, 12))
    with pytest.raises(DatasetError, match="val_fraction must be between 0 and 1"):
        scan_dataset(root, val_fraction=1.0)


def test_warnings_summary_and_describe(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"),
                               per_class=[5, 40], size=(16, 12))
    (root / "square" / "bad.txt").write_text("x")
    scan = scan_dataset(root)

    assert scan.train_counts() == [4, 32]
    assert scan.imbalance_ratio == 8.0
    warnings = scan.warnings()
    assert any("imbalanced (8.0x" in w and "weighted" in w for w in warnings)
    assert any("fewer than 10 training images: circle (4)" in w for w in warnings)
    assert any(w.startswith("1 file skipped") and "bad.txt" in w for w in warnings)
    summary = json.loads(json.dumps(scan.summary(), allow_nan=False))
    assert summary["train_counts"] == [4, 32] and summary["val_counts"] == [1, 8]
    assert summary["skipped"] == [{"path": str(root / "square" / "bad.txt"),
                                   "reason": "not an image file (extension .txt)"}]
    assert scan.describe() == (
        "2 classes, 36 train / 9 val images (auto split 20%), imbalance 8.0x, 1 file skipped"
    )


def test_describe_large_counts_and_infinite_imbalance() -> None:
    train = [("a", 0)] * 30412
    scan = DatasetScan("/data", "flat", ["a", "b"], {"a": 0, "b": 1}, train,
                       [("v", 1)] * 7603, [SkippedFile("x", "y")] * 3, [], 0.2, 0)
    assert math.isinf(scan.imbalance_ratio)
    assert scan.describe() == (
        "2 classes, 30,412 train / 7,603 val images (auto split 20%), imbalance inf, "
        "3 files skipped"
    )
    assert scan.summary()["imbalance_ratio"] is None
    assert any("a class has no training images" in w for w in scan.warnings())


def test_many_files_scan_quickly_without_decoding(tmp_path: Path) -> None:
    root = tmp_path / "data"
    for name in ("a", "b"):
        folder = root / name
        folder.mkdir(parents=True)
        for index in range(1000):
            # Not decodable: a scan that decoded would skip these (and be slow).
            (folder / f"{index:05d}.jpg").write_bytes(b"x")
    started = time.perf_counter()
    scan = scan_dataset(root)
    elapsed = time.perf_counter() - started
    assert len(scan.train) + len(scan.val) == 2000
    assert elapsed < 2.0


def test_the_header_check_covers_the_train_and_the_val_folders(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=3,
                               layout="train_val", val_per_class=2)
    (root / "train" / "square" / "broken.jpg").write_bytes(b"this is not a jpeg")
    (root / "val" / "circle" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n but no chunks")

    listed = scan_dataset(root)  # by name only: both are listed
    assert (listed.train_counts(), listed.val_counts()) == ([3, 4], [3, 2])

    verified = scan_dataset(root, verify=True)
    reasons = {str(Path(s.path).relative_to(root)): s.reason for s in verified.skipped}
    assert reasons == {
        os.path.join("train", "square", "broken.jpg"): "not an image Pillow can identify",
        os.path.join("val", "circle", "broken.png"): "not an image Pillow can identify",
    }
    assert (verified.train_counts(), verified.val_counts()) == ([3, 3], [2, 2])
    assert all("broken" not in path for path, _ in verified.train + verified.val)


def test_the_automatic_split_keeps_every_class_of_two_or_more_in_train_and_val(
        tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "cross", "square"),
                               per_class=[2, 3, 1], size=(16, 16))
    for fraction in (0.05, 0.2, 0.95):  # round(2 * 0.05) is 0 and round(2 * 0.95) is 2
        scan = scan_dataset(root, val_fraction=fraction)
        # circle 2 images: 1 + 1; cross 3 images: 2 + 1 or 1 + 2; square 1 image: training.
        assert scan.train_counts()[0] == 1 and scan.val_counts()[0] == 1, fraction
        assert scan.train_counts()[1] >= 1 and scan.val_counts()[1] >= 1, fraction
        assert (scan.train_counts()[2], scan.val_counts()[2]) == (1, 0), fraction
        folder = os.path.join(str(root), "square")
        assert [text for text in scan.warnings() if "too few to validate" in text] == [
            f"{folder}: class 'square' has only 1 image, too few to validate: it stays in "
            "training and its accuracy cannot be measured; add at least one more image to "
            "validate it"]


def test_a_folder_of_one_class_is_named_with_what_to_do(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle",), per_class=3,
                               size=(16, 16))
    assert f"{root}: only one class ('circle'); a classifier needs at least 2 class folders, " \
           "so add a folder of images for each other class" in scan_dataset(root).warnings()


def test_the_header_line_shows_the_real_share_and_the_left_out_files(tmp_path: Path) -> None:
    # 3 classes of 2 images at 20%: every class keeps 1 of its 2 images for validation, so
    # 3 of 6 images (50%) are held out, not 20%.
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "cross", "square"),
                               per_class=2, size=(16, 16))
    scan = scan_dataset(root, val_fraction=0.2)
    assert scan.describe() == ("3 classes, 3 train / 3 val images (auto split 20%, 50% in "
                               "practice), imbalance 1.0x")
    left_out = sorted(str(p) for p in (root / "circle").iterdir())[:1]
    fewer = scan_dataset(root, val_fraction=0.2, leave_out=frozenset(left_out))
    assert fewer.left_out == left_out
    assert (fewer.train_counts(), fewer.val_counts()) == ([1, 1, 1], [0, 1, 1])
    assert fewer.describe().endswith(", 1 left out by the exclusion list")
    assert fewer.summary()["left_out"] == left_out
    assert len(fewer.train) + len(fewer.val) == 5


def test_every_spelling_of_a_folder_names_its_files_by_its_real_path(tmp_path: Path,
                                                                     monkeypatch) -> None:
    root = write_shape_dataset(tmp_path / "data", per_class=3, size=(16, 16))
    (tmp_path / "link").symlink_to(root, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    scans = [scan_dataset(typed) for typed in ("data", "data/", str(tmp_path / "link"),
                                               str(root) + "/./")]
    assert {s.root for s in scans} == {str(root)}
    assert all(s.train == scans[0].train and s.val == scans[0].val for s in scans)
    assert all(path.startswith(str(root) + os.sep) for path, _ in scans[0].train)


def test_header_checks_open_an_unchanged_file_once_and_a_changed_one_again(tmp_path, monkeypatch):
    """The Dataset tab, the pre-flight (again at each settings change) and the run all check
    headers: an unchanged image is opened once, and a file replaced by a broken one is seen."""
    from PIL import Image as PILImage

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for index in range(3):
            PILImage.new("RGB", (8, 8), (index * 40, 0, 0)).save(tmp_path / name / f"{index}.png")
    opened: list[str] = []
    real_open = PILImage.open
    monkeypatch.setattr(PILImage, "open", lambda path, *a, **k: (opened.append(str(path)),
                                                                  real_open(path, *a, **k))[1])
    first = scan_dataset(tmp_path, verify=True)
    assert len(opened) == 6 and not first.skipped
    second = scan_dataset(tmp_path, verify=True)
    assert len(opened) == 6 and not second.skipped  # nothing opened again

    (tmp_path / "a" / "1.png").write_bytes(b"not a png at all")  # new size and time
    third = scan_dataset(tmp_path, verify=True)
    assert [s.path for s in third.skipped] == [str(tmp_path.resolve() / "a" / "1.png")]
    assert len(opened) == 7
