"""Same flags, same accuracy: ``workbench train`` against torchvision's reference recipe.

The reference side is a plain pipeline written from torchvision's
``references/classification`` (``train.py``, ``presets.py``): ``ImageFolder`` (Pillow,
converted to RGB), the preset transforms as ``presets.py`` builds them with ``transforms.v2``
and the Pillow backend (``RandomResizedCrop`` + ``RandomHorizontalFlip`` for training,
``Resize`` + ``CenterCrop`` for validation, then ``PILToTensor``, ``ToDtype``, ``Normalize``),
a ``RandomSampler`` loader, ``get_model(weights=None)``, SGD, ``StepLR`` stepped after each
epoch, and its loop: ``train_one_epoch`` (forward, loss, ``zero_grad``, backward, step),
``evaluate`` (top-1 over the validation set), then the checkpoint the script saves after every
epoch (model, optimiser, scheduler, epoch and flags, with ``torch.save`` as
``model_{epoch}.pth`` and ``checkpoint.pth`` in its ``--output-dir``, which defaults to the
working folder). Nothing in it comes from Workbench.

The Workbench side is ``workbench train`` with the same flags: the config the CLI builds from
them (the same calls as its ``config_from_args``, so every default the CLI applies around
them applies here), trained by the engine.

Both run on the real image sets of ``real_image_sets`` (scans and photographs that pip
packages ship), seed by seed, alternating which goes first. The flags are the comparison of
issue 34: resnet18 from random weights, SGD lr 0.01, momentum 0.9, weight decay 1e-4, step
schedule (7 epochs x 0.1), batch 32, RandomResizedCrop 28 + flip, validation Resize 32 +
CenterCrop 28, one loader worker. Each row: mean best validation accuracy of each side over
the seeds, their spread (standard deviation) and the wall time of all the runs.

Run: ``nice -n 10 python -m workbench.bench.reference.parity_benchmark --threads 1``
(``--help`` for the sets, seeds, epochs and subset sizes); ``workbench bench --only parity``
runs it in the suite.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from workbench.bench.real_image_sets import write_real_set
from workbench.bench.report import BenchRow, ratio_row

# The reference recipe's normalisation (presets.py defaults).
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Flags:
    """The flags both pipelines train with (the reference script's names)."""

    model: str = "resnet18"
    epochs: int = 5
    batch_size: int = 32
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 1e-4
    lr_step_size: int = 7
    lr_gamma: float = 0.1
    train_crop_size: int = 28
    val_resize_size: int = 32
    val_crop_size: int = 28
    workers: int = 1

    def workbench_fields(self, data: Path, output: Path, seed: int) -> dict[str, Any]:
        """The same flags as ``workbench train`` settings (each one a ``--`` flag there)."""
        return {"data_root": str(data), "model": self.model, "weights": "none",
                "finetune": "full", "epochs": self.epochs, "batch_size": self.batch_size,
                "optimizer": "sgd", "lr": self.lr, "momentum": self.momentum,
                "weight_decay": self.weight_decay, "scheduler": "step",
                "lr_step_size": self.lr_step_size, "lr_gamma": self.lr_gamma,
                "crop_size": self.train_crop_size, "resize_size": self.val_resize_size,
                "train_hflip": True, "workers": self.workers, "seed": seed, "device": "cpu",
                "output_dir": str(output / "runs"), "cache_dir": str(output / "cache")}


@dataclass(frozen=True)
class ImageSet:
    """A real set and how many images of each class both pipelines see."""

    name: str
    train_per_class: int | None
    val_per_class: int | None


# digits: the 8x8 scans; digits64: the same scans as 64x64 RGB; faces: 25x25 grey photos;
# photos: 32x32 patches of eight photographs. Subsets keep a 5-seed table within an hour
# on two shared cores.
SETS = {
    "digits": ImageSet("digits", 60, None),
    "digits64": ImageSet("digits64", 60, None),
    "faces": ImageSet("faces", None, None),
    "photos": ImageSet("photos", 60, 30),
}
QUICK_SETS = {"digits": ImageSet("digits", 3, 2)}


@dataclass
class RunResult:
    """One run: best val accuracy, seconds, and each epoch's accuracy and lr."""

    best: float
    seconds: float
    accuracies: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)


# ---------------------------------------------------------------------- the reference
def reference_transforms(flags: Flags) -> tuple[Any, Any]:
    """(train, eval) transforms as ``presets.py`` builds them (v2, Pillow backend)."""
    from torchvision.transforms import v2
    from torchvision.transforms.v2 import InterpolationMode

    bilinear = InterpolationMode.BILINEAR
    finish = [v2.PILToTensor(), v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD),
              v2.ToPureTensor()]
    train = v2.Compose([v2.RandomResizedCrop(flags.train_crop_size, interpolation=bilinear,
                                             antialias=True),
                        v2.RandomHorizontalFlip(0.5), *finish])
    evaluation = v2.Compose([v2.Resize(flags.val_resize_size, interpolation=bilinear,
                                       antialias=True),
                             v2.CenterCrop(flags.val_crop_size), *finish])
    return train, evaluation


def reference_run(data: Path, flags: Flags, seed: int, output: Path | None = None
                  ) -> RunResult:
    """The reference script's recipe on ``data/train`` and ``data/val``; with ``output`` (its
    ``--output-dir``) it saves the script's two checkpoint files there after every epoch."""
    import torchvision
    from torchvision.datasets import ImageFolder

    started = time.perf_counter()
    torch.manual_seed(seed)
    train_transform, eval_transform = reference_transforms(flags)
    dataset = ImageFolder(str(data / "train"), train_transform)
    dataset_test = ImageFolder(str(data / "val"), eval_transform)
    pin = torch.cuda.is_available()
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=flags.batch_size, sampler=torch.utils.data.RandomSampler(dataset),
        num_workers=flags.workers, pin_memory=pin)
    loader_test = torch.utils.data.DataLoader(
        dataset_test, batch_size=flags.batch_size,
        sampler=torch.utils.data.SequentialSampler(dataset_test), num_workers=flags.workers,
        pin_memory=pin)
    model = torchvision.models.get_model(flags.model, weights=None,
                                         num_classes=len(dataset.classes))
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=flags.lr, momentum=flags.momentum,
                                weight_decay=flags.weight_decay)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=flags.lr_step_size,
                                                gamma=flags.lr_gamma)
    result = RunResult(0.0, 0.0)
    for epoch in range(flags.epochs):
        result.lrs.append(optimizer.param_groups[0]["lr"])
        train_one_epoch(model, criterion, optimizer, loader)
        scheduler.step()
        result.accuracies.append(evaluate(model, loader_test))
        if output is not None:
            save_checkpoints(output, epoch, model, optimizer, scheduler, flags)
    result.best = max(result.accuracies)
    result.seconds = time.perf_counter() - started
    return result


def train_one_epoch(model: torch.nn.Module, criterion: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, loader: Any) -> list[float]:
    """The reference loop's epoch; each step's loss."""
    model.train()
    losses = []
    for image, target in loader:
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def save_checkpoints(output: Path, epoch: int, model: torch.nn.Module,
                     optimizer: torch.optim.Optimizer, scheduler: Any, flags: Flags) -> None:
    """What the script writes after each epoch: one checkpoint, as ``model_{epoch}.pth`` and
    again as ``checkpoint.pth``."""
    output.mkdir(parents=True, exist_ok=True)
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "lr_scheduler": scheduler.state_dict(), "epoch": epoch,
                  "args": dataclasses.asdict(flags)}
    torch.save(checkpoint, output / f"model_{epoch}.pth")
    torch.save(checkpoint, output / "checkpoint.pth")


def evaluate(model: torch.nn.Module, loader: Any) -> float:
    """Top-1 accuracy over every validation image."""
    model.eval()
    correct = total = 0
    with torch.inference_mode():
        for image, target in loader:
            correct += int((model(image).argmax(1) == target).sum())
            total += int(target.numel())
    return correct / max(total, 1)


# ---------------------------------------------------------------------- workbench
def workbench_config(data: Path, output: Path, flags: Flags, seed: int) -> Any:
    """The config ``workbench train`` builds from the same flags: the flags over the defaults,
    then the model's defaults and the weights' recipe in the fields no flag set, as the CLI's
    ``config_from_args`` applies them."""
    from workbench.core.runs.config import TrainConfig
    from workbench.core.runs.model_defaults import apply_model_defaults, settings_for_weights

    given = flags.workbench_fields(data, output, seed)
    config = apply_model_defaults(TrainConfig().replace(**given), set(given))
    return settings_for_weights(config, set(given))[0]


def workbench_run(data: Path, output: Path, flags: Flags, seed: int) -> RunResult:
    """``workbench train`` with the same flags, through the engine."""
    from workbench.core.runs.events import Callback
    from workbench.core.training.engine import train

    result = RunResult(0.0, 0.0)

    class Epochs(Callback):
        def on_epoch_end(self, event: Any) -> None:
            result.accuracies.append(event.val_accuracy)
            result.lrs.append(event.lr)

    started = time.perf_counter()
    end = train(workbench_config(data, output, flags, seed), Epochs())
    if end.status != "completed":
        raise RuntimeError(f"workbench run {end.status}: {end.error}")
    result.best = end.best_val_accuracy
    result.seconds = time.perf_counter() - started
    return result


# ---------------------------------------------------------------------- the comparison
@dataclass
class SetResult:
    name: str
    train_images: int
    val_images: int
    reference: list[RunResult]
    workbench: list[RunResult]


def compare_set(image_set: ImageSet, flags: Flags, seeds: list[int], root: Path,
                say: Any = None) -> SetResult:
    """Both pipelines on ``image_set``, seed by seed, alternating which runs first."""
    data = write_real_set(image_set.name, root / image_set.name, image_set.train_per_class,
                          image_set.val_per_class, seed=0)
    reference: list[RunResult] = []
    ours: list[RunResult] = []
    for index, seed in enumerate(seeds):
        output = root / f"{image_set.name}-{seed}"
        order = ("reference", "workbench") if index % 2 == 0 else ("workbench", "reference")
        for side in order:
            if side == "reference":
                reference.append(reference_run(data, flags, seed, output / "reference"))
            else:
                ours.append(workbench_run(data, output, flags, seed))
        # Each side's files once both are timed (a run folder holds 0.1-0.5 GB).
        shutil.rmtree(output, ignore_errors=True)
        if say:
            say(f"{image_set.name} seed {seed}: reference {reference[-1].best:.3f} "
                f"({reference[-1].seconds:.0f} s, per epoch "
                f"{_accuracies(reference[-1])}), workbench {ours[-1].best:.3f} "
                f"({ours[-1].seconds:.0f} s, per epoch {_accuracies(ours[-1])})")
    counts = [len(list((data / split).rglob("*.png"))) for split in ("train", "val")]
    return SetResult(image_set.name, counts[0], counts[1], reference, ours)


def _accuracies(result: RunResult) -> str:
    return " ".join(f"{accuracy:.3f}" for accuracy in result.accuracies)


def spread(values: list[float]) -> float:
    """The standard deviation (0 for a single value)."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def summary(result: SetResult) -> dict[str, float]:
    """Means, standard deviations, the paired difference's standard error, the time ratio."""
    ref = [run.best for run in result.reference]
    ours = [run.best for run in result.workbench]
    differences = [a - b for a, b in zip(ours, ref, strict=True)]
    return {
        "reference_mean": statistics.mean(ref), "reference_sd": spread(ref),
        "workbench_mean": statistics.mean(ours), "workbench_sd": spread(ours),
        "difference": statistics.mean(differences),
        "difference_se": spread(differences) / math.sqrt(len(differences)),
        "reference_seconds": sum(run.seconds for run in result.reference),
        "workbench_seconds": sum(run.seconds for run in result.workbench),
    }


def format_results(results: list[SetResult]) -> str:
    """One line a set: both means +- their standard deviation, the paired difference and
    the wall-time ratio (reference time / Workbench time: above 1, Workbench is faster)."""
    lines = ["| set (train / val images) | reference best val acc | workbench best val acc "
             "| difference | wall time ref / wb |",
             "| --- | --- | --- | --- | --- |"]
    for result in results:
        s = summary(result)
        lines.append(
            f"| {result.name} ({result.train_images} / {result.val_images}) "
            f"| {s['reference_mean']:.3f} +- {s['reference_sd']:.3f} "
            f"| {s['workbench_mean']:.3f} +- {s['workbench_sd']:.3f} "
            f"| {s['difference']:+.3f} +- {s['difference_se']:.3f} "
            f"| {s['reference_seconds']:.0f} s / {s['workbench_seconds']:.0f} s = "
            f"{s['reference_seconds'] / max(s['workbench_seconds'], 1e-9):.2f}x |")
    return "\n".join(lines)


def rows_for(results: list[SetResult], flags: Flags, seeds: int) -> list[BenchRow]:
    """Per set: the accuracy row (target 1.00x less the seeds' spread) and the time row."""
    rows = []
    for result in results:
        s = summary(result)
        what = (f"{result.name}: best val accuracy vs torchvision reference recipe "
                f"({flags.model} from scratch, {flags.epochs} epochs, {seeds} seeds)")
        target = round(1.0 - s["difference_se"] / max(s["reference_mean"], 1e-9), 3)
        # A reference at 0 (possible only at the quick sizes) would leave no ratio to take.
        rows.append(ratio_row("parity", what, s["workbench_mean"],
                              max(s["reference_mean"], 1e-9), "acc", target=target, **s))
        rows.append(ratio_row("parity", f"{result.name}: wall time of those runs",
                              s["workbench_seconds"], s["reference_seconds"], "s",
                              target=1.0, higher_is_better=False))
    return rows


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """The suite's entry: every set, five seeds (quick: one tiny set, two seeds, 1 epoch)."""
    del device  # both pipelines train on the CPU, as the comparison was measured
    flags = Flags(epochs=1) if quick else Flags()
    sets = QUICK_SETS if quick else SETS
    seeds = [0, 1] if quick else [0, 1, 2, 3, 4]
    with tempfile.TemporaryDirectory(prefix="workbench-parity-") as tmp:
        results = [compare_set(image_set, flags, seeds, Path(tmp)) for image_set in
                   sets.values()]
    return rows_for(results, flags, len(seeds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=Flags.epochs)
    parser.add_argument("--train-per-class", type=int, default=None,
                        help="images a class in training (default: each set's subset)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads for both pipelines (0: torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    flags = Flags(epochs=args.epochs)
    results = []
    with tempfile.TemporaryDirectory(prefix="workbench-parity-") as tmp:
        for name in args.sets:
            image_set = SETS[name]
            if args.train_per_class:
                image_set = ImageSet(name, args.train_per_class, image_set.val_per_class)
            results.append(compare_set(image_set, flags, list(range(args.seeds)), Path(tmp),
                                       say=lambda text: print(text, flush=True)))
    print(f"\n{flags}, {args.seeds} seeds, torch threads {torch.get_num_threads()}\n")
    print(format_results(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
