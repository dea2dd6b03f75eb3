"""Naive per-crop loader vs the workbench loader on large JPEGs, side by side in one run.

    python -m workbench.bench.loader_benchmark [--images 24] [--size 4000x3000] [--workers 0,4]

The naive pipeline is the one users write first: Pillow full decode, ``Resize(512)``,
``FiveCrop(224)``, then ``ToTensor`` and ``Normalize`` crop by crop in Python. The workbench
pipeline decodes JPEGs at a reduced scale, caches the resized pixels, crops uint8 and
normalises after batching (here on the CPU; on a GPU that last step runs on the device).
Both go through DataLoaders with identical settings. Targets: first epoch >= 3x, cached
epochs >= 10x.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from PIL import Image, ImageChops
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as v1

from workbench.core.batch_preparation import BatchPreparer
from workbench.core.data_pipeline import ImageSampleDataset
from workbench.core.synthetic_images import SHAPES, draw_shape_image
from workbench.core.transforms import IMAGENET_MEAN, IMAGENET_STD, StackCrops
from workbench.core.transforms import v2 as tv2

RESIZE = 512
CROP = 224
TARGET_FIRST = 3.0
TARGET_CACHED = 10.0


@dataclass
class EpochTimes:
    """Seconds of the first epoch and of each later epoch of one pipeline."""

    first: float
    cached: list[float]

    @property
    def cached_mean(self) -> float:
        return sum(self.cached) / len(self.cached)


class NaiveFiveCropDataset(Dataset):
    """The per-crop pipeline: full decode, PIL resize, then tensors made crop by crop."""

    def __init__(self, samples: list[tuple[str, int]]) -> None:
        self.samples = samples
        self.resize = v1.Resize(RESIZE)
        self.five_crop = v1.FiveCrop(CROP)
        self.to_tensor = v1.ToTensor()
        self.normalize = v1.Normalize(IMAGENET_MEAN, IMAGENET_STD)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, label = self.samples[index]
        image = Image.open(path).convert("RGB")
        crops = self.five_crop(self.resize(image))
        return torch.stack([self.normalize(self.to_tensor(crop)) for crop in crops]), label


def write_photos(folder: Path, count: int, size: tuple[int, int], seed: int = 0) -> list[str]:
    """``count`` noisy shape photos of ``size`` as quality-90 JPEGs; returns their paths."""
    rng = random.Random(seed)
    noise = Image.effect_noise(size, 24).convert("RGB")
    paths = []
    for index in range(count):
        small = draw_shape_image(SHAPES[index % len(SHAPES)], (size[0] // 8, size[1] // 8), rng)
        base = small.resize(size, Image.Resampling.BILINEAR)
        shifted = ImageChops.offset(noise, rng.randrange(size[0]), rng.randrange(size[1]))
        path = folder / f"photo_{index:04d}.jpg"
        Image.blend(base, shifted, 0.2).save(path, quality=90)
        paths.append(str(path))
    return paths


def loader_options(workers: int) -> dict[str, object]:
    """The DataLoader settings both pipelines share."""
    return {
        "batch_size": 4,
        "shuffle": False,
        "num_workers": workers,
        "persistent_workers": workers > 0,
        "prefetch_factor": 4 if workers > 0 else None,
    }


def time_epochs(
    loader: Iterable, prepare: Callable[[torch.Tensor, torch.Tensor], object], epochs: int
) -> EpochTimes:
    """Wall time of each full pass, including preparing every batch for the model."""
    times = []
    for _ in range(epochs):
        started = time.perf_counter()
        for images, labels in loader:
            prepare(images, labels)
        times.append(time.perf_counter() - started)
    return EpochTimes(times[0], times[1:])


def run_pair(
    samples: list[tuple[str, int]], workers: int, cache_dir: str, cached_epochs: int
) -> tuple[EpochTimes, EpochTimes, float]:
    """Time both pipelines; also return how far apart their model inputs are (normalised)."""
    naive_set = NaiveFiveCropDataset(samples)
    transform = tv2.Compose([tv2.FiveCrop(CROP), StackCrops()])
    workbench_set = ImageSampleDataset(samples, transform, RESIZE, False, cache_dir)
    # NCHW like the naive batch: the comparison is about the loader, not the layout.
    preparer = BatchPreparer(IMAGENET_MEAN, IMAGENET_STD, "cpu", channels_last=False)

    def naive_prepare(images: torch.Tensor, labels: torch.Tensor) -> object:
        return images.flatten(0, 1), labels

    naive = time_epochs(DataLoader(naive_set, **loader_options(workers)), naive_prepare,
                        1 + cached_epochs)
    workbench = time_epochs(DataLoader(workbench_set, **loader_options(workers)), preparer,
                            1 + cached_epochs)
    naive_input = naive_set[0][0]
    workbench_input, _ = preparer(workbench_set[0][0].unsqueeze(0), torch.tensor([0]))
    difference = float((naive_input - workbench_input).abs().mean())
    return naive, workbench, difference


def print_table(workers: int, images: int, naive: EpochTimes, workbench: EpochTimes) -> None:
    first_ratio = naive.first / workbench.first
    cached_ratio = naive.cached_mean / workbench.cached_mean
    print(f"\nworkers={workers}")
    print(f"  {'pipeline':<10} {'epoch 1 s':>10} {'img/s':>8} {'cached s':>10} {'img/s':>8}")
    for name, times in (("naive", naive), ("workbench", workbench)):
        print(f"  {name:<10} {times.first:>10.3f} {images / times.first:>8.1f} "
              f"{times.cached_mean:>10.3f} {images / times.cached_mean:>8.1f}")
    print(f"  {'ratio':<10} {first_ratio:>9.1f}x {'':>8} {cached_ratio:>9.1f}x   "
          f"(targets >= {TARGET_FIRST:.0f}x / >= {TARGET_CACHED:.0f}x: "
          f"{_verdict(first_ratio, TARGET_FIRST)} / {_verdict(cached_ratio, TARGET_CACHED)})")


def _verdict(ratio: float, target: float) -> str:
    return "met" if ratio >= target else "MISSED"


def parse_size(text: str) -> tuple[int, int]:
    """'4000x3000' -> (4000, 3000)."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"size '{text}' is not WIDTHxHEIGHT") from exc
    if min(width, height) < RESIZE:
        raise argparse.ArgumentTypeError(f"size '{text}': both sides must be >= {RESIZE}")
    return width, height


def parse_workers(text: str) -> list[int]:
    """'0,4' -> [0, 4]."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"workers '{text}' is not a list like 0,4") from exc
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"workers '{text}' needs counts >= 0")
    return values


def main(argv: list[str] | None = None) -> int:
    """Generate the photos, time both pipelines per worker count, print the tables."""
    cpus = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=24, help="JPEGs to generate (default 24)")
    parser.add_argument("--size", type=parse_size, default=(4000, 3000),
                        help="WIDTHxHEIGHT of each JPEG (default 4000x3000)")
    parser.add_argument("--workers", type=parse_workers, default=sorted({0, cpus}),
                        help=f"comma-separated loader process counts (default 0,{cpus})")
    parser.add_argument("--cached-epochs", type=int, default=2,
                        help="epochs timed after the first (default 2)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads in this process (loader workers always use 1); "
                             "default 0 keeps torch's choice")
    args = parser.parse_args(argv)
    if args.images < 1 or args.cached_epochs < 1 or args.threads < 0:
        parser.error("--images and --cached-epochs must be at least 1, --threads at least 0")
    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="workbench-loader-bench-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        paths = write_photos(folder, args.images, args.size)
        print(f"{args.images} JPEGs of {args.size[0]}x{args.size[1]} (quality 90) written in "
              f"{time.perf_counter() - started:.1f} s; Resize({RESIZE}) + FiveCrop({CROP}), "
              f"batch 4, {cpus} CPUs, {torch.get_num_threads()} torch thread(s), "
              f"torch {torch.__version__}")
        samples = [(path, index % 2) for index, path in enumerate(paths)]
        for workers in args.workers:
            cache_dir = str(folder / f"cache-{workers}")  # cold for each worker count
            naive, workbench, difference = run_pair(samples, workers, cache_dir,
                                                    args.cached_epochs)
            print_table(workers, args.images, naive, workbench)
            print(f"  mean |difference| of the model inputs: {difference:.4f} (normalised units)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
