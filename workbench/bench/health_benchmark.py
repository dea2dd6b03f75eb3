"""The data health check: its speed against a plain Pillow loop, and how well it finds copies.

Speed: the same folder of JPEG photos is read by ``Image.open(path).load()`` one file after
the other (the baseline: the least any check that decodes every file must do), by a first
health check (fresh cache) and by a rescan of the unchanged folder.

Copies: a generated set of originals, each with a copy re-encoded at JPEG quality 30, one
resized to half, one cropped by 2% of each side and one brightened by 25%, among distinct
images. Pairs of files the check puts in one duplicate group are compared with the true
pairs: precision, recall (also per kind of copy), and the share of distinct images flagged.

Real sets (``python -m workbench.bench.health_benchmark``): every set of ``real_image_sets``
and openclipart's clip art as shipped, with problems planted into them; per set, the share of
images flagged per finding kind and the share of planted problems found (``real_set_rows``).
"""

from __future__ import annotations

import itertools
import random
import tempfile
import time
from pathlib import Path

from PIL import Image

from workbench.bench.report import BenchRow, info_row, ratio_row
from workbench.core.data.health.duplicate_groups import NEAR_DUPLICATE_BITS
from workbench.core.data.health.generated_folders import (
    NEAR_COPY_KINDS,
    distinct_image,
    near_copy,
)
from workbench.core.data.health.health_check import check_health

GROUP = "health"
FIRST_SCAN_TARGET = 1.0
RESCAN_TARGET = 20.0
PHOTO_SIZE = (800, 600)


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """Speed rows (first scan, rescan) and copy-finding rows; ``device`` is not used."""
    photos, originals, distinct = (60, 20, 60) if quick else (1500, 150, 400)
    with tempfile.TemporaryDirectory(prefix="workbench-health-bench-") as tmp:
        return [*_speed_rows(Path(tmp), photos), *_copy_rows(Path(tmp), originals, distinct)]


def _speed_rows(tmp: Path, count: int) -> list[BenchRow]:
    root = tmp / "photos"
    paths = _write_photos(root, count)
    import imagehash  # noqa: F401 - imported once a process (scipy: about a second), not timed

    started = time.perf_counter()
    for path in paths:
        with Image.open(path) as image:
            image.load()
    plain = count / (time.perf_counter() - started)
    cache = str(tmp / "cache")
    first = check_health(root, cache_dir=cache)
    rescan = check_health(root, cache_dir=cache)
    assert rescan.reused == count, "the rescan decoded files again"
    setting = (f"{count} JPEG photos {PHOTO_SIZE[0]}x{PHOTO_SIZE[1]} quality 90, page cache "
               "warm for all three")
    first_rate, rescan_rate = count / first.seconds, count / rescan.seconds
    return [
        ratio_row(GROUP, "health check first scan vs Image.open().load() loop", first_rate,
                  plain, "img/s", FIRST_SCAN_TARGET, setting=setting,
                  seconds=round(first.seconds, 3)),
        ratio_row(GROUP, "health check rescan (unchanged) vs Image.open().load() loop",
                  rescan_rate, plain, "img/s", RESCAN_TARGET, setting=setting,
                  seconds=round(rescan.seconds, 3)),
    ]


def _write_photos(root: Path, count: int) -> list[Path]:
    rng = random.Random(0)
    paths = []
    for index in range(count):
        folder = root / ("a" if index % 2 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"photo_{index:05d}.jpg"
        distinct_image(rng, 200).resize(PHOTO_SIZE, Image.Resampling.BILINEAR).save(
            path, quality=90)
        paths.append(path)
    return paths


def _copy_rows(tmp: Path, originals: int, distinct: int) -> list[BenchRow]:
    root = tmp / "copies"
    truth, kind_of_pair, loners = _write_copy_set(root, originals, distinct)
    report = check_health(root, cache_dir=str(tmp / "cache"))
    found: set[frozenset[str]] = set()
    flagged: set[str] = set()
    for kind in ("exact_duplicate", "near_duplicate"):
        finding = report.finding(kind)
        for item in finding.items if finding else ():
            found |= {frozenset(p) for p in itertools.combinations(item.files, 2)}
            flagged |= set(item.files)
    hits = found & truth
    precision = len(hits) / max(1, len(found))
    recall = len(hits) / len(truth)
    per_kind = {kind: round(sum(1 for pair in hits if kind_of_pair.get(pair) == kind)
                            / originals, 4) for kind in NEAR_COPY_KINDS}
    false_positive = len(flagged & loners) / len(loners)
    setting = (f"{originals} originals 96 px with one copy of each kind "
               f"({', '.join(NEAR_COPY_KINDS)}), {distinct} distinct images, threshold "
               f"{NEAR_DUPLICATE_BITS} of 64 bits")
    return [
        info_row(GROUP, "near-duplicate precision (pairs)", precision, "share", setting=setting,
                 predicted_pairs=len(found), true_pairs=len(truth)),
        info_row(GROUP, "near-duplicate recall (pairs)", recall, "share", setting=setting,
                 recall_original_to_copy_by_kind=per_kind),
        info_row(GROUP, "distinct images flagged as duplicates", false_positive, "share",
                 setting=setting, flagged=len(flagged & loners)),
    ]


def _write_copy_set(root: Path, originals: int, distinct: int
                    ) -> tuple[set[frozenset[str]], dict[frozenset[str], str], set[str]]:
    """Files on disk; the true pairs, the copy kind of each original-copy pair, the loners."""
    rng = random.Random(1)
    folder = root / "things"
    folder.mkdir(parents=True)
    truth: set[frozenset[str]] = set()
    kind_of_pair: dict[frozenset[str], str] = {}
    for index in range(originals):
        image = distinct_image(rng, 96)
        group = [str(folder / f"original_{index:04d}.png")]
        image.save(group[0])
        for kind in NEAR_COPY_KINDS:
            path = str(folder / f"original_{index:04d}_{kind}.jpg")
            near_copy(image, kind).save(path, quality=90)
            kind_of_pair[frozenset((group[0], path))] = kind
            group.append(path)
        truth |= {frozenset(p) for p in itertools.combinations(group, 2)}
    loners = set()
    (root / "others").mkdir()
    for index in range(distinct):
        path = root / "others" / f"distinct_{index:04d}.png"
        distinct_image(rng, 96).save(path)
        loners.add(str(path))
    return truth, kind_of_pair, loners


# ------------------------------------------------------------------ real sets, planted problems
# Debian's openclipart-png, read as shipped: one class a category.
CLIPART_ROOT = Path("/usr/share/openclipart/png")
CLIPART_CATEGORIES = ("people", "computer", "office", "tools", "signs_and_symbols", "shapes")
# Problems planted into a real set, each into its own originals (never two into one image).
PLANT_KINDS = ("exact", "reencoded", "resized", "cropped", "truncated", "leak", "conflict")
COPY_KINDS = ("exact", "reencoded", "resized", "cropped")
# Finding kinds whose flagged share is reported (the class balance is a verdict, not files).
SHARE_KINDS = ("unreadable", "too_large", "leakage", "conflicting_label", "exact_duplicate",
               "near_duplicate", "near_blank", "dark", "bright", "blurry", "tiny",
               "extreme_aspect", "grayscale")
SHARE_TARGET = 0.02
COPY_RECALL_TARGET = 0.9


def real_set_rows(names: list[str], clipart: bool = True, plants: int = 20, seed: int = 0,
                  work: Path | None = None) -> list[dict]:
    """One row a real set: images, share flagged per kind among the images nothing was planted
    into, recall per planted kind, the folder-level lines and the seconds the check took."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="workbench-health-real-") as tmp:
        base = work or Path(tmp)
        for name in names:
            from workbench.bench.real_image_sets import write_real_set

            root = write_real_set(name, base / name, seed=seed)
            rows.append(_planted_row(name, root, base / f"{name}-cache", plants, seed))
        if clipart and CLIPART_ROOT.is_dir():
            root = _clipart_folder(base / "openclipart")
            rows.append(_planted_row("openclipart (6 categories)", root,
                                     base / "openclipart-cache", plants, seed))
    return rows


def _clipart_folder(root: Path) -> Path:
    """``root/<category>/`` holding a link to every entry of the shipped category folder, so
    planted files can sit beside the shipped ones; nothing under /usr/share is written."""
    for category in CLIPART_CATEGORIES:
        folder = root / category
        folder.mkdir(parents=True)
        for entry in sorted((CLIPART_ROOT / category).iterdir()):
            (folder / entry.name).symlink_to(entry)
    return root


def _planted_row(name: str, root: Path, cache: Path, plants: int, seed: int) -> dict:
    from workbench.core.data.dataset_scan import scan_dataset

    scan = scan_dataset(str(root), val_fraction=0.2, seed=seed)
    train_val = scan.layout == "train_val"
    kinds = [k for k in PLANT_KINDS if train_val or k != "leak"]
    count = min(plants, len(scan.train) // (4 * len(kinds)))
    originals = _originals(scan.train, count * len(kinds), seed)
    planted: dict[str, list[tuple[str, str]]] = {k: [] for k in kinds}
    for index, (path, label) in enumerate(originals):
        kind = kinds[index % len(kinds)]
        other = scan.class_names[(label + 1) % len(scan.class_names)]
        planted[kind].append((path, _plant(kind, Path(path), root, index, other)))
    report = check_health(root, cache_dir=str(cache))
    involved = {p for pairs in planted.values() for pair in pairs for p in pair}
    distinct = [p for p, _ in (*scan.train, *scan.val) if p not in involved]
    share = {}
    lines = []
    for kind in SHARE_KINDS:
        finding = report.finding(kind)
        files = {p for item in finding.items for p in item.files} if finding else set()
        share[kind] = len(files & set(distinct)) / max(1, len(distinct))
        if finding is not None and finding.verdict:
            lines.append(f"{kind}: {finding.verdict}")
    recall = {kind: _found(report, kind, pairs) / max(1, len(pairs))
              for kind, pairs in planted.items()}
    return {"set": name, "images": report.images, "distinct": len(distinct),
            "planted_each": count, "share": share, "recall": recall, "folder_lines": lines,
            "seconds": round(report.seconds, 1), "report": report}


def _originals(train: list[tuple[str, int]], count: int, seed: int) -> list[tuple[str, int]]:
    """``count`` training images, each at least 8 px a side and decodable, in a seeded order."""
    from workbench.core.data.image_decoding import MAX_DECODED_PIXELS

    rng = random.Random(seed)
    order = list(train)
    rng.shuffle(order)
    chosen = []
    for path, label in order:
        try:
            with Image.open(path) as image:
                fits = min(image.size) >= 8 and image.width * image.height <= MAX_DECODED_PIXELS
                if fits:
                    image.load()
        except Exception:  # noqa: BLE001 - a shipped file that does not decode plants nothing
            continue
        if fits:
            chosen.append((path, label))
        if len(chosen) == count:
            break
    return chosen


def _plant(kind: str, source: Path, root: Path, index: int, other_class: str) -> str:
    """Write one planted problem made from ``source``; returns its path."""
    from workbench.core.data.image_decoding import TRANSPARENT_BACKGROUND

    # Planted files go into the class folder itself, never into a subfolder (which in the
    # clip-art set is a link into the shipped files).
    parts = source.relative_to(root).parts
    train_val = parts[0] in ("train", "val") and len(parts) > 2
    split, label = (parts[0], parts[1]) if train_val else ("", parts[0])
    if kind == "leak":
        split = "val"
    elif kind == "conflict":
        label = other_class
    folder = root / split / label
    assert not folder.is_symlink() and folder.resolve().is_relative_to(root.resolve())
    stem = f"planted_{index:04d}_{kind}"
    data = source.read_bytes()
    if kind in ("exact", "leak", "conflict"):
        target = folder / f"{stem}{source.suffix}"
        target.write_bytes(data)
        return str(target)
    if kind == "truncated":
        target = folder / f"{stem}{source.suffix}"
        target.write_bytes(data[:max(16, len(data) * 6 // 10)])
        return str(target)
    with Image.open(source) as opened:
        image = opened.convert("RGBA")
    if kind == "reencoded":
        # What the health check and training see: transparency over the same grey.
        flat = Image.new("RGBA", image.size, (*TRANSPARENT_BACKGROUND, 255))
        target = folder / f"{stem}.jpg"
        Image.alpha_composite(flat, image).convert("RGB").save(target, quality=75)
        return str(target)
    if kind == "resized":
        image = image.resize((max(1, image.width // 2), max(1, image.height // 2)),
                             Image.Resampling.BILINEAR)
    elif kind == "cropped":  # 3% of each side
        dx, dy = max(1, image.width * 3 // 100), max(1, image.height * 3 // 100)
        image = image.crop((dx, dy, image.width - dx, image.height - dy))
    target = folder / f"{stem}.png"
    image.save(target)
    return str(target)


def _found(report, kind: str, pairs: list[tuple[str, str]]) -> int:
    """How many planted (original, problem) pairs the report names as that problem."""
    if kind == "truncated":
        finding = report.finding("unreadable")
        files = {p for item in finding.items for p in item.files} if finding else set()
        return sum(planted in files for _, planted in pairs)
    looked_in = {"leak": ("leakage",), "conflict": ("conflicting_label",)}.get(
        kind, ("exact_duplicate", "near_duplicate"))
    together = set()
    for finding_kind in looked_in:
        finding = report.finding(finding_kind)
        for item in finding.items if finding else ():
            together |= {frozenset(p) for p in itertools.combinations(item.files, 2)}
    return sum(frozenset(pair) in together for pair in pairs)


def real_set_table(rows: list[dict]) -> str:
    """Two markdown tables: share flagged per kind (distinct images), recall per planted kind."""
    shown = [k for k in SHARE_KINDS if any(r["share"][k] for r in rows)] or list(SHARE_KINDS[:1])
    lines = ["| set | images | " + " | ".join(shown) + " | worst | <= 2% |",
             "| --- | ---: | " + " | ".join("---:" for _ in shown) + " | ---: | --- |"]
    for row in rows:
        worst = max(row["share"].values())
        lines.append(f"| {row['set']} | {row['distinct']:,} | " + " | ".join(
            _percent(row["share"][k]) for k in shown)
            + f" | {_percent(worst)} | {'yes' if worst <= SHARE_TARGET else 'no'} |")
    lines += ["", "| set | planted each | " + " | ".join(PLANT_KINDS)
              + " | copies >= 0.9 | check s |",
              "| --- | ---: | " + " | ".join("---:" for _ in PLANT_KINDS) + " | --- | ---: |"]
    for row in rows:
        copies = min(row["recall"][k] for k in ("exact", "reencoded"))
        lines.append(f"| {row['set']} | {row['planted_each']} | " + " | ".join(
            f"{row['recall'][k]:.2f}" if k in row["recall"] else "n/a" for k in PLANT_KINDS)
            + f" | {'yes' if copies >= COPY_RECALL_TARGET else 'no'} | {row['seconds']} |")
    folder_lines = [f"- {row['set']}: {line}" for row in rows for line in row["folder_lines"]]
    if folder_lines:
        lines += ["", "Folder-level lines:", *folder_lines]
    return "\n".join(lines)


def _percent(share: float) -> str:
    return f"{share:.1%}" if share else "0"


def main(argv: list[str] | None = None) -> int:
    """``python -m workbench.bench.health_benchmark [--sets a,b] [--no-clipart]``: the real-set
    tables in markdown; ``--keep DIR`` keeps the folders and writes each set's health.json
    report path into the output."""
    import argparse

    from workbench.bench.real_image_sets import REAL_SETS

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--sets", default=",".join(REAL_SETS),
                        help="real sets to check, comma-separated (default: all)")
    parser.add_argument("--no-clipart", action="store_true", help="leave out the clip art")
    parser.add_argument("--plants", type=int, default=20, help="problems planted of each kind")
    parser.add_argument("--keep", default="", help="write the folders here and keep them")
    args = parser.parse_args(argv)
    work = Path(args.keep) if args.keep else None
    rows = real_set_rows([s for s in args.sets.split(",") if s], not args.no_clipart,
                         args.plants, work=work)
    print(real_set_table(rows))
    for row in rows:
        print(f"{row['set']}: {row['report'].report_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
