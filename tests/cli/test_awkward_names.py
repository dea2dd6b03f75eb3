"""Folders as real disks fill up, from the command line: names that are not UTF-8 or hold a
newline, and links that point back into the folder. Every path is built as bytes
(``os.fsencode`` names), as an archive from another system leaves them."""

from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path

import pytest
from PIL import Image

from workbench.cli import main

BAD_BYTES = b"bad\xfename.png"  # not UTF-8
TWO_LINES = b"two\nlines.png"  # a newline in the name
LEFT_OUT = b"left\nout.png"  # a newline, and near-blank: the health check leaves it out


def noise_png(path: bytes, seed: int, size: int = 24) -> bytes:
    """A PNG of random pixels at ``path`` (bytes): distinct from every other one."""
    rng = random.Random(seed)
    image = Image.frombytes("RGB", (size, size), bytes(rng.randrange(256)
                                                       for _ in range(size * size * 3)))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        image.save(handle, format="PNG")
    return path


def flat_png(path: bytes, colour: tuple[int, int, int], size: int = 24) -> bytes:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        Image.new("RGB", (size, size), colour).save(handle, format="PNG")
    return path


def flat_folder(root: bytes, counts: dict[bytes, int]) -> bytes:
    """``root/<class>/img<i>.png`` of noise, ``counts[class]`` a class."""
    seed = 0
    for name, count in counts.items():
        for index in range(count):
            seed += 1
            noise_png(os.path.join(root, name, b"img%d.png" % index), seed)
    return root


def train_args(root: bytes | str, runs: Path, *extra: str) -> list[str]:
    return ["train", "--data-root", os.fsdecode(root), "--model", "small_cnn", "--epochs", "1",
            "--device", "cpu", "--workers", "0", "--output-dir", str(runs), *extra]


def run_folder(runs: Path) -> Path:
    (folder,) = [p for p in runs.iterdir() if p.is_dir()]
    return folder


# ---------------------------------------------------------------------------------- links
def test_a_link_back_up_the_tree_files_no_other_class_under_the_link(tmp_path, capsys,
                                                                    monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = flat_folder(os.fsencode(tmp_path / "data"), {b"class_a": 7, b"class_b": 6})
    os.symlink(b"..", os.path.join(root, b"class_a", b"loop"))

    assert main(["scan", os.fsdecode(root)]) == 0
    out = capsys.readouterr().out
    # 7 images: round(7 * 0.2) = 1 validates; 6 images: round(1.2) = 1 validates.
    assert "  class_a                  train       6  val      1" in out
    assert "  class_b                  train       5  val      1" in out
    assert (f"skipped: {tmp_path / 'data' / 'class_a' / 'loop'}: link to data, a folder that "
            "contains the folder it is in (a loop): not followed") in out

    # The health check sees the scan's list: 13 images, no class_b image filed under class_a.
    assert main(["scan", "--health", os.fsdecode(root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("13 images checked")
    assert "Conflicting labels" not in out


def test_a_linked_class_folder_and_linked_images_count_once(tmp_path, capsys):
    root = flat_folder(os.fsencode(tmp_path / "data"), {b"class_a": 5, b"class_b": 5})
    elsewhere = flat_folder(os.fsencode(tmp_path / "elsewhere"), {b"dogs": 5})
    os.symlink(os.path.join(elsewhere, b"dogs"), os.path.join(root, b"dogs"))  # followed
    os.symlink(b"class_a", os.path.join(root, b"class_a_again"))  # the same class twice
    os.symlink(b"img0.png", os.path.join(root, b"class_a", b"again.png"))  # the same file
    os.symlink(b"../class_b/img0.png", os.path.join(root, b"class_a", b"b.png"))  # a b image

    assert main(["scan", os.fsdecode(root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 classes, 12 train / 3 val images")
    for name in ("class_a", "class_b", "dogs"):
        assert f"  {name:<24} train       4  val      1" in out
    data = tmp_path / "data"
    assert (f"skipped: {data / 'class_a_again'}: link into class folder 'class_a': not "
            "followed, its images stay in 'class_a' only") in out
    assert (f"skipped: {data / 'class_a' / 'again.png'}: link to an image this class already "
            "lists: listed once") in out
    assert (f"skipped: {data / 'class_a' / 'b.png'}: link to an image of class 'class_b': "
            "not used, it stays in 'class_b' only") in out


# ------------------------------------------------------------------------- names as bytes
def test_a_class_folder_whose_name_is_not_utf8_scans_and_trains(tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = flat_folder(os.fsencode(tmp_path / "data"), {b"class_\xff": 5, b"plain": 5})

    assert main(["scan", os.fsdecode(root)]) == 0
    out = capsys.readouterr().out
    assert "  class_\\xff               train       4  val      1" in out  # escaped, one line

    assert main(train_args(root, tmp_path / "runs")) == 0
    err = capsys.readouterr().err
    assert "run completed after 1 epoch(s)" in err
    assert "Traceback" not in err
    folder = run_folder(tmp_path / "runs")
    dataset = json.loads((folder / "config.json").read_text())["dataset"]
    assert [os.fsencode(name) for name in dataset["class_names"]] == [b"class_\xff", b"plain"]
    from workbench.core.runs.predictions_file import read_predictions

    rows = read_predictions(folder)
    assert sorted(os.fsencode(row.true_class) for row in rows) == [b"class_\xff", b"plain"]


@pytest.fixture
def awkward_val_folder(tmp_path: Path) -> bytes:
    """train/ and val/ folders, so the awkward names surely validate (predictions.csv lists
    validation images): val/cat holds a name that is not UTF-8 and one with a newline, and
    val/dog a near-blank image whose name holds a newline."""
    root = os.fsencode(tmp_path / "data")
    seed = 100
    for split, count in ((b"train", 4), (b"val", 1)):
        for name in (b"cat", b"dog"):
            for index in range(count):
                seed += 1
                noise_png(os.path.join(root, split, name, b"img%d.png" % index), seed)
    noise_png(os.path.join(root, b"val", b"cat", BAD_BYTES), 1)
    noise_png(os.path.join(root, b"val", b"cat", TWO_LINES), 2)
    flat_png(os.path.join(root, b"val", b"dog", LEFT_OUT), (128, 128, 128))
    return root


def test_names_that_are_not_utf8_or_hold_a_newline_keep_predictions_csv(
        tmp_path, capsys, monkeypatch, awkward_val_folder):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = awkward_val_folder
    runs = tmp_path / "runs"

    assert main(train_args(root, runs)) == 0
    err = capsys.readouterr().err
    assert "could not be written" not in err
    folder = run_folder(runs)
    assert (folder / "feature_health.json").is_file()  # the model-feature findings too

    # The app's own reader gives back every validation image's name, byte for byte.
    from workbench.core.runs.predictions_file import read_predictions

    paths = {os.fsencode(row.path) for row in read_predictions(folder)}
    val = os.path.join(root, b"val")
    assert paths == {os.path.join(val, b"cat", b"img0.png"), os.path.join(val, b"dog",
                                                                          b"img0.png"),
                     os.path.join(val, b"cat", BAD_BYTES), os.path.join(val, b"cat", TWO_LINES),
                     os.path.join(val, b"dog", LEFT_OUT)}
    # One line a row: a newline in a name does not split the file's lines.
    text = (folder / "predictions.csv").read_text(encoding="utf-8")
    assert len(text.splitlines()) == 1 + 5

    # The run's report names them escaped, on one line.
    assert main(["report", str(folder)]) == 0
    capsys.readouterr()
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert "bad\\xfename.png" in page and "two\\nlines.png" in page

    # predict --csv on the same images, an empty folder among its inputs.
    (tmp_path / "empty").mkdir()
    out_csv = tmp_path / "predicted.csv"
    assert main(["predict", str(folder / "best_model.pt"), os.fsdecode(os.path.join(val, b"cat")),
                 str(tmp_path / "empty"), "--csv", str(out_csv)]) == 0
    out, err = capsys.readouterr()
    assert f"warning: {tmp_path / 'empty'}: no images in this folder or its subfolders" in err
    assert f"{tmp_path / 'data' / 'val' / 'cat'}/bad\\xfename.png: " in out  # escaped
    assert f"{tmp_path / 'data' / 'val' / 'cat'}/two\\nlines.png: " in out
    with open(out_csv, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    # Cells that hold such a name are JSON strings; json.loads undoes them.
    cells = {os.fsencode(json.loads(r["path"]) if r["path"].startswith('"') else r["path"])
             for r in rows}
    assert cells == {os.path.join(val, b"cat", name)
                     for name in (b"img0.png", BAD_BYTES, TWO_LINES)}


def test_a_newline_name_survives_the_exclusion_list_and_training_leaves_it_out(
        tmp_path, capsys, monkeypatch, awkward_val_folder):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = awkward_val_folder

    assert main(["scan", "--health", os.fsdecode(root), "--leave-out", "near_blank",
                 "--exclude-output", str(tmp_path / "exclude.txt")]) == 0
    out = capsys.readouterr().out
    assert "val/dog/left\\nout.png: contrast" in out  # the finding names it on one line
    # The facts cache keeps the names too: a second check decodes none of the 13 again.
    assert main(["scan", "--health", os.fsdecode(root)]) == 0
    assert ", 13 unchanged since the last check" in capsys.readouterr().out.splitlines()[0]
    listed = [line for line in (tmp_path / "exclude.txt").read_text().splitlines()
              if not line.startswith("#")]
    assert listed == ['"val/dog/left\\nout.png"']
    with open(tmp_path / "exclude.txt", "a", encoding="utf-8") as handle:
        handle.write("val/dog/not-there.png\n")  # line 5: matches no image

    runs = tmp_path / "runs"
    assert main(train_args(root, runs, "--exclude-file", str(tmp_path / "exclude.txt"))) == 0
    err = capsys.readouterr().err
    # 8 training and 5 validation images, less the one listed.
    assert "data: 2 classes, 8 train / 4 val images (val folder)" in err
    assert "1 left out by the exclusion list" in err
    assert (f"{tmp_path / 'exclude.txt'}: 1 line matched no image of this folder: line 5 "
            "val/dog/not-there.png (no such image)") in err
    from workbench.core.runs.predictions_file import read_predictions

    paths = {os.fsencode(row.path) for row in read_predictions(run_folder(runs))}
    assert os.path.join(root, b"val", b"dog", LEFT_OUT) not in paths
    assert len(paths) == 4


# ---------------------------------------------------------------------- one sentence each
def test_a_file_given_as_the_data_folder_is_called_a_file(tmp_path, capsys):
    given = tmp_path / "photos.zip"
    given.write_bytes(b"PK")
    assert main(train_args(str(given), tmp_path / "runs")) == 2
    err = capsys.readouterr().err
    assert (f"Data folder (data_root): '{given}' is a file, not a folder; choose the folder "
            "that holds the class folders") in err
    assert "does not exist" not in err


def test_the_few_images_warning_for_300_classes_names_ten_and_counts_the_rest(tmp_path,
                                                                             capsys):
    root = tmp_path / "data"
    for index in range(300):
        folder = root / f"class_{index:03d}"
        folder.mkdir(parents=True)
        # Two different images a class (byte-identical copies would both stay in training).
        Image.new("RGB", (8, 8), (index % 256, 0, 0)).save(folder / "a.png")
        Image.new("RGB", (8, 8), (0, index % 256, 1)).save(folder / "b.png")
    assert main(["scan", "--no-header-check", str(root)]) == 0
    warning = next(line for line in capsys.readouterr().out.splitlines()
                   if "fewer than 10 training images" in line)
    shown = ", ".join(f"class_{index:03d} (1)" for index in range(10))
    assert warning == ("warning: 300 class(es) have fewer than 10 training images: "
                       f"{shown} and 290 more")


def test_health_progress_in_a_log_has_no_carriage_returns(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = flat_folder(os.fsencode(tmp_path / "data"), {b"a": 3, b"b": 3})
    assert main(["scan", "--health", os.fsdecode(root)]) == 0
    err = capsys.readouterr().err  # captured: not a terminal
    assert "\r" not in err
    assert err.splitlines() == ["checked 6 / 6 images"]


def test_the_health_check_reports_an_exif_rotated_image_upright(tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = flat_folder(os.fsencode(tmp_path / "data"), {b"a": 3, b"b": 3})
    # Stored 240 wide and 20 high; EXIF orientation 6 (rotate 90): 20 wide, 240 high upright.
    strip = Image.effect_noise((240, 20), 60).convert("RGB")
    exif = Image.Exif()
    exif[0x0112] = 6
    strip.save(os.fsdecode(os.path.join(root, b"a", b"strip.jpg")), exif=exif)
    assert main(["scan", "--health", os.fsdecode(root)]) == 0
    out = capsys.readouterr().out
    assert "a/strip.jpg: 20x240, sides 12.0:1" in out


def test_a_val_class_folder_that_links_back_up_is_skipped(tmp_path, capsys):
    root = os.fsencode(tmp_path / "data")
    seed = 0
    for folder, count in ((b"train/cat", 3), (b"train/dog", 3), (b"val/dog", 1)):
        for index in range(count):
            seed += 1
            noise_png(os.path.join(root, folder, b"%d.png" % index), seed)
    os.symlink(b"..", os.path.join(root, b"val", b"cat"))  # val/cat -> data/: every image

    assert main(["scan", os.fsdecode(root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 classes, 6 train / 1 val images (val folder)")
    assert (f"skipped: {tmp_path / 'data' / 'val' / 'cat'}: link to data, a folder that "
            "contains the data folder (a loop): not followed") in out
    assert f"warning: {tmp_path / 'data' / 'val' / 'cat'}: class 'cat' has no val images" in out
