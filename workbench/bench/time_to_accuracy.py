"""Time to accuracy on real image sets: Workbench's defaults against the plain reference.

On each real set (``real_image_sets``) and seed, the plain pipeline (``ImageFolder`` +
``transforms.v2`` + the reference loop, ``accuracy_benchmark.plain_run``) trains small_cnn with
torchvision's reference flags: SGD lr 0.1, momentum 0.9, weight decay 1e-4, batch 32,
RandomResizedCrop (scale 0.08-1) + flip, StepLR dividing the lr by ten every third of the run
(as its 30 of 90 epochs). Then Workbench trains small_cnn with nothing but its defaults. The
row: the wall time Workbench takes to first reach the best validation accuracy the reference
reached, over the reference's own time to that accuracy, mean over the seeds (target
<= 0.5x); a seed where Workbench never gets there counts its whole run. A second row holds
Workbench's best accuracy to the reference's (target >= 1.00x).

    python -m workbench.bench.time_to_accuracy --seeds 5 --jobs 4 --threads 1 -o tta.json
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench.bench.report import BenchRow, format_table, limit_row, ratio_row

# (set, training images a class, validation images a class; None: all). Sized so that five
# seeds of both pipelines fit a loaded 2-core CPU; --large takes every image.
SETS = (("digits", 50, 25), ("digits64", 50, 25), ("faces", None, None), ("textures", 50, 30))
LARGE_SETS = (("digits", None, None), ("digits64", None, None), ("faces", None, None),
              ("textures", None, None), ("photos", None, None))
QUICK_SETS = (("digits", 15, 3),)
REFERENCE_EPOCHS = 9
# Fresh interpreters, not forks: a process that has already run autograd (a test session, the
# app) cannot fork safely ("Unable to handle autograd's threading in combination with
# fork-based multiprocessing").
_SPAWN = multiprocessing.get_context("spawn")


def reference_config(data: Path, root: Path, seed: int, device: str, epochs: int) -> Any:
    from workbench.core.runs.config import TrainConfig

    return TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, train_hflip=True,
        crop_scale_min=0.08, crop_scale_max=1.0, crop_ratio_min=0.75, crop_ratio_max=4 / 3,
        epochs=epochs, batch_size=32, optimizer="sgd", lr=0.1, momentum=0.9,
        weight_decay=1e-4, scheduler="step", lr_step_size=max(1, epochs // 3), lr_gamma=0.1,
        seed=seed, workers=0, amp=False, device=device,
        output_dir=str(root / "runs"), cache_dir=str(root / f"cache-ref-{seed}"))


def workbench_defaults_config(data: Path, root: Path, seed: int, device: str,
                              overrides: dict[str, Any] | None = None) -> Any:
    """small_cnn with its model defaults, and ``overrides`` on top of them (a candidate
    default, measured beside the defaults); only placement and scratch folders are set."""
    from workbench.core.runs.config import TrainConfig
    from workbench.core.runs.model_defaults import apply_model_defaults

    placement = {"data_root": str(data), "model": "small_cnn", "seed": seed, "workers": 0,
                 "device": device, "output_dir": str(root / "runs"),
                 "cache_dir": str(root / f"cache-wb-{seed}")}
    return apply_model_defaults(TrainConfig(**placement), explicit=placement).replace(
        **(overrides or {}))


def parse_override(text: str) -> tuple[str, Any]:
    """'epochs=8' -> ('epochs', 8); a value that is not JSON stays a string."""
    field, separator, value = text.partition("=")
    if not separator or not field:
        raise argparse.ArgumentTypeError(f"'{text}': write FIELD=VALUE, e.g. epochs=8")
    try:
        return field, json.loads(value)
    except json.JSONDecodeError:
        return field, value


def workbench_history(config: Any) -> list[tuple[float, float]]:
    """(seconds since the start, val accuracy) at each epoch's end of an engine run."""
    from workbench.core.runs.events import Callback
    from workbench.core.training.engine import train

    history: list[tuple[float, float]] = []
    started = time.perf_counter()

    class EpochTimes(Callback):
        def on_epoch_end(self, event: Any) -> None:
            history.append((time.perf_counter() - started, event.val_accuracy))

    end = train(config, EpochTimes())
    if end.status != "completed":
        raise RuntimeError(f"workbench run {end.status}: {end.error}")
    return history


def time_to_reach(history: list[tuple[float, float]], accuracy: float) -> float | None:
    """Seconds at the first epoch whose accuracy is at least ``accuracy`` (None: never)."""
    return next((seconds for seconds, reached in history if reached >= accuracy), None)


def compare_seed(reference: list[tuple[float, float]], ours: list[tuple[float, float]]
                 ) -> dict[str, Any]:
    """One seed's figures: the reference's best and its time, ours to reach it, the ratio."""
    target = max(accuracy for _, accuracy in reference)
    reference_seconds = time_to_reach(reference, target)
    our_seconds = time_to_reach(ours, target)
    reached = our_seconds is not None
    return {"reference_best": target, "reference_seconds": reference_seconds,
            "workbench_best": max(accuracy for _, accuracy in ours),
            "workbench_seconds_to_it": our_seconds, "workbench_seconds": ours[-1][0],
            "reached": reached,
            "ratio": our_seconds / reference_seconds if reached else math.inf}


def run_set(job: tuple[str, int | None, int | None, tuple[int, ...], str, int, int,
                      dict[str, Any]]) -> list[dict[str, Any]]:
    """Every seed of one set, reference first, then Workbench (in a worker process)."""
    import torch

    from workbench.bench.real_image_sets import write_real_set
    from workbench.bench.reference.accuracy_benchmark import plain_run

    name, train_per_class, val_per_class, seeds, device, epochs, threads, overrides = job
    if threads:
        torch.set_num_threads(threads)
    results = []
    with tempfile.TemporaryDirectory(prefix="workbench-tta-") as tmp:
        root = Path(tmp)
        data = write_real_set(name, root / "data", train_per_class, val_per_class)
        for seed in seeds:
            reference: list[tuple[float, float]] = []
            plain_run(reference_config(data, root, seed, device, epochs), reference)
            ours = workbench_history(
                workbench_defaults_config(data, root, seed, device, overrides))
            results.append({"set": name, "seed": seed, **compare_seed(reference, ours)})
    return results


def set_rows(name: str, results: list[dict[str, Any]], recipe: str = "defaults"
             ) -> list[BenchRow]:
    ratios = [r["ratio"] for r in results]
    reached = sum(r["reached"] for r in results)
    reached_ratios = [r["ratio"] for r in results if r["reached"]]
    our_best = statistics.mean(r["workbench_best"] for r in results)
    reference_best = statistics.mean(r["reference_best"] for r in results)
    seeds = len(results)
    time_row = limit_row("time_to_accuracy",
                         f"{name}: {recipe}' time to the reference's best accuracy, over "
                         f"the reference's (reached in {reached}/{seeds} seeds)",
                         statistics.mean(ratios), "x", 0.5, per_seed=results,
                         mean_ratio_where_reached=statistics.mean(reached_ratios)
                         if reached_ratios else None)
    return [time_row,
            ratio_row("time_to_accuracy", f"{name}: {recipe}' best val accuracy vs the "
                      f"reference's, {seeds} seeds", our_best, reference_best, "acc", 1.0)]


def run(quick: bool = False, device: str = "auto", seeds: int = 5,
        epochs: int = REFERENCE_EPOCHS, jobs: int = 1, threads: int = 0,
        large: bool = False, names: tuple[str, ...] = (),
        overrides: dict[str, Any] | None = None) -> list[BenchRow]:
    """Every set's two rows (only ``names`` when given); ``jobs`` sets at once, each in its
    own process; Workbench runs its defaults with ``overrides`` on top."""
    from concurrent.futures import ProcessPoolExecutor

    device = "cpu" if device == "auto" else device
    sets = QUICK_SETS if quick else LARGE_SETS if large else SETS
    if names:
        unknown = sorted(set(names) - {name for name, _, _ in sets})
        if unknown:
            raise ValueError(f"unknown set(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(name for name, _, _ in sets)}")
        sets = tuple(entry for entry in sets if entry[0] in names)
    overrides = dict(overrides or {})
    recipe = "defaults" + "".join(f" + {key}={value}" for key, value in overrides.items())
    chosen = (0,) if quick else tuple(range(seeds))
    todo = [(name, train_count, val_count, chosen, device, 2 if quick else epochs, threads,
             overrides) for name, train_count, val_count in sets]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=_SPAWN) as pool:
        results = list(pool.map(run_set, todo))
    return [row for job, result in zip(todo, results, strict=True)
            for row in set_rows(job[0], result, recipe)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=REFERENCE_EPOCHS,
                        help="the reference's epochs")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads a process (0: torch's)")
    parser.add_argument("--jobs", type=int, default=1, help="sets at once")
    parser.add_argument("--large", action="store_true", help="every image of every set")
    parser.add_argument("--sets", default="",
                        help="comma-separated set names (default: every set)")
    parser.add_argument("--override", action="append", type=parse_override, default=[],
                        metavar="FIELD=VALUE",
                        help="a setting on top of Workbench's defaults, e.g. epochs=6 "
                             "(repeatable): a candidate default measured the same way")
    parser.add_argument("-o", "--output", default="")
    args = parser.parse_args(argv)
    names = tuple(name for name in args.sets.split(",") if name)
    rows = run(args.quick, args.device, args.seeds, args.epochs, args.jobs, args.threads,
               args.large, names, dict(args.override))
    print(format_table(rows))
    if args.output:
        given = sys.argv[1:] if argv is None else argv
        document = {"command": " ".join(["python -m workbench.bench.time_to_accuracy", *given]),
                    "date": time.strftime("%Y-%m-%d"), "rows": [r.to_dict() for r in rows]}
        Path(args.output).write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
