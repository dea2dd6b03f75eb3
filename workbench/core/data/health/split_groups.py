"""Keep every duplicate group on one side of the automatic train/val split.

The groups are those of the folder's last health check (exact and near duplicates) when one
was run with the default cache folder, plus files with identical bytes, found by hashing only
the files whose sizes collide (identical files have equal sizes, so a folder of distinct
photos reads almost nothing).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from functools import lru_cache

from workbench.core.data.health.locations import REPORT_FILE, health_folder

# Findings whose groups are the same picture.
_GROUP_KINDS = ("exact_duplicate", "near_duplicate")


def keep_duplicates_on_one_side(root: str, train: list[str],
                                val: list[str]) -> tuple[list[str], list[str]]:
    """One class's split, with each duplicate group moved wholly to the side holding most of
    it (train on a tie), so no copy of a validation image is trained on. Deterministic: the
    same split and groups give the same result."""
    if not train or not val:
        return train, val
    group_of = _group_ids(root, train + val)
    if not group_of:
        return train, val
    sides: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for side, files in enumerate((train, val)):
        for path in files:
            if path in group_of:
                sides[group_of[path]][side] += 1
    to_val = {gid for gid, (in_train, in_val) in sides.items() if in_train and in_val > in_train}
    to_train = {gid for gid, (in_train, in_val) in sides.items()
                if in_train and in_val and gid not in to_val}
    new_train = [p for p in train if group_of.get(p) not in to_val]
    new_val = [p for p in val if group_of.get(p) not in to_train]
    new_train += [p for p in val if group_of.get(p) in to_train]
    new_val += [p for p in train if group_of.get(p) in to_val]
    return sorted(new_train), sorted(new_val)


def _group_ids(root: str, files: list[str]) -> dict[str, int]:
    """path -> group id for the files of ``files`` that have a copy among them."""
    parent: dict[str, str] = {}
    groups = [*_report_groups(str(health_folder(root) / REPORT_FILE)),
              *_identical_byte_groups(files)]
    for group in groups:
        for path in group[1:]:
            _join(parent, group[0], path)
    wanted = set(files)
    roots = sorted({_root(parent, p) for p in parent})
    ids = {name: index for index, name in enumerate(roots)}
    return {p: ids[_root(parent, p)] for p in parent if p in wanted}


def _report_groups(report_path: str) -> list[list[str]]:
    try:
        stamp = os.stat(report_path).st_mtime_ns
    except OSError:
        return []
    return _read_report_groups(report_path, stamp)


@lru_cache(maxsize=4)
def _read_report_groups(report_path: str, _stamp: int) -> list[list[str]]:
    """The duplicate groups of a health report (cached until the file changes)."""
    try:
        with open(report_path, encoding="utf-8") as file:
            data = json.load(file)
        return [list(item["files"]) for finding in data["findings"]
                if finding["kind"] in _GROUP_KINDS for item in finding["items"]]
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
    for same_size in by_size.values():
        if len(same_size) < 2:
            continue
        for path in same_size:
            digest = _file_digest(path)
            if digest:
                by_digest[digest].append(path)
    return [paths for paths in by_digest.values() if len(paths) > 1]


def _file_digest(path: str) -> str:
    digest = hashlib.sha1()
    try:
        with open(path, "rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return ""
    return digest.hexdigest()


def _root(parent: dict[str, str], path: str) -> str:
    parent.setdefault(path, path)
    while parent[path] != path:
        parent[path] = parent[parent[path]]
        path = parent[path]
    return path


def _join(parent: dict[str, str], first: str, second: str) -> None:
    parent[_root(parent, first)] = _root(parent, second)
