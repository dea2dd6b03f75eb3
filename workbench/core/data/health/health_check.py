"""Check an image folder's health: every image decoded once, in threads, then grouped and
judged. Progress goes to a callback, a cancel flag is checked between images, and the facts
are kept so a rescan of an unchanged folder decodes nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from workbench.core.data.cache_folder import REPORT_FILE, health_folder
from workbench.core.data.dataset_scan import DatasetScan, scan_dataset
from workbench.core.data.health.duplicate_groups import (
    NEAR_DUPLICATE_BITS,
    exact_groups,
    hash_distance,
    near_groups,
    picture_correlation,
)
from workbench.core.data.health.facts_cache import FactsCache
from workbench.core.data.health.findings import (
    Finding,
    FindingItem,
    HealthReport,
    refuse_inside,
    write_report,
)
from workbench.core.data.health.image_facts import ImageFacts, image_facts
from workbench.core.data.health.odd_images import balance_finding, odd_image_findings
from workbench.core.data.image_decoding import TOO_LARGE

ProgressCallback = Callable[[int, int], None]
# Skipped-file reasons of the dataset scan that mean "an image file that cannot be read".
_UNREADABLE_SKIPS = ("empty file", "cannot read file", "not a regular file")


class CancelFlag(Protocol):
    def is_set(self) -> bool: ...


class HealthCheckCancelled(Exception):
    """The check was cancelled; the facts measured so far are kept for the next check."""


@dataclass(frozen=True)
class _Sample:
    path: str
    class_name: str
    split: str  # "train" or "val"


def check_health(root: str | os.PathLike[str], *, cache_dir: str = "", report_path: str = "",
                 val_fraction: float = 0.2, seed: int = 0,
                 near_bits: int = NEAR_DUPLICATE_BITS, threads: int = 0,
                 progress: ProgressCallback | None = None,
                 cancel: CancelFlag | None = None) -> HealthReport:
    """Check ``root`` and write ``health.json`` (to ``report_path``, or the folder's health
    folder in the cache); the user's folder is only read.

    Raises:
        DatasetError: the folder cannot be scanned as a dataset.
        HealthCheckCancelled: ``cancel`` was set before the check finished.
    """
    started = time.perf_counter()
    root_str = os.path.abspath(os.fspath(root))
    if report_path:
        refuse_inside(Path(report_path).absolute(), root_str)  # before any work
    scan = scan_dataset(root_str, val_fraction=val_fraction, seed=seed)
    samples = _samples(scan)
    folder = health_folder(root_str, cache_dir)
    cache = FactsCache(folder)
    facts, reused = _all_facts([s.path for s in samples], cache, threads, progress, cancel)
    cache.save(facts)
    report = HealthReport(root_str, scan.layout, len(samples),
                          _findings(scan, samples, facts, near_bits), reused=reused,
                          near_threshold=near_bits)
    report.seconds = time.perf_counter() - started
    write_report(report, report_path or folder / REPORT_FILE)
    return report


def _samples(scan: DatasetScan) -> list[_Sample]:
    names = scan.class_names
    return [*(_Sample(p, names[label], "train") for p, label in scan.train),
            *(_Sample(p, names[label], "val") for p, label in scan.val)]


def _all_facts(paths: list[str], cache: FactsCache, threads: int,
               progress: ProgressCallback | None,
               cancel: CancelFlag | None) -> tuple[list[ImageFacts], int]:
    """Facts of every path: from the cache when the file is unchanged, else decoded."""
    known: dict[str, ImageFacts] = {}
    todo: list[str] = []
    for path in paths:
        try:
            info = os.stat(path)
            cached = cache.lookup(path, info.st_size, info.st_mtime_ns)
        except OSError:
            cached = None
        if cached is None:
            todo.append(path)
        else:
            known[path] = cached
    reused = len(known)
    _report(progress, reused, len(paths))
    # Python's own default for threads that wait on files; Pillow decodes without the GIL.
    workers = threads or min(32, (os.cpu_count() or 1) + 4)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: set[Future[ImageFacts]] = set()
        queue = iter(todo)
        while True:
            if cancel is not None and cancel.is_set():
                cache.save(list(known.values()))
                raise HealthCheckCancelled(f"health check of {len(paths):,} images cancelled")
            for path in queue:  # keep a few images a thread in flight, not the whole folder
                pending.add(pool.submit(image_facts, path))
                if len(pending) >= 4 * workers:
                    break
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                facts = future.result()
                known[facts.path] = facts
            _report(progress, len(known), len(paths))
    return [known[p] for p in paths], reused


def _report(progress: ProgressCallback | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _findings(scan: DatasetScan, samples: list[_Sample], facts: list[ImageFacts],
              near_bits: int) -> list[Finding]:
    by_path = {s.path: s for s in samples}
    facts_of = {f.path: f for f in facts}
    failed = [FindingItem((f.path,), f.error, (f.path,)) for f in facts if f.error]
    too_large = [item for item in failed if item.reason.startswith(TOO_LARGE)]
    unreadable = [item for item in failed if not item.reason.startswith(TOO_LARGE)]
    unreadable += [FindingItem((s.path,), s.reason, ()) for s in scan.skipped
                   if s.reason.startswith(_UNREADABLE_SKIPS)]
    exact = exact_groups(facts)
    groups = near_groups(facts, near_bits)  # every copy group, exact ones included
    near = [g for g in groups if len({facts_of[p].pixel_digest for p in g}) > 1]
    found = [
        Finding("unreadable", tuple(unreadable)),
        Finding("too_large", tuple(too_large)),
        Finding("leakage", tuple(_leak_items(groups, by_path)) if scan.layout == "train_val"
                else ()),
        Finding("conflicting_label", tuple(_conflict_items(groups, by_path))),
        Finding("exact_duplicate", tuple(
            FindingItem(tuple(g), f"{len(g)} files with the same pixels", tuple(g[1:]))
            for g in exact)),
        Finding("near_duplicate", tuple(_near_item(g, facts_of) for g in near)),
        *odd_image_findings(facts, {s.path: s.class_name for s in samples}),
    ]
    found = [f for f in found if f.items or f.verdict]
    found.append(balance_finding(scan.class_names, scan.train_counts()))
    return found


def _near_item(group: list[str], facts_of: dict[str, ImageFacts]) -> FindingItem:
    # The largest picture is kept; the others are the copies.
    ordered = sorted(group, key=lambda p: (-facts_of[p].width * facts_of[p].height, p))
    kept = facts_of[ordered[0]]
    spread = max(hash_distance(kept.phash, facts_of[p].phash) for p in ordered)
    least = min(picture_correlation(kept, facts_of[p]) for p in ordered[1:])
    reason = (f"{len(group)} copies of {Path(ordered[0]).name}: 16 px thumbnails correlate "
              f"{least:.2f} or more, perceptual hashes differ by at most {spread} of 64 bits")
    return FindingItem(tuple(ordered), reason, tuple(ordered[1:]))


def _leak_items(groups: list[list[str]], by_path: dict[str, _Sample]) -> list[FindingItem]:
    items = []
    for group in groups:
        train = [p for p in group if by_path[p].split == "train"]
        val = [p for p in group if by_path[p].split == "val"]
        if train and val:
            reason = (f"{len(train)} in train, {len(val)} in val: "
                      f"{Path(train[0]).name} is also {Path(val[0]).name}")
            items.append(FindingItem((*train, *val), reason, tuple(train)))
    return items


def _conflict_items(groups: list[list[str]], by_path: dict[str, _Sample]) -> list[FindingItem]:
    items = []
    for group in groups:
        classes = sorted({by_path[p].class_name for p in group})
        if len(classes) > 1:
            reason = f"the same image in classes {', '.join(classes)}"
            items.append(FindingItem(tuple(group), reason, tuple(group)))
    return items
