"""Training images/s and peak memory of every catalogue model, one row each, within a budget.

``python -m workbench.bench.model_table [--device cuda] [--crop 224] [--batch 32] [--steps 10]
[--budget-s 150] [--models a,b] [-o FILE.json]``

Each model is measured by :func:`~workbench.core.training.tuning.model_measurement.measure_model`
(what the model picker's *Measure on this machine* runs): random weights, its own recipe's
optimiser, the whole network learning (``finetune full``), the run's own training step on a
synthetic batch with the precision the card gets by default (bf16 or fp16 autocast where the
card supports it, float32 on a CPU), one warm-up step and ``--steps`` timed ones, CUDA's peak
allocated memory over them (none on a CPU), and the median batch-1 latency. A model that runs
out of memory or cannot take the crop gets a row saying so. When the next model would not fit
in what is left of ``--budget-s`` (judged by the slowest model so far), it and the rest are
skipped with a note. ``-o`` writes the rows to JSON and the table, as Markdown, beside it
(``.md``); the rows are written after every model, so a run stopped from outside still leaves
what it measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from workbench.core.devices.selection import resolve_device
from workbench.core.runs.model_catalog import (
    MODEL_NAMES,
    SMALL_CNN,
    model_facts,
    model_names_from_list,
)
from workbench.core.training.tuning.model_measurement import measure_model, measurement_settings


@dataclass(frozen=True)
class ModelRow:
    """One model's figures; ``images_per_second`` is None where it was not measured, and
    ``note`` says why (out of memory, skipped for the budget, the crop does not fit)."""

    model: str
    family: str
    precision: str
    batch: int
    crop: int
    images_per_second: float | None
    peak_memory_gib: float | None
    latency_ms: float | None
    seconds: float
    note: str = ""


def _family(name: str) -> str:
    return "small_cnn" if name == SMALL_CNN else model_facts(name).family


def measure_one(name: str, device: str, crop: int, batch: int, steps: int) -> ModelRow:
    """``name`` trained whole for ``steps`` timed steps; its row."""
    family = _family(name)
    settings = measurement_settings(name, batch_size=batch, crop_size=crop, amp=True,
                                    finetune="full", device=device)
    started = time.perf_counter()
    try:
        measured = measure_model(settings, warmup_steps=1, timed_steps=steps,
                                 find_largest=False)
    except ValueError as exc:  # the model cannot take this crop, in its own words
        return ModelRow(name, family, "", batch, crop, None, None, None,
                        time.perf_counter() - started, f"failed: {exc}")
    assert measured is not None  # nothing asks it to stop
    peak = measured.peak_memory_bytes
    return ModelRow(name, family, measured.precision, batch, crop,
                    measured.train_images_per_second, None if peak is None else peak / 2**30,
                    measured.latency_ms, time.perf_counter() - started, measured.error)


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
            note = (f"skipped: {max(left, 0):.0f} s of the {budget_s:g} s budget left, and a "
                    f"model took up to {slowest:.0f} s")
            rows += [ModelRow(model, _family(model), "", batch, crop, None, None, None, 0.0,
                              note)
                     for model in rest]
            break
        row = measure_one(name, device, crop, batch, steps)
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
             "batch-1 latency | note |", "|" + " --- |" * 9]
    for row in rows:
        speed = "-" if row.images_per_second is None else f"{row.images_per_second:,.1f}"
        peak = "-" if row.peak_memory_gib is None else f"{row.peak_memory_gib:.2f} GiB"
        latency = "-" if row.latency_ms is None else f"{row.latency_ms:.1f} ms"
        lines.append(f"| {row.model} | {row.family} | {row.precision} | {row.batch} | "
                     f"{row.crop} | {speed} | {peak} | {latency} | {row.note} |")
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
    try:
        models = model_names_from_list(args.models)
    except ValueError as exc:
        parser.error(f"--models: {exc}")
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
