"""The automatic split of a class-per-folder dataset: a pure function of the classes' files,
the seed, the fraction and the groups of copies handed to it.

Each class is shuffled by a seed made of the run's seed and the class folder's name as bytes
(a name that is not valid UTF-8 splits like any other), and ``round(count * fraction)`` of it
goes to validation, at least one image and never all. Groups of copies (identical bytes, and
the exact and near duplicates of a health check, which the caller loads) then decide one side
for all their members, across classes too, so no copy of a validation image is trained on.
Where that leaves a class of two or more images without a validation (or a training) image,
another of its groups or images moves; where every image of the class is tied to a group, the
group is split inside the class and a note says that its validation then measures memorisation.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

TRAIN, VAL = 0, 1


@dataclass(frozen=True)
class DatasetSplit:
    """Training and validation samples (path, class index), and what the user should know."""

    train: list[tuple[str, int]]
    val: list[tuple[str, int]]
    notes: list[str]


def class_seed(seed: int, class_name: str) -> bytes:
    """The seed of one class's shuffle: the run's seed and the folder name's bytes on disk (the
    same draw as the text seed ``f"{seed}:{name}"`` wherever the name is valid UTF-8)."""
    return f"{seed}:".encode() + os.fsencode(class_name)


def split_class(files: list[str], val_fraction: float,
                seed: bytes | str) -> tuple[list[str], list[str]]:
    """Seeded split of one class: a class of two or more images keeps at least one image in
    training and one in validation; a lone image stays in training."""
    count = len(files)
    if count < 2:
        return list(files), []
    n_val = _validation_count(count, val_fraction)
    order = list(range(count))
    random.Random(seed).shuffle(order)
    val_positions = set(order[:n_val])
    train = [p for i, p in enumerate(files) if i not in val_positions]
    val = [p for i, p in enumerate(files) if i in val_positions]
    return train, val


def split_dataset(classes: Sequence[tuple[str, Sequence[str]]], val_fraction: float, seed: int,
                  groups: Sequence[Sequence[str]] = ()) -> DatasetSplit:
    """Split every class, then keep each group of copies on one side.

    Args:
        classes: (class name, its files) in class-index order; files sorted.
        val_fraction: share of each class held out for validation.
        seed: the run's seed.
        groups: groups of copies (paths); a path in two groups joins them, paths outside
            ``classes`` are ignored.
    """
    label_of: dict[str, int] = {}
    side: dict[str, int] = {}
    for label, (name, files) in enumerate(classes):
        train, val = split_class(list(files), val_fraction, class_seed(seed, name))
        side.update({path: TRAIN for path in train} | {path: VAL for path in val})
        label_of.update({path: label for path in files})
    copies = copy_groups(groups, label_of)
    for group in copies:
        in_val = sum(side[p] for p in group)
        chosen = VAL if in_val > len(group) - in_val else TRAIN  # train on a tie
        side.update({path: chosen for path in group})
    notes = _keep_every_class_validated(classes, side, copies, val_fraction, seed)
    train_samples = [(p, label) for label, (_, files) in enumerate(classes)
                     for p in files if side[p] == TRAIN]
    val_samples = [(p, label) for label, (_, files) in enumerate(classes)
                   for p in files if side[p] == VAL]
    return DatasetSplit(train_samples, val_samples, notes)


def copy_groups(groups: Sequence[Sequence[str]], known: dict[str, int]) -> list[list[str]]:
    """The groups of ``groups`` restricted to the paths in ``known``, overlapping groups joined,
    each sorted; only groups of two or more."""
    parent: dict[str, str] = {}
    for group in groups:
        members = [p for p in group if p in known]
        for path in members[1:]:
            parent[_root(parent, members[0])] = _root(parent, path)
    joined: dict[str, list[str]] = {}
    for path in list(parent):
        joined.setdefault(_root(parent, path), []).append(path)
    return sorted(sorted(members) for members in joined.values() if len(members) > 1)


def split_fingerprint(root: str, val: Sequence[tuple[str, int]],
                      class_names: Sequence[str]) -> str:
    """A short hash of the validation files (their class and path inside ``root``): two runs
    validated on the same images have the same fingerprint, wherever the folder was typed."""
    digest = hashlib.sha256()
    for entry in sorted(os.fsencode(class_names[label]) + b"\0"
                        + os.fsencode(os.path.relpath(path, root)) for path, label in val):
        digest.update(entry + b"\n")
    return digest.hexdigest()[:12]


def identical_byte_groups(files: Sequence[str]) -> list[list[str]]:
    """Files with identical bytes, found by hashing only the files whose sizes collide, so a
    folder of distinct photos reads almost nothing. The scan hands them to the split."""
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


# ---------------------------------------------------------------- every class validates
def _keep_every_class_validated(classes: Sequence[tuple[str, Sequence[str]]],
                                side: dict[str, int], copies: list[list[str]],
                                val_fraction: float, seed: int) -> list[str]:
    """Give each class of two or more images a validation and a training image where moving
    groups took them away, and say where copies had to be split to do it."""
    group_of = {path: tuple(group) for group in copies for path in group}
    label_of = {path: label for label, (_, files) in enumerate(classes) for path in files}
    sizes = [len(files) for _, files in classes]
    notes = []
    for name, files in classes:
        if len(files) < 2:
            continue
        for wanted in (VAL, TRAIN):
            if any(side[p] == wanted for p in files):
                continue
            unit = _unit_to_move(files, wanted, side, group_of, label_of, sizes, seed)
            if unit is not None:
                side.update({path: wanted for path in unit})
            else:
                notes.append(_split_inside(name, list(files), wanted, side, group_of,
                                           val_fraction, seed))
    return notes


def _unit_to_move(files: Sequence[str], wanted: int, side: dict[str, int],
                  group_of: dict[str, tuple[str, ...]], label_of: dict[str, int],
                  sizes: list[int], seed: int) -> tuple[str, ...] | None:
    """The smallest image or group of copies of this class that can move to ``wanted``
    without leaving any class of two or more images without an image on the other side."""
    units = {group_of.get(path, (path,)) for path in files}
    other_side: dict[int, int] = {}
    for path, where in side.items():
        if where != wanted:
            other_side[label_of[path]] = other_side.get(label_of[path], 0) + 1
    fitting = []
    for unit in units:
        left_behind: dict[int, int] = {}
        for path in unit:
            left_behind[label_of[path]] = left_behind.get(label_of[path], 0) + 1
        if all(other_side.get(label, 0) - moved >= 1
               for label, moved in left_behind.items() if sizes[label] >= 2):
            fitting.append(unit)
    if not fitting:
        return None
    return min(fitting, key=lambda unit: (len(unit), _draw(seed, unit[0])))


def _split_inside(name: str, files: list[str], wanted: int, side: dict[str, int],
                  group_of: dict[str, tuple[str, ...]], val_fraction: float, seed: int) -> str:
    """Move part of the class's own copies to ``wanted`` and say what that measures."""
    n_val = _validation_count(len(files), val_fraction)
    moving = len(files) - n_val if wanted == TRAIN else n_val
    for path in sorted(files, key=lambda path: _draw(seed, path))[:moving]:
        side[path] = wanted
    groups = {group_of[path] for path in files if path in group_of}
    example = max(groups, key=lambda group: (len(group), group))
    shown = ", ".join(os.path.basename(p) for p in example[:3]) + (", …" if len(example) > 3
                                                                    else "")
    if len(groups) == 1 and set(example) == set(files):
        tied = f"all {len(files)} images of class '{name}' are copies of one another ({shown})"
    else:
        tied = (f"every image of class '{name}' is in a group of copies that must stay "
                f"together (the largest: {len(example)} copies, {shown})")
    return (f"Split: {tied}; {n_val} of them validate so that the class is measured at all, "
            "but their copies are trained on, so its validation accuracy measures memorisation, "
            f"not recognition of new images. Add distinct images of '{name}' for a real measure.")


def _validation_count(count: int, val_fraction: float) -> int:
    return min(count - 1, max(1, round(count * val_fraction)))


def _draw(seed: int, path: str) -> bytes:
    """A seeded, stable order of paths (bytes: any name hashes)."""
    return hashlib.sha256(f"{seed}:".encode() + os.fsencode(path)).digest()


def _root(parent: dict[str, str], path: str) -> str:
    parent.setdefault(path, path)
    while parent[path] != path:
        parent[path] = parent[parent[path]]
        path = parent[path]
    return path
