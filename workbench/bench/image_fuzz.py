"""Mutation loop over image files: bit flips and truncations of valid JPEG, PNG and WebP files.

Every mutant goes through the three doors a user's file can come in by: the dataset scan (with
header verification), the augmentation preview and the training dataset's ``__getitem__``.
Each door must either accept the file or report it by path and reason (a ``SkippedFile``, an
``ImageDecodeError`` or a failure-log line); any other exception is a crash.

    python -m workbench.bench.image_fuzz --count 500
"""

from __future__ import annotations

import argparse
import io
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from workbench.core.data.data_pipeline import ImageSampleDataset
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.decode_failures import read_failure_log
from workbench.core.data.five_crop_preview import five_crop_preview
from workbench.core.data.image_cache import ImageDecodeError
from workbench.core.data.multicrop import IGNORE_LABEL
from workbench.core.data.transforms import build_train_transform
from workbench.core.runs.config import TrainConfig

SEED_FORMATS = (("JPEG", ".jpg"), ("PNG", ".png"), ("WEBP", ".webp"))
FUZZ_CONFIG = TrainConfig(resize_size=32, crop_size=28, crop_mode="five_crop")


@dataclass
class FuzzReport:
    """What the mutation loop saw; ``crashes`` and ``unreported`` must stay empty."""

    tried: int = 0
    accepted: int = 0
    rejected: int = 0
    crashes: list[str] = field(default_factory=list)
    unreported: list[str] = field(default_factory=list)
    slowest_seconds: float = 0.0
    slowest_case: str = ""

    def summary(self) -> str:
        """A few lines for a terminal or a README."""
        return "\n".join([
            f"cases tried:                {self.tried}",
            f"accepted (decoded fine):    {self.accepted}",
            f"rejected and reported:      {self.rejected}",
            f"crashes:                    {len(self.crashes)}",
            f"rejected but not reported:  {len(self.unreported)}",
            f"slowest case:               {self.slowest_seconds:.3f} s ({self.slowest_case})",
            *(f"  crash: {text}" for text in self.crashes[:10]),
            *(f"  unreported: {text}" for text in self.unreported[:10]),
        ])


def fuzz_images(seed: int, count: int, folder: str | Path) -> FuzzReport:
    """Mutate valid images ``count`` times and send each mutant through scan, preview and dataset.

    Args:
        seed: seed of the seed images and of every mutation; the same seed repeats the run.
        count: number of mutants.
        folder: an empty scratch folder (a dataset with classes ``a`` and ``b`` is made in it).
    """
    rng = random.Random(seed)
    root = Path(folder)
    (root / "a").mkdir(parents=True, exist_ok=True)
    (root / "b").mkdir(parents=True, exist_ok=True)
    originals = [(seed_image_bytes(name, rng), extension) for name, extension in SEED_FORMATS]
    # Every class keeps one good image, so the scan judges the mutant and not an empty class.
    for class_name in ("a", "b"):
        (root / class_name / "good.png").write_bytes(originals[1][0])
    report = FuzzReport()
    for case in range(count):
        data, extension = originals[case % len(originals)]
        mutation, mutant = mutate(data, rng)
        path = root / "a" / f"mutant{extension}"
        path.write_bytes(mutant)
        label = f"case {case} ({extension[1:]}, {mutation})"
        started = time.perf_counter()
        outcome = _run_case(root, str(path), label)
        elapsed = time.perf_counter() - started
        report.tried += 1
        if elapsed > report.slowest_seconds:
            report.slowest_seconds, report.slowest_case = elapsed, label
        if outcome.crash:
            report.crashes.append(outcome.crash)
        elif outcome.unreported:
            report.unreported.append(outcome.unreported)
        elif outcome.accepted:
            report.accepted += 1
        else:
            report.rejected += 1
    return report


def seed_image_bytes(format_name: str, rng: random.Random) -> bytes:
    """A valid 48x40 image with structure and noise (so every codec has real data to chew)."""
    y, x = np.mgrid[0:40, 0:48]
    noise = np.random.default_rng(rng.randrange(2**32)).integers(0, 64, (40, 48, 3))
    pixels = np.stack([x * 5, y * 6, (x + y) * 3], axis=-1) + noise
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    buffer = io.BytesIO()
    image.save(buffer, format_name, quality=90)
    return buffer.getvalue()


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One random mutation of ``data``: a name for it and the mutated bytes."""
    kind = rng.choice(("flip", "header_flip", "truncate", "truncate_flip", "zero_run"))
    buffer = bytearray(data)
    if kind in ("truncate", "truncate_flip"):
        buffer = buffer[: rng.randrange(1, len(buffer))]
    if kind in ("flip", "truncate_flip"):
        for _ in range(rng.randint(1, 16)):
            position = rng.randrange(len(buffer))
            buffer[position] ^= 1 << rng.randrange(8)
    if kind == "header_flip":
        # The header holds sizes, modes and chunk lengths: the interesting bits for a decoder.
        for _ in range(rng.randint(1, 4)):
            position = rng.randrange(min(len(buffer), 64))
            buffer[position] ^= 1 << rng.randrange(8)
    if kind == "zero_run":
        start = rng.randrange(len(buffer))
        length = rng.randint(1, 256)
        buffer[start:start + length] = bytes(len(buffer[start:start + length]))
    return kind, bytes(buffer)


@dataclass
class _Outcome:
    accepted: bool = False
    crash: str = ""
    unreported: str = ""


def _run_case(root: Path, path: str, label: str) -> _Outcome:
    try:
        scan = scan_dataset(root, val_fraction=0.5, verify=True)
    except Exception as exc:  # noqa: BLE001 - the loop exists to catch what escapes
        return _Outcome(crash=f"{label}: scan raised {type(exc).__name__}: {exc}")
    skipped = [s for s in scan.skipped if s.path == path]
    if skipped and not skipped[0].reason:
        return _Outcome(unreported=f"{label}: scan skipped it without a reason")
    # The preview and the dataset see the file even when the scan skipped it: a user can
    # open any file for preview, and a file can change between scan and training.
    preview_ok, problem = _door(lambda: five_crop_preview(path, FUZZ_CONFIG), path, label)
    if problem:
        return problem
    dataset_ok, problem = _dataset_door(root, path, label)
    if problem:
        return problem
    if preview_ok != dataset_ok:
        return _Outcome(crash=f"{label}: preview {'accepted' if preview_ok else 'rejected'} it "
                              f"but training {'accepted' if dataset_ok else 'rejected'} it")
    return _Outcome(accepted=preview_ok and not skipped)


def _door(call: Callable[[], object], path: str, label: str) -> tuple[bool, _Outcome | None]:
    """(accepted, None), or (False, None) for a reported rejection, or (False, problem)."""
    try:
        call()
    except ImageDecodeError as exc:
        if exc.path != path or not exc.reason:
            return False, _Outcome(unreported=f"{label}: error names {exc.path!r}: {exc.reason!r}")
        return False, None
    except Exception as exc:  # noqa: BLE001 - the loop exists to catch what escapes
        return False, _Outcome(crash=f"{label}: {type(exc).__name__}: {exc}")
    return True, None


def _dataset_door(root: Path, path: str, label: str) -> tuple[bool, _Outcome | None]:
    failure_log = root / "failures.tsv"
    failure_log.unlink(missing_ok=True)
    dataset = ImageSampleDataset([(path, 0)], build_train_transform(FUZZ_CONFIG),
                                 FUZZ_CONFIG.resize_size, False, None, str(failure_log))
    try:
        image, sample_label = dataset[0]
    except Exception as exc:  # noqa: BLE001 - the loop exists to catch what escapes
        return False, _Outcome(crash=f"{label}: dataset raised {type(exc).__name__}: {exc}")
    if sample_label != IGNORE_LABEL:
        return True, None
    logged = [p for p, reason in read_failure_log(str(failure_log)) if p == path and reason]
    if not logged:
        return False, _Outcome(unreported=f"{label}: dataset left it out without a log line")
    return False, None


def main(argv: list[str] | None = None) -> int:
    """Run the loop and print the report; the exit status is 1 when anything crashed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500, help="number of mutants")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="workbench-fuzz-") as folder:
        started = time.perf_counter()
        report = fuzz_images(args.seed, args.count, folder)
        print(report.summary())
        print(f"total time:                 {time.perf_counter() - started:.1f} s")
    return 1 if report.crashes or report.unreported else 0


if __name__ == "__main__":
    raise SystemExit(main())
