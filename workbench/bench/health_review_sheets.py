"""Contact sheets for judging a health report's duplicate groups by eye.

A finding is only as good as the share of it a person agrees with, and a group of look-alikes
is judged at the size the files have, not from a 16 px thumbnail. For every group of the chosen
findings of a ``health.json`` (``workbench scan --health --report``) this writes one row: the
group's first file, the member that differs most from it (mean absolute difference of the
grey pixels at the smaller of the two sizes) and that difference times three, each composited
over the same grey as training and the health check see transparent pixels, and a
``groups.tsv`` with the figures and every member's file name, numbered as on the sheets, to
write the verdicts into.

    python -m workbench.bench.health_review_sheets health.json review/ --kinds near_duplicate
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from workbench.core.transparency import composite_transparency

CELL = 150  # pixels a side of each picture on a sheet
GROUPS_A_SHEET = 16  # two columns of eight rows
DIFFERENCE_GAIN = 3.0  # the difference picture's grey levels are three times the difference


@dataclass(frozen=True)
class ReviewedGroup:
    """One group as its row on a sheet shows it."""

    number: int
    kind: str
    files: list[str]
    worst_file: str
    mean_difference: float  # grey levels, first file against worst_file
    block_difference: float  # the largest mean over a block of an eighth of each side


def _grey(path: str, size: tuple[int, int] | None = None) -> Image.Image:
    with Image.open(path) as opened:
        grey = composite_transparency(opened).convert("L")
    return grey if size is None or grey.size == size else grey.resize(size, Image.LANCZOS)


def _compare(first: Image.Image, other: Image.Image) -> tuple[float, float, np.ndarray]:
    difference = np.abs(np.asarray(first, np.float64) - np.asarray(other, np.float64))
    height, width = difference.shape
    block_h, block_w = max(1, height // 8), max(1, width // 8)
    blocks = [difference[y:y + block_h, x:x + block_w].mean()
              for y in range(0, height - block_h + 1, block_h)
              for x in range(0, width - block_w + 1, block_w)]
    return float(difference.mean()), float(max(blocks)), difference


def review_group(number: int, kind: str, files: list[str]
                 ) -> tuple[ReviewedGroup, list[Image.Image]]:
    """The group's figures and its three pictures (first, most different, difference)."""
    sizes = []
    for path in files:
        with Image.open(path) as opened:
            sizes.append(opened.size)
    common = (min(w for w, _ in sizes), min(h for _, h in sizes))
    first = _grey(files[0], common)
    worst = (-1.0, 0.0, files[0], first, np.zeros((common[1], common[0])))
    for path in files[1:]:
        other = _grey(path, common)
        mean, block, difference = _compare(first, other)
        if mean > worst[0]:
            worst = (mean, block, path, other, difference)
    mean, block, worst_file, other, difference = worst
    shown = Image.fromarray(np.clip(difference * DIFFERENCE_GAIN, 0, 255).astype(np.uint8))
    scale = CELL / max(common)
    cell = (max(1, round(common[0] * scale)), max(1, round(common[1] * scale)))
    pictures = [picture.resize(cell, Image.NEAREST) for picture in (first, other, shown)]
    return ReviewedGroup(number, kind, list(files), worst_file, round(max(mean, 0.0), 2),
                         round(block, 1)), pictures


def write_review_sheets(report: Path, out: Path, kinds: tuple[str, ...] = ("near_duplicate",)
                        ) -> list[ReviewedGroup]:
    """Write ``sheet<N>.png`` and ``groups.tsv`` into ``out`` for the groups of ``kinds``."""
    document = json.loads(Path(report).read_text(encoding="utf-8"))
    groups = [(finding["kind"], item["files"]) for finding in document["findings"]
              if finding["kind"] in kinds for item in finding["items"]
              if len(item.get("files", [])) >= 2]
    out.mkdir(parents=True, exist_ok=True)
    reviewed, rows = [], []
    for number, (kind, files) in enumerate(groups):
        group, pictures = review_group(number, kind, files)
        reviewed.append(group)
        rows.append(pictures)
    column = 30 + 3 * CELL + 20
    for start in range(0, len(rows), GROUPS_A_SHEET):
        chunk = rows[start:start + GROUPS_A_SHEET]
        lines = -(-len(chunk) // 2)
        sheet = Image.new("RGB", (2 * column, lines * (CELL + 4)), "white")
        draw = ImageDraw.Draw(sheet)
        for index, pictures in enumerate(chunk):
            x, y = (index % 2) * column, (index // 2) * (CELL + 4)
            draw.text((x + 2, y + CELL // 2), str(start + index), fill="red")
            for offset, picture in enumerate(pictures):
                sheet.paste(picture.convert("RGB"), (x + 30 + offset * CELL, y))
        sheet.save(out / f"sheet{start // GROUPS_A_SHEET}.png")
    with open(out / "groups.tsv", "w", encoding="utf-8") as table:
        table.write("number\tkind\tmembers\tmean_difference\tblock_difference\tverdict\tfiles\n")
        for group in reviewed:
            table.write(f"{group.number}\t{group.kind}\t{len(group.files)}\t"
                        f"{group.mean_difference}\t{group.block_difference}\t\t"
                        + " | ".join(group.files) + "\n")
    return reviewed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a health.json written by scan --health")
    parser.add_argument("out", type=Path, help="folder for the sheets and groups.tsv")
    parser.add_argument("--kinds", default="near_duplicate",
                        help="comma-separated finding kinds whose groups are shown")
    args = parser.parse_args(argv)
    reviewed = write_review_sheets(args.report, args.out, tuple(args.kinds.split(",")))
    print(f"{len(reviewed)} groups, {sum(len(g.files) for g in reviewed)} files: "
          f"sheets and groups.tsv in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
