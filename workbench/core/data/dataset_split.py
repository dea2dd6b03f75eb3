"""Split one class's images into training and validation, keeping copies on one side.

The split is seeded and stratified per class; a class of two or more images keeps at least one
image on each side. Duplicate groups (exact and near copies, identical bytes) are then moved
wholly to one side so that no copy of a validation image is trained on.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import defaultdict
from functools import lru_cache


def split_class(
    files: list[str], val_fraction: float, seed_text: str
) -> tuple[list[str], list[str]]:
    """Seeded split of one class: a class of two or more images keeps at least one image in
    training and one in validation; a lone image stays in training."""
    count = len(files)
    if count < 2:
        return list(files), []
    n_val = min(count - 1, max(1, round(count * val_fraction)))
    order = list(range(count))
    random.Random(seed_text).shuffle(order)
    val_positions = set(order[:n_val])
    train = [p for i, p in enumerate(files) if i not in val_positions]
    val = [p for i, p in enumerate(files) if i in val_positions]
    return train, val


# ---------------------------------------------------------------- duplicates stay on one side
def keep_duplicates_on_one_side(root: str, train: list[str],
                                val: list[str]) -> tuple[list[str], list[str]]:
    """One class's split with every duplicate group moved wholly to the side holding most of
    it (train on a tie), so no copy of a validation image is trained on.

    The groups are the exact and near duplicates of the folder's last data health check (in
    the default cache folder), plus files with identical bytes, found by hashing only the
    files whose sizes collide, so a folder of distinct photos reads almost nothing.
    """
    if not train or not val:
        return train, val
    group_of = _duplicate_group_ids(root, train + val)
    sides: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for side, files in enumerate((train, val)):
        for path in files:
            if path in group_of:
                sides[group_of[path]][side] += 1
    to_val = {g for g, (in_train, in_val) in sides.items() if in_train and in_val > in_train}
    to_train = {g for g, (in_train, in_val) in sides.items()
                if in_train and in_val and g not in to_val}
    new_train = [p for p in train if group_of.get(p) not in to_val]
    new_train += [p for p in val if group_of.get(p) in to_train]
    new_val = [p for p in val if group_of.get(p) not in to_train]
    new_val += [p for p in train if group_of.get(p) in to_val]
    return sorted(new_train), sorted(new_val)


def _duplicate_group_ids(root: str, files: list[str]) -> dict[str, int]:
    """path -> group id, for the files of ``files`` that have a copy among them."""
    from workbench.core.data.cache_folder import REPORT_FILE, health_folder

    parent: dict[str, str] = {}
    wanted = set(files)
    report = str(health_folder(root) / REPORT_FILE)
    for group in [*_health_report_groups(report), *_identical_byte_groups(files)]:
        members = [p for p in group if p in wanted]
        for path in members[1:]:
            parent[_group_root(parent, members[0])] = _group_root(parent, path)
    roots = sorted({_group_root(parent, p) for p in list(parent)})
    return {p: roots.index(_group_root(parent, p)) for p in list(parent)}


def _health_report_groups(report: str) -> list[list[str]]:
    try:
        return _read_health_report_groups(report, os.stat(report).st_mtime_ns)
    except OSError:
        return []  # no health check of this folder yet


@lru_cache(maxsize=4)
def _read_health_report_groups(report: str, _mtime_ns: int) -> list[list[str]]:
    """The duplicate groups in a health.json (read again once the file changes)."""
    try:
        with open(report, encoding="utf-8") as file:
            findings = json.load(file)["findings"]
        return [list(item["files"]) for finding in findings
                if finding["kind"] in ("exact_duplicate", "near_duplicate")
                for item in finding["items"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _identical_byte_groups(files: list[str]) -> list[list[str]]:
    by_size: dict[int, list[str]] = defaultdict(list)
    for path in files:
        try:
            by_size[os.path.getsize(path)].append(path)
        except OSError:
            continue
    by_digest: dict[str, list[str]] = defaultdict(list)
    for same_size in (paths for paths in by_size.values() if len(paths) > 1):
        for path in same_size:
            digest = hashlib.sha1()
            try:
                with open(path, "rb") as file:
                    for block in iter(lambda: file.read(1 << 20), b""):  # noqa: B023
                        digest.update(block)
            except OSError:
                continue
            by_digest[digest.hexdigest()].append(path)
    return [paths for paths in by_digest.values() if len(paths) > 1]


def _group_root(parent: dict[str, str], path: str) -> str:
    parent.setdefault(path, path)
    while parent[path] != path:
        parent[path] = parent[parent[path]]
        path = parent[path]
    return path
