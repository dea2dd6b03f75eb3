"""Find the classes and images of a class-per-folder dataset, and split it for validation.

Two layouts are understood: ``root/train/<class>/`` with ``root/val/<class>/`` ("train_val"),
and ``root/<class>/`` ("flat"), which is split by a seeded, stratified draw. The walk uses
``os.scandir`` and decodes nothing unless asked to, so a folder of 100,000 files scans in
well under a few seconds. Files that cannot be used are listed with the reason.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.data.cache_folder import folder_identity
from workbench.core.data.class_folders import (
    DatasetError,
    SkippedFile,
    class_folder_names,
    collect_class,
    has_images,
    is_ignored_folder,
    is_image_name,
    list_folder,
)
from workbench.core.data.dataset_split import (
    identical_byte_groups,
    split_dataset,
    split_fingerprint,
)
from workbench.core.file_names import shown_name

# Images with fewer than this many training samples in a class earn a warning.
FEW_IMAGES = 10
# Classes a warning names before "and N more".
SHOWN_CLASSES = 10
# A ratio of largest to smallest class at or above this earns a warning.
IMBALANCE_WARNING_RATIO = 3.0


@dataclass
class DatasetScan:
    """The classes, the train and val samples and everything the scan noticed on the way.

    This one result feeds every number a view shows (the Dataset tab, the run log, the command
    line, the report and the run folder): views format it and never count again.
    """

    root: str  # the folder's identity (cache_folder.folder_identity), however it was typed
    layout: str
    class_names: list[str]
    class_to_idx: dict[str, int]
    train: list[tuple[str, int]]
    val: list[tuple[str, int]]
    skipped: list[SkippedFile] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    val_fraction: float = 0.2
    seed: int = 0
    left_out: list[str] = field(default_factory=list)  # listed in the exclusion list
    split_notes: list[str] = field(default_factory=list)  # where copies had to be split

    def train_counts(self) -> list[int]:
        """Number of training images per class index."""
        return _counts(self.train, len(self.class_names))

    def val_counts(self) -> list[int]:
        """Number of validation images per class index."""
        return _counts(self.val, len(self.class_names))

    @property
    def imbalance_ratio(self) -> float:
        """Largest over smallest training class; ``inf`` when a class has no training image."""
        return imbalance_ratio(self.train_counts())

    @property
    def split_fingerprint(self) -> str:
        """A short hash of the validation files: runs with the same one validated alike."""
        return split_fingerprint(self.root, self.val, self.class_names)

    def warnings(self) -> list[str]:
        """Problems worth telling the user about before training, in plain words."""
        messages: list[str] = []
        if len(self.class_names) == 1:
            messages.append(
                f"{self.root}: only one class ('{self.class_names[0]}'); a classifier needs at "
                "least 2 class folders, so add a folder of images for each other class")
        ratio = self.imbalance_ratio
        if ratio >= IMBALANCE_WARNING_RATIO:
            shown = "a class has no training images" if math.isinf(ratio) else f"{ratio:.1f}x"
            messages.append(
                f"Classes are imbalanced ({shown} between the largest and smallest class); "
                "consider a class-weighted loss or a weighted sampler (setting 'imbalance')."
            )
        few = [
            f"{shown_name(name)} ({count})"
            for name, count in zip(self.class_names, self.train_counts(), strict=True)
            if count < FEW_IMAGES
        ]
        if few:
            more = len(few) - SHOWN_CLASSES
            messages.append(
                f"{len(few)} class(es) have fewer than {FEW_IMAGES} training images: "
                + ", ".join(few[:SHOWN_CLASSES]) + (f" and {more:,} more" if more > 0 else "")
            )
        messages.extend(self.mismatches)
        messages.extend(self.split_notes)
        if self.skipped:
            first = self.skipped[0]
            messages.append(
                f"{_plural(len(self.skipped), 'file')} skipped "
                f"(e.g. {shown_name(first.path)}: {first.reason})"
            )
        return messages

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description (an infinite imbalance ratio is written as null)."""
        ratio = self.imbalance_ratio
        return {
            "root": self.root,
            "layout": self.layout,
            "class_names": list(self.class_names),
            "train_counts": self.train_counts(),
            "val_counts": self.val_counts(),
            "train_images": len(self.train),
            "val_images": len(self.val),
            "imbalance_ratio": None if math.isinf(ratio) else round(ratio, 3),
            "val_fraction": self.val_fraction,
            "seed": self.seed,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "left_out": list(self.left_out),
            "mismatches": list(self.mismatches),
            "split_notes": list(self.split_notes),
            "split_fingerprint": self.split_fingerprint,
            "description": self.describe(),
            "warnings": self.warnings(),
        }

    def describe(self) -> str:
        """One line, e.g. '11 classes, 30,412 train / 7,603 val images (auto split 20%), ...':
        every view of the folder shows this line."""
        split = "val folder"
        if self.layout == "flat":
            split = f"auto split {self.val_fraction:.0%}"
            held_out = len(self.val) / max(1, len(self.train) + len(self.val))
            if round(100 * held_out) != round(100 * self.val_fraction):
                split += f", {held_out:.0%} in practice"
        ratio = self.imbalance_ratio
        shown = "inf" if math.isinf(ratio) else f"{ratio:.1f}x"
        text = (
            f"{_plural(len(self.class_names), 'class', 'classes')}, "
            f"{len(self.train):,} train / {len(self.val):,} val images ({split}), "
            f"imbalance {shown}"
        )
        if self.skipped:
            text += f", {_plural(len(self.skipped), 'file')} skipped"
        if self.left_out:
            text += f", {len(self.left_out):,} left out by the exclusion list"
        return text


def imbalance_ratio(counts: Sequence[int]) -> float:
    """Largest over smallest class count; ``inf`` when a class has none: the one definition
    of imbalance every view shows."""
    if not counts or min(counts) == 0:
        return math.inf
    return max(counts) / min(counts)


def scan_dataset(
    root: str | os.PathLike[str],
    val_fraction: float = 0.2,
    seed: int = 0,
    verify: bool = False,
    *,
    duplicate_groups: Sequence[Sequence[str]] = (),
    leave_out: Collection[str] = frozenset(),
) -> DatasetScan:
    """Scan an image folder into train and val samples.

    Args:
        root: ``root/train/<class>/`` + ``root/val/<class>/``, or ``root/<class>/``; resolved
            to the folder's identity (its real path), which names every file of the scan.
        val_fraction: share of each class held out for validation in the flat layout.
        seed: seed of the flat layout's split; the same seed gives the same split.
        verify: also open every image's header with Pillow and skip those it cannot identify
            (the decision training makes too: ``training_scan.scan_for_run``).
        duplicate_groups: groups of copies (paths under the identity) the caller loaded, e.g.
            from the folder's health check; with the files of identical bytes the scan finds,
            each group stays on one side of the flat layout's split.
        leave_out: normalised absolute paths the user left out (an exclusion list): they are
            neither trained nor validated on, and are counted as left out.

    Returns:
        The scan; class names are sorted as torchvision's ``find_classes`` sorts them.

    Raises:
        DatasetError: the folder is missing, has no class folders, or a class has no images.
    """
    typed = os.fspath(root)
    if not os.path.exists(typed):
        raise DatasetError(f"{typed}: folder does not exist")
    if not os.path.isdir(typed):
        raise DatasetError(f"{typed}: is a file, not a folder")
    root_str = folder_identity(typed)
    skipped: list[SkippedFile] = []
    subfolders, loose_files = list_folder(root_str)
    if "train" in subfolders and "val" in subfolders:
        scan = _scan_train_val(root_str, val_fraction, seed, verify, skipped)
        return _without_left_out(scan, leave_out)
    if "train" in subfolders and not has_images(os.path.join(root_str, "train")):
        # root/train/<class>/ without root/val: the class folders are one level down.
        raise DatasetError(
            f"{root_str}: has a 'train' folder but no 'val' folder; add "
            f"{os.path.join(root_str, 'val')}/<class>/ or choose {os.path.join(root_str, 'train')}"
            " to split it automatically"
        )
    return _scan_flat(root_str, subfolders, loose_files, val_fraction, seed, verify, skipped,
                      duplicate_groups, leave_out)


def _without_left_out(scan: DatasetScan, leave_out: Collection[str]) -> DatasetScan:
    if not leave_out:
        return scan
    listed = set(leave_out)
    scan.left_out = [p for p, _ in [*scan.train, *scan.val] if os.path.normpath(p) in listed]
    scan.train = [s for s in scan.train if os.path.normpath(s[0]) not in listed]
    scan.val = [s for s in scan.val if os.path.normpath(s[0]) not in listed]
    return scan


def _scan_flat(
    root: str, subfolders: list[str], loose_files: list[str], val_fraction: float, seed: int,
    verify: bool, skipped: list[SkippedFile], duplicate_groups: Sequence[Sequence[str]],
    leave_out: Collection[str],
) -> DatasetScan:
    if not 0.0 < val_fraction < 1.0:
        raise DatasetError(f"{root}: val_fraction must be between 0 and 1 (got {val_fraction})")
    skipped.extend(
        SkippedFile(os.path.join(root, name), "image outside any class folder")
        for name in loose_files
        if is_image_name(name)
    )
    class_names = class_folder_names(root, subfolders, skipped)
    class_to_idx = {name: index for index, name in enumerate(class_names)}
    listed = set(leave_out)
    classes: list[tuple[str, list[str]]] = []
    left_out: list[str] = []
    for name in class_names:
        files = _required_class_images(os.path.join(root, name), verify, skipped)
        left_out += [p for p in files if os.path.normpath(p) in listed]
        classes.append((name, [p for p in files if os.path.normpath(p) not in listed]))
    every_file = [path for _, files in classes for path in files]
    split = split_dataset(classes, val_fraction, seed,
                          [*duplicate_groups, *identical_byte_groups(every_file)])
    validated = {label for _, label in split.val}
    too_small = [_too_few_to_validate(os.path.join(root, name), name, len(files))
                 for label, (name, files) in enumerate(classes) if label not in validated]
    return DatasetScan(root, "flat", class_names, class_to_idx, split.train, split.val, skipped,
                       too_small, val_fraction, seed, left_out, split.notes)


def _too_few_to_validate(folder: str, name: str, count: int) -> str:
    if count == 0:
        return (f"{folder}: every image of class '{name}' is left out by the exclusion list, "
                "so it is neither trained nor validated; include some of them again")
    return (f"{folder}: class '{name}' has only 1 image, too few to validate: it stays in "
            "training and its accuracy cannot be measured; add at least one more image to "
            "validate it")


def _scan_train_val(
    root: str, val_fraction: float, seed: int, verify: bool, skipped: list[SkippedFile]
) -> DatasetScan:
    train_root = os.path.join(root, "train")
    val_root = os.path.join(root, "val")
    class_names = class_folder_names(train_root, list_folder(train_root)[0], skipped)
    class_to_idx = {name: index for index, name in enumerate(class_names)}
    train: list[tuple[str, int]] = []
    for name in class_names:
        files = _required_class_images(os.path.join(train_root, name), verify, skipped)
        train.extend((path, class_to_idx[name]) for path in files)
    val: list[tuple[str, int]] = []
    mismatches: list[str] = []
    val_classes = sorted(n for n in list_folder(val_root)[0] if not is_ignored_folder(n))
    for name in val_classes:
        folder = os.path.join(val_root, name)
        if name not in class_to_idx:
            files = collect_class(folder, False, [])
            skipped.extend(SkippedFile(p, f"class '{name}' is not in train") for p in files)
            mismatches.append(
                f"{folder}: class '{name}' has no train folder; its "
                f"{_plural(len(files), 'val image')} are skipped"
            )
            continue
        files = collect_class(folder, verify, skipped)
        if not files:
            mismatches.append(f"{folder}: class '{name}' has no val images")
        val.extend((path, class_to_idx[name]) for path in files)
    for name in class_names:
        if name not in val_classes:
            mismatches.append(
                f"{os.path.join(val_root, name)}: class '{name}' has no val folder; "
                "its accuracy cannot be measured"
            )
    return DatasetScan(root, "train_val", class_names, class_to_idx, train, val, skipped,
                       mismatches, val_fraction, seed)


def _required_class_images(folder: str, verify: bool, skipped: list[SkippedFile]) -> list[str]:
    """The images of a training class folder; a class with none cannot be trained."""
    files = collect_class(folder, verify, skipped)
    if not files:
        raise DatasetError(_no_images_message(folder, skipped))
    return files


def _no_images_message(folder: str, skipped: list[SkippedFile]) -> str:
    inside = [s for s in skipped if s.path.startswith(folder + os.sep)]
    text = f"{shown_name(folder)}: class folder has no images"
    if inside:
        text += f" ({_plural(len(inside), 'file')} skipped, e.g. {inside[0].reason})"
    return text


def _counts(samples: list[tuple[str, int]], classes: int) -> list[int]:
    counts = [0] * classes
    for _, label in samples:
        counts[label] += 1
    return counts


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (plural or word + 's')}"
