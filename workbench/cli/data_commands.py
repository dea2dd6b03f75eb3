"""``workbench scan`` and ``workbench cache``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    from workbench.core.data.health.findings import KINDS

    scan = sub.add_parser("scan", help="show the classes, counts and problems of an image folder")
    scan.add_argument("folder", help="the image folder: one subfolder per class, or train/ and "
                                     "val/ folders holding them")
    scan.add_argument("--val-fraction", type=float, default=0.2, metavar="FRACTION",
                      help="share of each class held out for validation when the folder has "
                           "no val/ folder (as train's --val-fraction; default 0.2)")
    scan.add_argument("--seed", type=int, default=0,
                      help="seed of the automatic split (as train's --seed): the same seed "
                           "shows the split that training uses")
    scan.add_argument("--exclude-file", default="",
                      help="an exclusion list (as train's --exclude-file): its files are "
                           "counted as left out, as the run leaves them out")
    scan.add_argument("--no-header-check", action="store_true",
                      help="list files by name only, without opening each image's header "
                           "(faster on a slow disk; broken images then surface in training)")
    scan.add_argument("--health", action="store_true",
                      help="decode every image once and report unreadable files, duplicates, "
                           "train/val leakage, conflicting labels and odd images; writes "
                           "health.json to the cache (or --report)")
    scan.add_argument("--cache-dir", default="",
                      help="the cache folder of the health check's facts and report (as "
                           "train's --cache-dir; default: the image cache); the split keeps "
                           "the copies it found on one side")
    scan.add_argument("--report", default="", help="with --health: where to write health.json")
    scan.add_argument("--leave-out", default="", metavar="KINDS",
                      help="with --health: write the files of these findings (comma-separated "
                           "kinds, or 'all') to an exclusion list for train --exclude-file; "
                           "kinds: " + ", ".join(kind for kind in KINDS if kind != "imbalance"))
    scan.add_argument("--exclude-output", default="",
                      help="with --leave-out: where to write the exclusion list "
                           "(default: exclude.txt beside health.json in the cache)")
    scan.set_defaults(handler=_cmd_scan)

    cache = sub.add_parser("cache", help="show where resized images are cached and how much "
                                         "they take; --clear deletes them")
    cache.add_argument("--cache-dir", default="",
                       help="the cache folder (default: the one runs use when cache_dir is empty)")
    cache.add_argument("--clear", action="store_true", help="delete the cached images")
    cache.set_defaults(handler=_cmd_cache)


def _cmd_scan(args: argparse.Namespace) -> int:
    if args.health:
        from workbench.cli.health_report_text import run_health_check

        return run_health_check(args)
    from workbench.core.data.dataset_scan import DatasetError
    from workbench.core.data.training_scan import scan_for_run

    try:
        # Headers only: Pillow identifies each file and its size without decoding pixels.
        # The same scan as training's, so the counts here are the run's.
        scan = scan_for_run(args.folder, args.val_fraction, args.seed, cache_dir=args.cache_dir,
                            exclude_file=args.exclude_file, verify=not args.no_header_check)
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from workbench.core.file_names import shown_name

    print(scan.describe())
    for name, train_count, val_count in zip(scan.class_names, scan.train_counts(),
                                            scan.val_counts(), strict=True):
        print(f"  {shown_name(name):<24} train {train_count:>7,}  val {val_count:>6,}")
    for warning in scan.warnings():
        print(f"warning: {warning}")
    for skipped in scan.skipped[:20]:
        print(f"skipped: {shown_name(skipped.path)}: {skipped.reason}")
    if len(scan.skipped) > 20:
        print(f"... and {len(scan.skipped) - 20} more skipped files")
    if scan.layout == "flat":
        print(f"split {scan.split_fingerprint} (seed {scan.seed}): runs whose split has this "
              "fingerprint validate on the same images")
    # Headers alone miss truncated and corrupt pixels, copies and leakage.
    print(f"to decode every image and find duplicates, leakage and odd images: "
          f"workbench scan --health {args.folder}")
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    from workbench.core.data.cache_folder import (
        cache_usage,
        clear_cache,
        default_cache_dir,
        usage_summary,
    )
    from workbench.core.units import byte_amount

    folder = Path(args.cache_dir or default_cache_dir())
    if folder.exists() and not folder.is_dir():
        print(f"error: cache-dir: {folder} is a file, not a cache folder", file=sys.stderr)
        return 2
    if args.clear:
        deleted = clear_cache(folder)
        print(f"deleted {deleted.files:,} cached image(s), {byte_amount(deleted.bytes)}, "
              f"from {folder}")
    print(f"image cache: {folder}")
    print(f"  {usage_summary(cache_usage(folder), folder)}")
    return 0
