"""'Leave out of training': the exclusion list changes the run's image list and nothing on
disk; a missing list is a clear config problem; the list is never written into the folder."""

from __future__ import annotations

import os

import pytest

from tests.core.data.health.conftest import folder_snapshot
from workbench.core.data.cache_folder import EXCLUDE_FILE, health_folder
from workbench.core.data.health.exclusion_list import read_exclusion_file, write_exclusion_file
from workbench.core.data.health.health_check import check_health
from workbench.core.runs.config import TrainConfig
from workbench.core.training.session_setup import scan_for_training


def test_leaving_out_changes_the_run_image_list_and_nothing_on_disk(problem_folder, tmp_path):
    root, problems = problem_folder
    cache = str(tmp_path / "cache")
    report = check_health(root, cache_dir=cache, threads=2)
    before = folder_snapshot(root)
    config = TrainConfig(data_root=str(root), batch_size=2, cache_dir=cache)
    everything = scan_for_training(config)

    chosen = [*report.finding("leakage").leave_out(), *report.finding("blurry").leave_out(),
              *report.finding("near_duplicate").leave_out()]
    exclude = write_exclusion_file(health_folder(root, cache) / EXCLUDE_FILE, str(root), chosen)
    assert exclude.read_text().count("\n") >= len(chosen)
    assert "train/cat/blurry.png" in exclude.read_text()  # relative to the data folder
    left_out = scan_for_training(config.replace(exclude_file=str(exclude)))

    before_paths = {p for p, _ in everything.train + everything.val}
    after_paths = {p for p, _ in left_out.train + left_out.val}
    assert before_paths - after_paths == set(chosen)
    assert str(problems["blurry"]) not in {p for p, _ in left_out.train}
    assert str(root / "train" / "cat" / "cat_2.png") not in after_paths  # the leaked copy
    assert str(problems["leaked"]) in {p for p, _ in left_out.val}  # val keeps its image
    assert folder_snapshot(root) == before

    # Reversible: an empty field trains on every image again.
    assert scan_for_training(config.replace(exclude_file="")).train == everything.train


def test_a_missing_exclusion_list_is_named_in_the_config_problems(tmp_path):
    config = TrainConfig(data_root=str(tmp_path), exclude_file=str(tmp_path / "gone.txt"))
    problems = [p for p in config.validate() if "exclude_file" in p]
    assert problems == [f"Images left out (exclude_file): file '{tmp_path / 'gone.txt'}' does "
                        "not exist; clear the field to train on every image"]


def test_the_list_is_never_written_into_the_image_folder(problem_folder):
    root, problems = problem_folder
    with pytest.raises(ValueError, match="inside the image folder"):
        write_exclusion_file(root / "exclude.txt", str(root), [str(problems["blank"])])
    assert not (root / "exclude.txt").exists()


def test_absolute_and_relative_lines_and_comments_are_read(tmp_path):
    listed = tmp_path / "list.txt"
    listed.write_text(f"# a comment\ncat/a.png\n\n{tmp_path / 'elsewhere' / 'b.png'}\n")
    assert read_exclusion_file(listed, str(tmp_path / "data")) == {
        str(tmp_path / "data" / "cat" / "a.png"), str(tmp_path / "elsewhere" / "b.png")}


def test_any_name_round_trips_and_old_or_handmade_lists_read_as_before(tmp_path):
    root = tmp_path / "data"
    names = [b"cat/new\nline.png", b"cat/bad\xfe.png", b"cat/#1.png", b'cat/"q".png',
             b"cat/ space.png", b"cat/plain.png"]
    files = [os.fsdecode(os.path.join(os.fsencode(root), name)) for name in names]
    written = write_exclusion_file(tmp_path / "list.txt", str(root), files)
    entries = [line for line in written.read_text(encoding="utf-8").split("\n")
               if line and not line.startswith("#")]
    assert len(entries) == len(names)  # one line a name, valid UTF-8
    assert read_exclusion_file(written, str(root)) == set(files)

    # A list made by hand or by ``find`` (raw bytes, plain lines, CRLF) names the same files.
    handmade = tmp_path / "find.txt"
    handmade.write_bytes(b"cat/bad\xfe.png\r\n  cat/plain.png  \n# a comment\n")
    assert read_exclusion_file(handmade, str(root)) == {files[1], files[5]}
