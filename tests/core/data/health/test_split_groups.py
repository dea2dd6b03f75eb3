"""The automatic split never separates a duplicate group: byte-identical copies always, and
near copies once a health check has grouped them."""

from __future__ import annotations

import random
import shutil

import pytest

from tests.core.data.health.conftest import near_copy_maker, write_flat_folder_with_copies
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.dataset_split import keep_duplicates_on_one_side
from workbench.core.data.health.health_check import check_health


def _straddling(groups: list[set[str]], root, seeds=range(12)) -> list[tuple[int, set[str]]]:
    found = []
    for seed in seeds:
        scan = scan_dataset(root, val_fraction=0.3, seed=seed)
        train = {p for p, _ in scan.train}
        val = {p for p, _ in scan.val}
        assert val and train
        found += [(seed, g) for g in groups if g & train and g & val]
    return found


def test_byte_identical_copies_never_straddle_the_split(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))  # no health check there

    def byte_copy(source, target_stem):
        target = target_stem.with_suffix(".png")
        shutil.copyfile(source, target)
        return target

    groups = write_flat_folder_with_copies(tmp_path / "data", byte_copy)
    assert _straddling(groups, tmp_path / "data") == []


def test_near_copies_stay_together_once_a_health_check_has_grouped_them(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "data"
    groups = write_flat_folder_with_copies(root, near_copy_maker())
    assert _straddling(groups, root), "without a health check some near copies straddle"
    check_health(root, threads=2)  # into the default cache, where the split looks
    assert _straddling(groups, root) == []


@pytest.mark.parametrize("seed", range(5))
def test_moving_groups_keeps_every_file_once(seed):
    rng = random.Random(seed)
    files = [f"/d/c/{i:02d}.png" for i in range(20)]
    rng.shuffle(files)
    train, val = sorted(files[:15]), sorted(files[15:])
    result_train, result_val = keep_duplicates_on_one_side("/nonexistent", train, val)
    assert (result_train, result_val) == (train, val)  # no copies, nothing moves
