"""Side-by-side training benchmarks, measured in one run on one machine, reported as ratios.

    python -m workbench.bench.training_benchmark                # CPU-sized defaults
    python -m workbench.bench.training_benchmark --resize 256 --crop 224 --batch 32  # a GPU

1. End-to-end training through the engine (loader, uint8 to the device, normalisation there,
   five crops flattened) against the same model and optimiser stepping on synthetic tensors
   already on the device: how much the input pipeline costs. Target >= 0.90x.
2. A last-layer epoch on cached frozen-backbone features against the same epoch recomputing
   the backbone for every batch. Target >= 50x faster.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from workbench.core.config import TrainConfig
from workbench.core.devices import describe_device_choice, resolve_device
from workbench.core.engine import train
from workbench.core.events import Callback, EpochEnd, StepStats
from workbench.core.models import apply_finetune_mode, build_model
from workbench.core.multicrop import multicrop_loss
from workbench.core.optimisers import build_optimizer
from workbench.core.synthetic_images import write_shape_dataset


class _Timings(Callback):
    def __init__(self) -> None:
        self.steps: list[StepStats] = []
        self.epochs: list[EpochEnd] = []

    def on_step(self, event: StepStats) -> None:
        self.steps.append(event)

    def on_epoch_end(self, event: EpochEnd) -> None:
        self.epochs.append(event)


def _config(args: argparse.Namespace, data: Path, out: Path, **changes: object) -> TrainConfig:
    return TrainConfig(
        data_root=str(data), weights="none", finetune="full", crop_mode="five_crop",
        crop_strategy="average_logits", resize_size=args.resize, crop_size=args.crop,
        batch_size=args.batch, epochs=2, optimizer="sgd", lr=0.01, scheduler="none",
        workers=args.workers, device=args.device, output_dir=str(out),
        cache_dir=str(out / "image-cache"), seed=0,
    ).replace(**changes)


def engine_images_per_second(args: argparse.Namespace, data: Path, out: Path) -> float:
    """Images/s of the engine's second epoch (decoded images cached by the first)."""
    timings = _Timings()
    end = train(_config(args, data, out, run_name="end-to-end"), timings)
    if end.status != "completed":
        raise SystemExit(f"engine run failed: {end.error}")
    second = [s for s in timings.steps if s.epoch == 2][1:]  # skip the warm-up step
    images = sum(args.batch for _ in second)
    seconds = sum(s.data_wait_s + s.compute_s for s in second)
    return images / seconds


def model_only_images_per_second(args: argparse.Namespace, steps: int) -> float:
    """The same model and optimiser stepping on synthetic normalised tensors on the device."""
    device = resolve_device(args.device)
    config = _config(args, Path("."), Path("."))
    model = build_model(config, 4).to(device)
    optimizer = build_optimizer(config, apply_finetune_mode(model, "full"))
    model.train()
    inputs = torch.randn(args.batch * 5, 3, args.crop, args.crop, device=device)
    labels = torch.randint(0, 4, (args.batch,), device=device)
    durations = []
    for step in range(steps + 1):
        started = time.perf_counter()
        logits = model(inputs)
        loss, _ = multicrop_loss(logits, labels, 5, "average_logits")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss.item()
        if step:  # skip the warm-up step, as above
            durations.append(time.perf_counter() - started)
    return args.batch * len(durations) / sum(durations)


def largest_batch_that_fits(args: argparse.Namespace, limit: int = 4096) -> tuple[int, int]:
    """CUDA only: the largest power-of-two batch (five crops each) that trains one step, and
    the peak memory of that step in bytes."""
    device = resolve_device(args.device)
    config = _config(args, Path("."), Path("."))
    model = build_model(config, 4).to(device).to(memory_format=torch.channels_last)
    optimizer = build_optimizer(config, apply_finetune_mode(model, "full"))
    scaler = torch.amp.GradScaler("cuda")
    best, best_peak, batch = 0, 0, 8
    while batch <= limit:
        try:
            torch.cuda.reset_peak_memory_stats(device)
            inputs = torch.randn(batch * 5, 3, args.crop, args.crop, device=device)
            labels = torch.randint(0, 4, (batch,), device=device)
            with torch.autocast("cuda", dtype=torch.float16):
                loss, _ = multicrop_loss(model(inputs), labels, 5, "average_logits")
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            torch.cuda.synchronize(device)
            best, best_peak = batch, torch.cuda.max_memory_allocated(device)
        except torch.cuda.OutOfMemoryError:
            break
        finally:
            inputs = labels = loss = None
            torch.cuda.empty_cache()
        batch *= 2
    return best, best_peak


def head_epoch_seconds(args: argparse.Namespace, data: Path, out: Path, cached: bool) -> float:
    """Median seconds of a last-layer epoch after the first, with or without cached features."""
    timings = _Timings()
    config = _config(args, data, out, finetune="last_layer", cache_features=cached, epochs=3,
                     run_name="cached" if cached else "recomputed")
    end = train(config, timings)
    if end.status != "completed":
        raise SystemExit(f"engine run failed: {end.error}")
    return statistics.median(e.epoch_seconds for e in timings.epochs[1:])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images-per-class", type=int, default=32)
    parser.add_argument("--image-size", default="320x240")
    parser.add_argument("--resize", type=int, default=128)
    parser.add_argument("--crop", type=int, default=112)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--workers", type=int, default=TrainConfig().workers)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.image_size.split("x"))
    print(describe_device_choice(args.device))
    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as tmp:
        work = Path(tmp)
        data = write_shape_dataset(work / "data", per_class=args.images_per_class,
                                   size=(width, height), layout="train_val",
                                   val_per_class=max(2, args.images_per_class // 4),
                                   image_format="JPEG")
        steps = args.images_per_class * 4 // args.batch
        end_to_end = engine_images_per_second(args, data, work / "runs")
        model_only = model_only_images_per_second(args, steps)
        recomputed = head_epoch_seconds(args, data, work / "runs", cached=False)
        cached = head_epoch_seconds(args, data, work / "runs", cached=True)
    print(f"\n{args.images_per_class * 4} train images {width}x{height} JPEG, resize "
          f"{args.resize}, five crops of {args.crop}, batch {args.batch}, "
          f"workers {args.workers}")
    print(f"{'measurement':<44}{'value':>14}")
    print(f"{'end-to-end training (engine), images/s':<44}{end_to_end:>14.1f}")
    print(f"{'model only, synthetic tensors, images/s':<44}{model_only:>14.1f}")
    print(f"{'  ratio end-to-end / model-only (>= 0.90)':<44}{end_to_end / model_only:>13.2f}x")
    print(f"{'last-layer epoch, recomputing backbone, s':<44}{recomputed:>14.3f}")
    print(f"{'last-layer epoch, cached features, s':<44}{cached:>14.4f}")
    print(f"{'  speed-up from the feature cache (>= 50)':<44}{recomputed / cached:>13.1f}x")
    if resolve_device(args.device).startswith("cuda"):
        batch, peak = largest_batch_that_fits(args)
        print(f"{'largest batch that fits (x5 crops, AMP)':<44}{batch:>14d}")
        print(f"{'  peak memory at that batch, GiB':<44}{peak / 1024**3:>14.2f}")


if __name__ == "__main__":
    main()
