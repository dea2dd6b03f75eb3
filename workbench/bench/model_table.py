"""Training images/s and peak memory of every catalogue model, one row each, within a budget.

``python -m workbench.bench.model_table [--device cuda] [--crop 224] [--batch 32] [--steps 10]
[--budget-s 150] [--models a,b] [-o FILE.json]``

Each model (random weights, a 4-class head, its own recipe's optimiser, the whole network
trained) steps on synthetic tensors already on the device, with the precision the card gets
by default (bf16 or fp16 autocast where the card supports it, float32 on a CPU) and
channels_last on CUDA, as a run would. After one warm-up step, ``--steps`` steps are timed;
peak memory is CUDA's peak allocated during them (none on a CPU). A model that runs out of
memory gets a row saying so. When the next model would not fit in what is left of
``--budget-s`` (judged by the slowest model so far), it and the rest are skipped with a note.
``-o`` writes the rows to JSON and the table, as Markdown, beside it (``.md``); the rows are
written after every model, so a run stopped from outside still leaves what it measured.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from workbench.bench.training_benchmark import ModelOnlyTrainer
from workbench.core.devices.selection import resolve_device
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_catalog import MODEL_NAMES, SMALL_CNN, model_facts
from workbench.core.runs.model_defaults import defaults_for

RECIPE_FIELDS = ("optimizer", "lr", "momentum", "weight_decay")


@dataclass(frozen=True)
class ModelRow:
    """One model's figures; ``images_per_second`` is None where it was not measured, and
    ``note`` says why (out of memory, skipped for the budget, an error)."""

    model: str
    family: str
    precision: str
    batch: int
    crop: int
    images_per_second: float | None
    peak_memory_gib: float | None
    seconds: float
    note: str = ""


def model_config(name: str, device: str, crop: int, batch: int) -> TrainConfig:
    """``name`` with random weights and its recipe's optimiser, trained whole, at ``crop``."""
    recipe = {key: value for key, value in defaults_for(name).items() if key in RECIPE_FIELDS}
    return TrainConfig(model=name, weights="none", finetune="full", crop_mode="standard",
                       resize_size=crop, crop_size=crop, batch_size=batch, device=device,
                       amp=True, channels_last=True, scheduler="none", **recipe)


def measure_model(name: str, device: str, crop: int, batch: int, steps: int) -> ModelRow:
    """Train ``name`` for ``steps`` timed steps on synthetic tensors; its row."""
    family = "small_cnn" if name == SMALL_CNN else model_facts(name).family
    config = model_config(name, device, crop, batch)
    on_cuda = device.startswith("cuda")
    started = time.perf_counter()
    trainer = None
    precision = "float32"
    try:
        trainer = ModelOnlyTrainer(config)
        precision = trainer.precision.label
        trainer.seconds(0)  # the warm-up step (cuDNN's choices, first allocations)
        if on_cuda:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        seconds = trainer.seconds(steps)
        peak = torch.cuda.max_memory_allocated(device) / 2**30 if on_cuda else None
        return ModelRow(name, family, precision, batch, crop, steps * batch / seconds, peak,
                        time.perf_counter() - started)
    except torch.cuda.OutOfMemoryError:
        return ModelRow(name, family, precision, batch, crop, None, None,
                        time.perf_counter() - started, f"out of memory at batch {batch}")
    except (RuntimeError, ValueError) as exc:
        text = str(exc).strip().splitlines()
        return ModelRow(name, family, precision, batch, crop, None, None,
                        time.perf_counter() - started,
                        f"failed: {type(exc).__name__}: {text[0] if text else ''}")
    finally:
        del trainer
        gc.collect()
        if on_cuda:
            torch.cuda.empty_cache()


def measure_models(models: Sequence[str], device: str, crop: int, batch: int, steps: int,
                   budget_s: float, on_row: Callable[[list[ModelRow]], None] | None = None
                   ) -> list[ModelRow]:
    """A row per model, in order; those that would not fit in ``budget_s`` are skipped."""
    device = resolve_device(device)
    started = time.perf_counter()
    rows: list[ModelRow] = []
    slowest = 0.0
    for index, name in enumerate(models):
        left = budget_s - (time.perf_counter() - started)
        if left <= slowest:
            rest = list(models[index:])
            note = (f"skipped: {left:.0f} s of the {budget_s:g} s budget left, and a model "
                    f"took up to {slowest:.0f} s")
            rows += [ModelRow(model, "", "", batch, crop, None, None, 0.0, note)
                     for model in rest]
            break
        row = measure_model(name, device, crop, batch, steps)
        slowest = max(slowest, row.seconds)
        rows.append(row)
        if on_row is not None:
            on_row(rows)
    if on_row is not None:
        on_row(rows)
    return rows


def table(rows: Sequence[ModelRow]) -> str:
    """The rows as a Markdown table."""
    lines = ["| model | family | precision | batch | crop | training images/s | peak memory | "
             "note |", "|" + " --- |" * 8]
    for row in rows:
        speed = "-" if row.images_per_second is None else f"{row.images_per_second:,.1f}"
        peak = "-" if row.peak_memory_gib is None else f"{row.peak_memory_gib:.2f} GiB"
        lines.append(f"| {row.model} | {row.family} | {row.precision} | {row.batch} | "
                     f"{row.crop} | {speed} | {peak} | {row.note} |")
    return "\n".join(lines)


def _writer(output: Path, context: dict) -> Callable[[list[ModelRow]], None]:
    def write(rows: list[ModelRow]) -> None:
        output.parent.mkdir(parents=True, exist_ok=True)
        document = {**context, "rows": [asdict(row) for row in rows]}
        output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        output.with_suffix(".md").write_text(table(rows) + "\n", encoding="utf-8")

    return write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto")
    parser.add_argument("--crop", type=int, default=224, help="crop size in px (default 224)")
    parser.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps a model (default 10)")
    parser.add_argument("--budget-s", type=float, default=150.0,
                        help="seconds for all models; the rest are skipped (default 150)")
    parser.add_argument("--models", default=",".join(MODEL_NAMES),
                        help="comma-separated catalogue models (default: all of them)")
    parser.add_argument("-o", "--output", help="write the rows to this JSON file (and the "
                                               "table beside it, .md)")
    args = parser.parse_args(argv)
    models = [name.strip() for name in args.models.split(",") if name.strip()]
    unknown = [name for name in models if name not in MODEL_NAMES]
    if unknown:
        parser.error(f"--models: unknown model(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(MODEL_NAMES)}")
    for flag, value in (("--crop", args.crop), ("--batch", args.batch), ("--steps", args.steps)):
        if value < 1:
            parser.error(f"{flag} must be at least 1, not {value}")
    try:
        device = resolve_device(args.device)
    except (RuntimeError, ValueError) as exc:
        parser.error(f"--device: {exc}")
    context = {"device": device, "torch": torch.__version__, "crop": args.crop,
               "batch": args.batch, "steps": args.steps, "budget_s": args.budget_s}
    if device.startswith("cuda"):
        context["gpu"] = torch.cuda.get_device_name(device)
    write = _writer(Path(args.output), context) if args.output else None
    rows = measure_models(models, device, args.crop, args.batch, args.steps, args.budget_s,
                          on_row=write)
    print(table(rows))
    return 0 if all(row.images_per_second is not None or row.note.startswith("skipped")
                    or row.note.startswith("out of memory") for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
