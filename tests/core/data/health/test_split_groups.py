"""The automatic split never separates a group of copies (byte-identical copies always, near
copies once a health check has grouped them, across classes too), is the same however the
folder is typed, and validates every class of two or more images."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from tests.core.data.health.conftest import near_copy_maker, write_flat_folder_with_copies
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.dataset_split import split_class, split_dataset
from workbench.core.data.health.generated_folders import distinct_image
from workbench.core.data.health.health_check import check_health
from workbench.core.data.training_scan import scan_for_run
from workbench.core.runs.config import TrainConfig
from workbench.core.training.session_setup import scan_for_training


def _straddling(groups: list[set[str]], root, seeds=range(12), cache="") -> list:
    found = []
    for seed in seeds:
        scan = scan_for_run(root, val_fraction=0.3, seed=seed, cache_dir=cache)
        train = {p for p, _ in scan.train}
        val = {p for p, _ in scan.val}
        assert val and train
        found += [(seed, g) for g in groups if g & train and g & val]
    return found


def _byte_copy(source, target_stem):
    target = target_stem.with_suffix(".png")
    shutil.copyfile(source, target)
    return target


def test_byte_identical_copies_never_straddle_the_split(tmp_path):
    groups = write_flat_folder_with_copies(tmp_path / "data", _byte_copy)
    assert _straddling(groups, tmp_path / "data", cache=str(tmp_path / "cache")) == []


def test_near_copies_stay_together_once_a_health_check_has_grouped_them(tmp_path):
    cache = str(tmp_path / "cache")
    root = tmp_path / "data"
    groups = write_flat_folder_with_copies(root, near_copy_maker())
    assert _straddling(groups, root, cache=cache), \
        "without a health check some near copies straddle"
    check_health(root, cache_dir=cache, threads=2)
    assert _straddling(groups, root, cache=cache) == []


def test_the_split_reads_no_cache_behind_the_callers_back(tmp_path, monkeypatch):
    """scan_dataset splits on the groups it is handed: a health check in the default cache
    does not change it; the same groups handed in do."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "data"
    groups = write_flat_folder_with_copies(root, near_copy_maker())
    before = scan_dataset(root, val_fraction=0.3, seed=1)
    check_health(root, threads=2)
    assert scan_dataset(root, val_fraction=0.3, seed=1).val == before.val
    handed = scan_dataset(root, val_fraction=0.3, seed=1,
                          duplicate_groups=[sorted(g) for g in groups])
    val = {p for p, _ in handed.val}
    assert all(g <= val or not g & val for g in groups)


def _spellings(root, tmp_path) -> dict[str, str]:
    link = tmp_path / "link-to-data"
    link.symlink_to(root, target_is_directory=True)
    return {"relative": os.path.relpath(root), "absolute": str(root),
            "symlink": str(link), "trailing slash": str(root) + os.sep}


def test_four_spellings_of_one_folder_give_one_split_after_a_health_check(tmp_path,
                                                                         monkeypatch):
    """`--data-root data`, `/abs/data`, a link to it and `data/` train on the same
    validation files, with the near copies the health check grouped on one side."""
    cache = str(tmp_path / "cache")
    root = tmp_path / "data"
    groups = write_flat_folder_with_copies(root, near_copy_maker())
    monkeypatch.chdir(tmp_path)
    spellings = _spellings(root, tmp_path)
    check_health(spellings["symlink"], cache_dir=cache, threads=2)  # checked through the link
    val_sets = {}
    for name, typed in spellings.items():
        config = TrainConfig(data_root=typed, val_fraction=0.3, seed=4, cache_dir=cache,
                             batch_size=2)
        scan = scan_for_training(config)
        val = {os.path.relpath(os.path.realpath(p), root) for p, _ in scan.val}
        train = {os.path.relpath(os.path.realpath(p), root) for p, _ in scan.train}
        for group in groups:
            names = {os.path.relpath(p, root) for p in group}
            assert names <= val or names <= train, f"{name}: a group straddles the split"
        val_sets[name] = (val, scan.split_fingerprint, scan.root)
    assert len({frozenset(v) for v, _, _ in val_sets.values()}) == 1, val_sets
    assert len({f for _, f, _ in val_sets.values()}) == 1
    assert {r for _, _, r in val_sets.values()} == {str(root)}


def test_a_copy_filed_in_two_classes_never_straddles(tmp_path):
    """A drawing filed twice in 'cats' and once in 'dogs' (identical bytes): all three copies
    land on one side, for every seed."""
    rng = random.Random(5)
    root = tmp_path / "data"
    for label in ("cats", "dogs"):
        (root / label).mkdir(parents=True)
        for index in range(6):
            distinct_image(rng).save(root / label / f"{label}{index}.png")
    drawing = root / "cats" / "drawing.png"
    distinct_image(rng).save(drawing)
    shutil.copyfile(drawing, root / "cats" / "drawing again.png")
    shutil.copyfile(drawing, root / "dogs" / "drawing.png")
    copies = {str(drawing), str(root / "cats" / "drawing again.png"),
              str(root / "dogs" / "drawing.png")}
    sides_seen = set()
    for seed in range(20):
        scan = scan_dataset(root, val_fraction=0.5, seed=seed)
        val = {p for p, _ in scan.val}
        assert copies <= val or not copies & val, f"seed {seed}: copies on both sides"
        sides_seen.add(copies <= val)
        assert scan.val_counts()[0] >= 1 and scan.val_counts()[1] >= 1
    assert sides_seen == {True, False}  # the group's side is drawn, not fixed


def test_a_class_of_identical_images_still_validates_and_says_what_it_measures(tmp_path):
    rng = random.Random(3)
    root = tmp_path / "data"
    for label in ("mug", "pen"):
        (root / label).mkdir(parents=True)
        image = distinct_image(rng)
        for index in range(10):
            image.save(root / label / f"{label}{index}.png")
    scan = scan_dataset(root, val_fraction=0.2, seed=0)
    # round(10 x 0.2) = 2 validation images a class, 8 for training.
    assert scan.train_counts() == [8, 8]
    assert scan.val_counts() == [2, 2]
    assert len(scan.split_notes) == 2
    assert "all 10 images of class 'mug' are copies of one another" in scan.split_notes[0]
    assert "memorisation" in scan.split_notes[0]
    assert any("memorisation" in warning for warning in scan.warnings())


def test_a_class_whose_copies_went_to_training_gets_another_image_to_validate(tmp_path):
    """Class 'b' has 3 images; one of them is a copy of 'a' images that training keeps.
    The group decides its side, and 'b' still gets a validation image of its own."""
    files_a = [f"/d/a/{i}.png" for i in range(6)]
    files_b = ["/d/b/0.png", "/d/b/1.png", "/d/b/2.png"]
    group = ["/d/a/0.png", "/d/a/1.png", "/d/a/2.png", "/d/b/0.png"]
    for seed in range(30):
        split = split_dataset([("a", files_a), ("b", files_b)], 0.34, seed, [group])
        val = {p for p, _ in split.val}
        train = {p for p, _ in split.train}
        assert set(group) <= val or set(group) <= train
        assert val & set(files_b) and train & set(files_b), seed
        assert val & set(files_a) and train & set(files_a), seed
        assert split.notes == []
        assert sorted(val | train) == sorted(files_a + files_b)


def test_a_class_name_that_is_not_utf8_splits(tmp_path):
    root = tmp_path / "data"
    rng = random.Random(2)
    for name in (b"caf\xe9", b"tea"):
        folder = os.path.join(os.fsencode(root), name)
        os.makedirs(folder)
        for index in range(5):
            distinct_image(rng).save(os.fsdecode(os.path.join(folder, b"%d.png" % index)))
    scan = scan_dataset(root, val_fraction=0.4, seed=0)
    assert scan.class_names == [os.fsdecode(b"caf\xe9"), "tea"]
    assert scan.val_counts() == [2, 2]  # round(5 x 0.4)
    assert len(scan.split_fingerprint) == 12


def test_bytes_and_text_seeds_draw_the_same_split_for_utf8_names():
    files = [f"f{i}" for i in range(10)]
    assert split_class(files, 0.3, "3:café") == split_class(files, 0.3, "3:café".encode())


@pytest.mark.parametrize("seed", range(5))
def test_splitting_keeps_every_file_once(seed):
    rng = random.Random(seed)
    files = sorted(f"/d/c/{i:02d}.png" for i in range(20))
    groups = [rng.sample(files, 3), rng.sample(files, 2)]
    plain = split_dataset([("c", files)], 0.25, seed)
    assert [p for p, _ in plain.val] == split_class(files, 0.25, f"{seed}:c".encode())[1]
    grouped = split_dataset([("c", files)], 0.25, seed, groups)
    paths = [p for p, _ in grouped.train + grouped.val]
    assert sorted(paths) == files
    val = {p for p, _ in grouped.val}
    for group in groups:  # overlapping groups join, so test each whole
        assert set(group) <= val or not set(group) & val


def test_the_pre_flight_says_before_start_which_copies_validate(tmp_path):
    from workbench.core.training.tuning.preflight import preflight

    rng = random.Random(3)
    root = tmp_path / "data"
    for label in ("mug", "pen"):
        (root / label).mkdir(parents=True)
        image = distinct_image(rng)
        for index in range(10):
            image.save(root / label / f"{label}{index}.png")
    result = preflight(TrainConfig(data_root=str(root), model="small_cnn", weights="none",
                                   device="cpu",
                                   output_dir=str(tmp_path / "runs")))
    assert result.can_start, result.problems
    notes = [n.text for n in result.notes if n.field == "data_root"]
    assert len(notes) == 2
    assert notes[0].startswith("Split: all 10 images of class 'mug' are copies of one another "
                               "(mug0.png, mug1.png, mug2.png, …); 2 of them validate")
