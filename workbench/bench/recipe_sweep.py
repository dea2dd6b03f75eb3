"""Choose a model's default recipe by measurement: a staged sweep on real and generated sets.

Each stage tries a few values of one part of the recipe (learning rate and optimiser, schedule,
batch, epochs, label smoothing, augmentation, resolution, the LR finder's suggestion) on top of
the winner so far, on every cell (an image set at one size) and seed, through the engine as a
user's run goes. A stage's winner is the recipe with the highest mean best validation accuracy
over all cells and seeds; a recipe within ``TIE`` of it that takes less time wins instead,
because speed is what the defaults are for.

    python -m workbench.bench.recipe_sweep -o sweep.json           # the README's table
    python -m workbench.bench.recipe_sweep --quick                 # a smoke run, seconds
    python -m workbench.bench.recipe_sweep --device cuda --jobs 8 --large -o sweep.json
    python -m workbench.bench.recipe_sweep --model resnet18 --stages "from scratch" \
        --start-from '{"weights": "none", "finetune": "full", "resize_size": 32, "crop_size": 32}'

``--model`` sweeps another model's defaults (``defaults_for``) in place of small_cnn's.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

TIE = 0.01
# Fresh interpreters, not forks: a process that has already run autograd (a test session, the
# app) cannot fork safely ("Unable to handle autograd's threading in combination with
# fork-based multiprocessing").
_SPAWN = multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class Cell:
    """One image set at one size: ``set_name`` from real_image_sets or 'generated'."""

    set_name: str
    train_per_class: int | None
    val_per_class: int | None

    @property
    def label(self) -> str:
        size = "all" if self.train_per_class is None else str(self.train_per_class)
        return f"{self.set_name}@{size}"


CELLS = (Cell("digits", 20, 10), Cell("digits64", 20, 10), Cell("faces", None, None),
         Cell("textures", 30, 20), Cell("generated", 20, 10))
LARGE_CELLS = (*CELLS, Cell("digits", None, None), Cell("digits64", None, None),
               Cell("textures", None, None), Cell("photos", None, None),
               Cell("generated", 600, 100))
QUICK_CELLS = (Cell("digits", 10, 4),)

# Each stage: (name, candidate overrides tried on top of the winner so far). The first stage's
# first row is the recipe the sweep starts from (small_cnn's defaults before this sweep).
STAGES: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = (
    ("lr", ({"optimizer": "sgd", "lr": 0.05}, {"optimizer": "sgd", "lr": 0.02},
            {"optimizer": "adamw", "lr": 1e-3, "weight_decay": 1e-4},
            {"optimizer": "adamw", "lr": 3e-3, "weight_decay": 1e-4})),
    ("schedule", ({"scheduler": "cosine"}, {"scheduler": "warmup_cosine"},
                  {"scheduler": "onecycle"})),
    ("epochs", ({"epochs": 6}, {"epochs": 4}, {"epochs": 8})),
    ("augmentation", ({"crop_scale_min": 0.7}, {"crop_scale_min": 1.0, "crop_ratio_min": 1.0,
                                                 "crop_ratio_max": 1.0})),
    ("batch", ({"batch_size": 64}, {"batch_size": 128}, {"batch_size": 32},
               {"batch_size": 16})),
    ("label smoothing", ({"label_smoothing": 0.0}, {"label_smoothing": 0.1})),
    ("resolution", ({"resize_size": 28, "crop_size": 28}, {"resize_size": 20, "crop_size": 20})),
    # Progressive resizing: the first epoch at this share of the crop, growing to it.
    ("progressive resizing", ({"progressive_resize_start": 1.0},
                              {"progressive_resize_start": 0.5},
                              {"progressive_resize_start": 0.75})),
    # The LR finder's suggestion (from this many range-test steps) in place of the fixed lr.
    ("lr refine", ({}, {"lr": 5e-4}, {"lr": 2e-3})),
    ("lr finder", ({}, {"lr_from_finder": 60})),
    # An ImageNet model started from random weights (the offline fallback): its fine-tuning
    # recipe as it stands, against recipes for training every layer from scratch.
    ("from scratch", ({}, {"optimizer": "sgd", "lr": 0.01, "scheduler": "cosine"},
                      {"optimizer": "sgd", "lr": 0.05, "scheduler": "warmup_cosine"},
                      {"optimizer": "adamw", "lr": 1e-3, "weight_decay": 1e-4,
                       "scheduler": "warmup_cosine"},
                      {"optimizer": "adamw", "lr": 2e-3, "weight_decay": 1e-4,
                       "scheduler": "warmup_cosine"})),
)
QUICK_STAGES = (STAGES[0][0], STAGES[0][1][:2]), ("lr finder", ({}, {"lr_from_finder": 30}))
BASE = {"model": "small_cnn", "epochs": 6}


@dataclass(frozen=True)
class Trial:
    """One run: a recipe on a cell with a seed, and what it reached."""

    stage: str
    recipe: dict[str, Any]
    cell: str
    seed: int
    best_val_accuracy: float
    final_val_accuracy: float
    seconds: float
    lr_used: float


def write_cell(cell: Cell, root: Path) -> Path:
    """The cell's image folder (written once)."""
    from workbench.bench.real_image_sets import write_real_set
    from workbench.core.data.generated.handwritten_digits import write_digit_dataset

    folder = root / cell.label
    if folder.is_dir():
        return folder
    if cell.set_name == "generated":
        return write_digit_dataset(folder, cell.train_per_class or 600,
                                   cell.val_per_class or 100, seed=0)
    return write_real_set(cell.set_name, folder, cell.train_per_class, cell.val_per_class)


def run_trial(job: tuple[str, dict[str, Any], dict[str, Any], str, str, int, str, int]
              ) -> Trial:
    """Train one recipe on one cell (in a worker process with ``threads`` torch threads)."""
    import torch

    from workbench.core.runs.config import TrainConfig
    from workbench.core.runs.events import Callback
    from workbench.core.runs.model_defaults import defaults_for
    from workbench.core.training.engine import train

    stage, base, recipe, cell_label, folder, seed, device, threads = job
    torch.set_num_threads(threads)
    overrides = {k: v for k, v in recipe.items() if k != "lr_from_finder"}
    defaults = {**defaults_for(base["model"]), **base, **overrides}
    # A batch larger than the folder is clamped to it, as a run's batch is on a small folder.
    training_images = sum(1 for path in Path(folder, "train").rglob("*.png"))
    defaults["batch_size"] = min(defaults["batch_size"], training_images)
    with tempfile.TemporaryDirectory(prefix="workbench-sweep-") as tmp:
        config = TrainConfig(data_root=folder, device=device, seed=seed, workers=0,
                             amp=device != "cpu", output_dir=f"{tmp}/runs",
                             cache_dir=f"{tmp}/cache").replace(**defaults)
        started = time.perf_counter()
        if recipe.get("lr_from_finder"):
            config = config.replace(lr=_finder_lr(config, recipe["lr_from_finder"]))
        finals: list[float] = []

        class LastAccuracy(Callback):
            def on_epoch_end(self, event: Any) -> None:
                finals.append(event.val_accuracy)

        end = train(config, LastAccuracy())
        seconds = time.perf_counter() - started
    if end.status != "completed":
        raise RuntimeError(f"{cell_label} {recipe}: run {end.status}: {end.error}")
    return Trial(stage, recipe, cell_label, seed, end.best_val_accuracy, finals[-1],
                 round(seconds, 2), config.lr)


def _finder_lr(config: Any, steps: int) -> float:
    from workbench.core.training.tuning.lr_finder import find_lr_for_config

    found = find_lr_for_config(config, steps=steps, start_lr=1e-5, end_lr=1.0)
    return found.suggestion or config.lr


@dataclass(frozen=True)
class RecipeScore:
    """A recipe's mean over every cell and seed."""

    stage: str
    recipe: dict[str, Any]
    accuracy: float
    worst_cell: float
    seconds: float
    per_cell: dict[str, float]


def score(stage: str, recipe: dict[str, Any], trials: list[Trial]) -> RecipeScore:
    mine = [t for t in trials if t.recipe == recipe]
    cells = sorted({t.cell for t in mine})
    per_cell = {c: statistics.mean(t.best_val_accuracy for t in mine if t.cell == c)
                for c in cells}
    return RecipeScore(stage, recipe, statistics.mean(per_cell.values()),
                       min(per_cell.values()), statistics.mean(t.seconds for t in mine),
                       per_cell)


def pick_winner(scores: list[RecipeScore]) -> RecipeScore:
    """Highest mean accuracy; within ``TIE`` of it, the fastest."""
    best = max(s.accuracy for s in scores)
    return min((s for s in scores if s.accuracy >= best - TIE), key=lambda s: s.seconds)


def sweep(cells: tuple[Cell, ...], stages: Any, seeds: tuple[int, ...], device: str,
          jobs: int, threads: int, base: dict[str, Any] | None = None,
          start: dict[str, Any] | None = None, say: Any = print,
          after_stage: Any = None) -> dict[str, Any]:
    """Run the stages in order; each stage's winner is the next stage's starting recipe
    (``start`` for the first). ``after_stage`` gets the result so far after each stage."""
    base = {**BASE, **(base or {})}
    winner: dict[str, Any] = dict(start or {})
    done: dict[str, Trial] = {}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="workbench-sweep-data-") as tmp, \
            ProcessPoolExecutor(max_workers=jobs, mp_context=_SPAWN) as pool:
        folders = {c.label: str(write_cell(c, Path(tmp))) for c in cells}
        for stage, candidates in stages:
            recipes = [{**winner, **candidate} for candidate in candidates]
            todo = [(stage, base, recipe, label, folder, seed, device, threads)
                    for recipe in recipes for label, folder in folders.items() for seed in seeds]
            # A stage's first candidate is usually the last winner: its runs are reused.
            new = [job for job in todo if _key(job) not in done]
            for job, trial in zip(new, pool.map(run_trial, new), strict=True):
                done[_key(job)] = trial
                say(f"  {trial.cell:<14} {json.dumps(trial.recipe)[:70]:<70} "
                    f"{trial.best_val_accuracy:.3f} {trial.seconds:6.1f} s", flush=True)
            # Reused runs are this candidate's too: they trained the same settings.
            trials = [replace(done[_key(job)], stage=stage, recipe=job[2]) for job in todo]
            scores = [score(stage, recipe, trials) for recipe in recipes]
            chosen = pick_winner(scores)
            winner = chosen.recipe
            for s in scores:
                rows.append({**asdict(s), "chosen": s is chosen,
                             "lrs_used": sorted({t.lr_used for t in trials
                                                 if t.recipe == s.recipe})})
                say(format_row(rows[-1]), flush=True)
            if after_stage is not None:
                after_stage(_result(cells, seeds, device, base, rows, winner))
    return _result(cells, seeds, device, base, rows, winner)


def _result(cells: tuple[Cell, ...], seeds: tuple[int, ...], device: str,
            base: dict[str, Any], rows: list[dict[str, Any]], winner: dict[str, Any]
            ) -> dict[str, Any]:
    return {"cells": [c.label for c in cells], "seeds": list(seeds), "device": device,
            "base": base, "rows": rows, "winner": winner}


def _key(job: tuple) -> str:
    """The run's effective settings: a candidate equal to the defaults reuses their runs."""
    from workbench.core.runs.model_defaults import defaults_for

    _stage, base, recipe, label, _folder, seed, device, _threads = job
    settings = {**defaults_for(base["model"]), **base, **recipe}
    return json.dumps([settings, label, seed, device], sort_keys=True)


def format_row(row: dict[str, Any]) -> str:
    recipe = ", ".join(f"{k}={v}" for k, v in row["recipe"].items()) or "(as before)"
    mark = "<- chosen" if row["chosen"] else ""
    return (f"{row['stage']:<16} {recipe[:78]:<78} acc {row['accuracy']:.3f} "
            f"worst {row['worst_cell']:.3f} {row['seconds']:6.1f} s {mark}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sets, two stages, 1 epoch")
    parser.add_argument("--large", action="store_true", help="add the full-size cells")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="runs at once")
    parser.add_argument("--threads", type=int, default=1, help="torch threads a run")
    parser.add_argument("--stages", default="", help="comma-separated stage names (all)")
    parser.add_argument("--start-from", default="{}", help="JSON recipe the first stage starts "
                        "from (a winner of earlier stages)")
    parser.add_argument("--model", default=BASE["model"], help="whose defaults the sweep "
                        "starts from (default: small_cnn)")
    parser.add_argument("-o", "--output", default="")
    args = parser.parse_args(argv)
    base = {"epochs": 1, "batch_size": 32} if args.quick else {}
    base["model"] = args.model
    if args.quick:
        cells, stages, seeds = QUICK_CELLS, QUICK_STAGES, (0,)
    else:
        cells = LARGE_CELLS if args.large else CELLS
        stages, seeds = STAGES, tuple(range(args.seeds))
    if args.stages:
        names = [name.strip() for name in args.stages.split(",")]
        stages = tuple(stage for stage in stages if stage[0] in names)
    started = time.perf_counter()
    given = sys.argv[1:] if argv is None else argv

    def write(result: dict[str, Any]) -> None:
        # Written after every stage too, so a run cut short keeps the stages it finished.
        result["seconds"] = round(time.perf_counter() - started, 1)
        result["command"] = " ".join(["python -m workbench.bench.recipe_sweep", *given])
        result["date"] = time.strftime("%Y-%m-%d")
        if args.output:
            Path(args.output).write_text(json.dumps(result, indent=1) + "\n")

    result = sweep(cells, stages, seeds, args.device, args.jobs, args.threads, base,
                   json.loads(args.start_from), after_stage=write)
    write(result)
    print(f"winner: {result['winner']}  ({result['seconds']} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
