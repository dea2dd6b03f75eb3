"""A train/val folder with one of every problem the health check names, and where each is."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest
from PIL import Image

from workbench.core.data.health.generated_folders import (
    blank_image,
    blurred,
    darkened,
    distinct_image,
    near_copy,
    truncated_jpeg_bytes,
)


def write_problem_folder(root: Path) -> dict[str, Path]:
    """train/ and val/ with cat and dog classes of distinct 64 px images, plus one of each
    problem; returns the problem files by name."""
    rng = random.Random(7)
    originals = {}
    for split, count in (("train", 10), ("val", 4)):
        for label in ("cat", "dog"):
            folder = root / split / label
            folder.mkdir(parents=True)
            for index in range(count):
                image = distinct_image(rng)
                image.save(folder / f"{label}_{index}.png")
                originals[f"{split}/{label}_{index}"] = image
    cat = root / "train" / "cat"
    problems = {
        "reencoded": cat / "cat_0_small.jpg",
        "resized": cat / "cat_1_half.png",
        "leaked": root / "val" / "cat" / "cat_2_copy.png",
        "conflict": root / "train" / "dog" / "cat_3.png",
        "truncated": cat / "truncated.jpg",
        "short_bmp": cat / "short.bmp",
        "corrupt": cat / "corrupt.png",
        "blank": cat / "blank.png",
        "dark": cat / "dark.png",
        "blurry": cat / "blurry.png",
    }
    near_copy(originals["train/cat_0"], "reencoded").save(problems["reencoded"], quality=30)
    near_copy(originals["train/cat_1"], "resized").save(problems["resized"])
    originals["train/cat_2"].save(problems["leaked"])
    originals["train/cat_3"].save(problems["conflict"])
    problems["truncated"].write_bytes(truncated_jpeg_bytes(distinct_image(rng)))
    distinct_image(rng).save(cat / "whole.bmp")
    problems["short_bmp"].write_bytes((cat / "whole.bmp").read_bytes()[:5000])
    (cat / "whole.bmp").unlink()
    problems["corrupt"].write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    blank_image().save(problems["blank"])
    darkened(distinct_image(rng)).save(problems["dark"])
    blurred(distinct_image(rng)).save(problems["blurry"])
    return problems


@pytest.fixture
def problem_folder(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    root = tmp_path / "photos"
    return root, write_problem_folder(root)


def folder_snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``root``: (size, modification time, SHA-1), to prove nothing changed."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns,
                                       hashlib.sha1(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file()}


def write_flat_folder_with_copies(root, copy_maker) -> list[set[str]]:
    """Two classes of 12 distinct images; 4 images of each class have 2 copies each."""
    rng = random.Random(11)
    groups = []
    for label in ("left", "right"):
        folder = root / label
        folder.mkdir(parents=True)
        for index in range(12):
            path = folder / f"{index:02d}.png"
            distinct_image(rng).save(path)
            if index < 4:
                copies = [copy_maker(path, folder / f"{index:02d}_copy{n}") for n in (1, 2)]
                groups.append({str(path), *map(str, copies)})
    return groups


def near_copy_maker():
    """A ``copy_maker`` for ``write_flat_folder_with_copies``: JPEG copies, re-encoded or
    resized in turn (never byte-identical to their original)."""
    kinds = iter(["reencoded", "resized"] * 100)

    def near(source: Path, target_stem: Path) -> Path:
        target = target_stem.with_suffix(".jpg")
        near_copy(Image.open(source).convert("RGB"), next(kinds)).save(target, quality=85)
        return target

    return near
