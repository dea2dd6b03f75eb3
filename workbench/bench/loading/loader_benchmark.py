"""Naive per-crop loader vs the workbench loader on large JPEGs, side by side in one run.

The naive pipeline is the one users write first: Pillow full decode, ``Resize(512)``,
``FiveCrop(224)``, then ``ToTensor`` and ``Normalize`` crop by crop in Python, batch 4. The
workbench pipeline decodes JPEGs at a reduced scale, caches the resized pixels, crops uint8 and
normalises after batching (here on the CPU; on a GPU that last step runs on the device). Both
go through DataLoaders with identical settings. Each round runs both pipelines from a cold
image cache, in alternating order so that drift in machine load hits both alike, and each row
reports the round with the median ratio, so one stall from elsewhere on a shared machine does
not decide it. Targets: first epoch >= 3x, cached epochs >= 10x.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from PIL import Image, ImageChops
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as v1

from workbench.bench.report import BenchRow, ratio_row
from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.data_pipeline import ImageSampleDataset
from workbench.core.data.generated.synthetic_images import SHAPES, draw_shape_image
from workbench.core.data.transforms import IMAGENET_MEAN, IMAGENET_STD, MultiCrop
from workbench.core.runs.config import default_workers

RESIZE = 512
CROP = 224
BATCH = 4
TARGET_FIRST = 3.0
TARGET_CACHED = 10.0


@dataclass(frozen=True)
class LoaderSizes:
    """How much the benchmark generates and times."""

    images: int
    size: tuple[int, int]
    cached_epochs: int
    rounds: int
    workers: tuple[int, ...]


FULL = LoaderSizes(images=32, size=(4000, 3000), cached_epochs=1, rounds=5,
                   workers=tuple(sorted({0, default_workers()})))
QUICK = LoaderSizes(images=4, size=(1024, 768), cached_epochs=1, rounds=1, workers=(0,))


@dataclass
class EpochTimes:
    """Seconds of the first epoch and of each later epoch of one pipeline."""

    first: float
    cached: list[float]


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
        "batch_size": BATCH,
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


def _naive_prepare(images: torch.Tensor, labels: torch.Tensor) -> object:
    return images.flatten(0, 1), labels


def run_round(
    samples: list[tuple[str, int]], workers: int, cache_dir: str, cached_epochs: int,
    naive_first: bool,
) -> tuple[EpochTimes, EpochTimes]:
    """Time both pipelines once, the workbench one from an empty image cache."""
    naive_set = NaiveFiveCropDataset(samples)
    transform = MultiCrop(CROP, "five_crop")
    workbench_set = ImageSampleDataset(samples, transform, RESIZE, False, cache_dir)
    # NCHW like the naive batch: the comparison is about the loader, not the layout.
    preparer = BatchPreparer(IMAGENET_MEAN, IMAGENET_STD, "cpu", channels_last=False)
    epochs = 1 + cached_epochs

    def naive() -> EpochTimes:
        return time_epochs(DataLoader(naive_set, **loader_options(workers)), _naive_prepare,
                           epochs)

    def workbench() -> EpochTimes:
        return time_epochs(DataLoader(workbench_set, **loader_options(workers)), preparer,
                           epochs)

    if naive_first:
        naive_times = naive()
        return naive_times, workbench()
    workbench_times = workbench()
    return naive(), workbench_times


def input_difference(samples: list[tuple[str, int]], cache_dir: str) -> float:
    """Mean absolute difference of the two pipelines' model inputs (normalised units)."""
    naive_input = NaiveFiveCropDataset(samples)[0][0]
    transform = MultiCrop(CROP, "five_crop")
    workbench_set = ImageSampleDataset(samples, transform, RESIZE, False, cache_dir)
    preparer = BatchPreparer(IMAGENET_MEAN, IMAGENET_STD, "cpu", channels_last=False)
    workbench_input, _ = preparer(workbench_set[0][0].unsqueeze(0), torch.tensor([0]))
    return float((naive_input - workbench_input).abs().mean())


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """Rows: first-epoch and cached-epoch images/s of both pipelines for each worker count.

    ``device`` is unused: both pipelines end in CPU tensors, the part every device shares.
    """
    sizes = QUICK if quick else FULL
    rows = []
    with tempfile.TemporaryDirectory(prefix="workbench-loader-bench-") as tmp:
        folder = Path(tmp)
        paths = write_photos(folder, sizes.images, sizes.size)
        samples = [(path, index % 2) for index, path in enumerate(paths)]
        setting = (f"{sizes.images} JPEGs {sizes.size[0]}x{sizes.size[1]}, Resize({RESIZE}) "
                   f"+ FiveCrop({CROP}), batch {BATCH}")
        # One untimed pass over one image warms both code paths (first-call costs in torch
        # and Pillow), so neither side pays them inside a timed epoch.
        run_round(samples[:1], 0, str(folder / "cache-warm-up"), 0, naive_first=True)
        for workers in sizes.workers:
            # The main process gets the cores the loader processes leave free: its thread team
            # waiting on a core a loader process holds stalls each small tensor operation. The
            # naive side does no tensor work in the main process, so this only removes an
            # oversubscription of the workbench side.
            torch.set_num_threads(max(1, (os.cpu_count() or 1) - workers))
            naive_runs, workbench_runs = [], []
            for index in range(sizes.rounds):
                cache_dir = str(folder / f"cache-{workers}-{index}")  # cold every round
                naive, workbench = run_round(samples, workers, cache_dir, sizes.cached_epochs,
                                             naive_first=index % 2 == 0)
                naive_runs.append(naive)
                workbench_runs.append(workbench)
            difference = input_difference(samples, str(folder / f"cache-{workers}-0"))
            rows += _rows(sizes, workers, setting, naive_runs, workbench_runs, difference)
    return rows


def _rows(sizes: LoaderSizes, workers: int, setting: str, naive: list[EpochTimes],
          workbench: list[EpochTimes], difference: float) -> list[BenchRow]:
    images = sizes.images
    details = {"setting": setting, "workers": workers, "rounds": sizes.rounds,
               "cached_epochs": sizes.cached_epochs, "torch_threads": torch.get_num_threads(),
               "statistic": "the round with the median ratio",
               "mean_abs_input_difference": round(difference, 5),
               "naive_first_s": [t.first for t in naive],
               "workbench_first_s": [t.first for t in workbench],
               "naive_cached_s": [t.cached for t in naive],
               "workbench_cached_s": [t.cached for t in workbench]}
    first_naive, first_workbench = median_round([t.first for t in naive],
                                                [t.first for t in workbench])
    cached_naive, cached_workbench = median_round([sum(t.cached) for t in naive],
                                                  [sum(t.cached) for t in workbench])
    cached_images = images * sizes.cached_epochs
    first = ratio_row("loader", f"loader first epoch, workers {workers}",
                      images / first_workbench, images / first_naive, "img/s", TARGET_FIRST,
                      **details)
    cached = ratio_row("loader", f"loader cached epochs, workers {workers}",
                       cached_images / cached_workbench, cached_images / cached_naive, "img/s",
                       TARGET_CACHED, **details)
    return [first, cached]


def median_round(naive_seconds: list[float], workbench_seconds: list[float]) -> tuple[float, float]:
    """(naive, workbench) seconds of the round whose speed-up is the median (the lower middle
    one for an even count)."""
    rounds = sorted(zip(naive_seconds, workbench_seconds, strict=True),
                    key=lambda pair: pair[0] / pair[1])
    return rounds[(len(rounds) - 1) // 2]
