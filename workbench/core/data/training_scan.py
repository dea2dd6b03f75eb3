"""The scan a run trains on, made the same way wherever it is shown.

The Dataset tab, ``workbench scan``, the pre-flight check and the run itself all call
``scan_for_run``: the folder's identity, every image's header checked (so a file is usable or
skipped for the same reason everywhere), the groups of copies of the folder's last health check
loaded here and handed to the split, and the user's exclusion list applied before the split.
One result, so every view shows the same counts, imbalance, skipped and left-out files.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

from workbench.core.data.cache_folder import REPORT_FILE, folder_identity, health_folder
from workbench.core.data.dataset_scan import DatasetScan, scan_dataset
from workbench.core.data.health.exclusion_list import (
    read_exclusion_file,
    unmatched_lines_message,
)

# Findings of health.json whose groups are copies that the split keeps on one side.
COPY_KINDS = ("exact_duplicate", "near_duplicate")


def scan_for_run(root: str | os.PathLike[str], val_fraction: float = 0.2, seed: int = 0, *,
                 cache_dir: str = "", exclude_file: str = "",
                 verify: bool = True) -> DatasetScan:
    """Scan ``root`` as a run with these settings will train on it (``verify=False`` only
    for a quick listing by name, which training does not make).

    Raises:
        DatasetError: the folder cannot be used, or the exclusion list cannot be read.
    """
    identity = folder_identity(root)
    leave_out = read_exclusion_file(exclude_file, identity) if exclude_file else frozenset()
    scan = scan_dataset(root, val_fraction, seed, verify=verify,
                        duplicate_groups=health_copy_groups(identity, cache_dir),
                        leave_out=leave_out)
    if exclude_file:
        left_out = {os.path.normpath(path) for path in scan.left_out}
        unmatched = unmatched_lines_message(exclude_file, identity, left_out, scan.skipped)
        if unmatched:
            scan.mismatches.append(unmatched)
    return scan


def health_copy_groups(root: str | os.PathLike[str], cache_dir: str = "") -> list[list[str]]:
    """The groups of copies found by the folder's last health check ([] before the first)."""
    report = str(health_folder(root, cache_dir) / REPORT_FILE)
    try:
        return _read_copy_groups(report, os.stat(report).st_mtime_ns)
    except OSError:
        return []


@lru_cache(maxsize=4)
def _read_copy_groups(report: str, _mtime_ns: int) -> list[list[str]]:
    """The copy groups in a health.json (read again once the file changes)."""
    try:
        with open(report, encoding="utf-8", errors="surrogateescape") as file:
            findings = json.load(file)["findings"]
        return [list(item["files"]) for finding in findings if finding["kind"] in COPY_KINDS
                for item in finding["items"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []
