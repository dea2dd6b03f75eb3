"""Accuracy against a plain torchvision pipeline: the same data, flags and seeds, side by side.

The plain pipeline is what torchvision's ``references/classification/train.py`` does:
``ImageFolder`` with ``transforms.v2`` (RandomResizedCrop + flip for training, Resize +
CenterCrop for validation, ToDtype + Normalize), a ``DataLoader`` and the reference's
``train_one_epoch`` / ``evaluate`` loop with the same model, optimiser, schedule and seed.
Workbench trains through its engine with the same config: the flags of the comparison that
found its crops wrong (ResNet18 from scratch, SGD lr 0.01, momentum 0.9, weight decay 1e-4,
batch 32, RandomResizedCrop 28 + flip, validation Resize 32 + CenterCrop 28) on ten classes
of small grey images, generated handwritten digits (``handwritten_digits``: every image its
own hand, slant, size, place, pen, blur and noise). Five epochs on 3,000 images leave both
near 0.9, below 100% and well above chance; on 1,000 images (about 0.7) a run's accuracy
swung by up to 14 points with the seed or with float rounding alone, which five seeds could
not average out. Rows: best validation accuracy, mean over
the seeds (target >= 1.00x, less the seeds' spread), and the wall time of the whole runs
(target: no slower).
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from workbench.bench.report import BenchRow, ratio_row
from workbench.core.data.generated.handwritten_digits import write_digit_dataset
from workbench.core.models.building import build_model
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train
from workbench.core.training.optimisers import build_scheduler


@dataclass(frozen=True)
class AccuracyWorkload:
    """Dataset size and the flags both pipelines train with."""

    train_per_class: int
    val_per_class: int
    image_size: int
    epochs: int
    seeds: tuple[int, ...]
    batch: int = 32


FULL = AccuracyWorkload(300, 50, 32, epochs=5, seeds=(0, 1, 2, 3, 4))
QUICK = AccuracyWorkload(6, 3, 32, epochs=1, seeds=(0, 1))


def bench_config(data: Path, output: Path, work: AccuracyWorkload, seed: int) -> TrainConfig:
    """The flags both pipelines train with."""
    return TrainConfig(
        data_root=str(data), model="resnet18", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, train_hflip=True,
        epochs=work.epochs, batch_size=work.batch, optimizer="sgd", lr=0.01, momentum=0.9,
        weight_decay=1e-4, scheduler="none", seed=seed, workers=1, amp=False,
        output_dir=str(output / "runs"), cache_dir=str(output / f"cache-{seed}"),
        device="cpu",
    )


def workbench_run(config: TrainConfig) -> tuple[float, float]:
    """(best val accuracy, seconds) of a run through the engine."""
    started = time.perf_counter()
    end = train(config, Callback())
    if end.status != "completed":
        raise RuntimeError(f"workbench run {end.status}: {end.error}")
    return end.best_val_accuracy, time.perf_counter() - started


def plain_run(config: TrainConfig,
              history: list[tuple[float, float]] | None = None) -> tuple[float, float]:
    """(best val accuracy, seconds) of the reference recipe on the same flags.

    ``history``, when given, receives (seconds since the start, val accuracy) at each epoch's
    end. A one-channel model (small_cnn) gets its images converted to grey, as the engine does.
    """
    from torchvision.datasets import ImageFolder
    from torchvision.transforms import v2

    from workbench.core.data.transforms import normalization_for

    started = time.perf_counter()
    torch.manual_seed(config.seed)
    mean, std = normalization_for(config)
    grey = [v2.Grayscale()] if config.in_channels == 1 else []
    finish = [*grey, v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)]
    train_set = ImageFolder(str(Path(config.data_root) / "train"), transform=v2.Compose([
        v2.PILToTensor(),
        v2.RandomResizedCrop(config.crop_size, scale=(config.crop_scale_min,
                                                      config.crop_scale_max),
                             ratio=(config.crop_ratio_min, config.crop_ratio_max),
                             antialias=True),
        v2.RandomHorizontalFlip(0.5 if config.train_hflip else 0.0), *finish]))
    val_set = ImageFolder(str(Path(config.data_root) / "val"), transform=v2.Compose([
        v2.PILToTensor(), v2.Resize(config.resize_size, antialias=True),
        v2.CenterCrop(config.crop_size), *finish]))
    generator = torch.Generator().manual_seed(config.seed)
    train_loader = torch.utils.data.DataLoader(
        train_set, batch_size=config.batch_size, shuffle=True, num_workers=config.workers,
        generator=generator, persistent_workers=config.workers > 0)
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=config.batch_size,
                                             num_workers=config.workers)
    model = build_model(config, len(train_set.classes))
    # The reference's optimiser as it builds it: torch's default implementation.
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum,
                                weight_decay=config.weight_decay)
    scheduler = build_scheduler(config, optimizer)
    criterion = torch.nn.CrossEntropyLoss()
    best = 0.0
    for _ in range(config.epochs):
        model.train()
        for images, targets in train_loader:
            loss = criterion(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if scheduler is not None:
            scheduler.step()
        accuracy = _evaluate(model, val_loader)
        best = max(best, accuracy)
        if history is not None:
            history.append((time.perf_counter() - started, accuracy))
    return best, time.perf_counter() - started


def _evaluate(model: torch.nn.Module, loader: torch.utils.data.DataLoader) -> float:
    model.eval()
    correct = total = 0
    with torch.inference_mode():
        for images, targets in loader:
            correct += int((model(images).argmax(1) == targets).sum())
            total += len(targets)
    return correct / max(total, 1)


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """Both pipelines on each seed, alternating which goes first; the two rows."""
    work = QUICK if quick else FULL
    with tempfile.TemporaryDirectory(prefix="workbench-accuracy-") as tmp:
        root = Path(tmp)
        data = write_digit_dataset(root / "data", work.train_per_class, work.val_per_class,
                                   seed=0, size=work.image_size)
        ours: list[tuple[float, float]] = []
        plain: list[tuple[float, float]] = []
        for index, seed in enumerate(work.seeds):
            config = bench_config(data, root, work, seed)
            if index % 2 == 0:
                plain.append(plain_run(config))
                ours.append(workbench_run(config))
            else:
                ours.append(workbench_run(config))
                plain.append(plain_run(config))
    return accuracy_rows(ours, plain, work)


def accuracy_rows(ours: list[tuple[float, float]], plain: list[tuple[float, float]],
                  work: AccuracyWorkload) -> list[BenchRow]:
    """The accuracy row (target 1.00x less the seeds' spread) and the wall-time row."""
    our_acc = [accuracy for accuracy, _ in ours]
    plain_acc = [accuracy for accuracy, _ in plain]
    differences = [a - b for a, b in zip(our_acc, plain_acc, strict=True)]
    # The spread: the standard error of the mean paired difference (0 with one seed).
    spread = statistics.stdev(differences) / math.sqrt(len(differences)) \
        if len(differences) > 1 else 0.0
    plain_mean = statistics.mean(plain_acc)
    flags = (f"resnet18 from scratch, {10 * work.train_per_class} handwritten digits "
             f"{work.image_size} px, RandomResizedCrop 28, {work.epochs} epochs, "
             f"{len(work.seeds)} seeds")
    our_time = sum(seconds for _, seconds in ours)
    plain_time = sum(seconds for _, seconds in plain)
    return [
        ratio_row("accuracy", f"best val accuracy vs plain torchvision ({flags})",
                  statistics.mean(our_acc), plain_mean, "acc",
                  target=round(1.0 - spread / max(plain_mean, 1e-9), 3),
                  workbench_per_seed=our_acc, plain_per_seed=plain_acc,
                  spread_of_difference=spread),
        ratio_row("accuracy", "wall time of those runs vs plain torchvision", our_time,
                  plain_time, "s", target=1.0, higher_is_better=False),
    ]
