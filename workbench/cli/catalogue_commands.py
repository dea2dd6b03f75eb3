"""``workbench models``: the models Workbench trains, with torchvision's figures for each, and
with ``--measure`` what each costs on this machine (training images/s, peak memory, batch-1
latency, whether the batch fits and the largest that does), remembered per machine."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported only when --measure is given
    from workbench.core.training.tuning.model_measurement import ModelMeasurement

# Column -> (heading, value of a row for sorting). Figures sort ascending except accuracy,
# best first; small_cnn, which has no ImageNet figures, sorts last.
_HEADINGS = {"name": "model", "acc1": "acc@1 %", "params": "params M", "gflops": "GFLOPS",
             "size": "file MiB", "crop": "crop", "recipe": "recipe"}
# Measured columns (--measure): heading, and whether the highest value sorts first.
_MEASURED_HEADINGS = {"train_speed": ("train img/s", True), "peak_memory": ("peak MiB", False),
                      "latency": ("latency ms", False),
                      "largest_batch": ("fits (largest batch)", True)}
MEASURED_COLUMNS = tuple(_MEASURED_HEADINGS)
SORT_COLUMNS = (*_HEADINGS, *MEASURED_COLUMNS)
NOT_ON_CPU = "n/a"


@dataclass(frozen=True)
class CatalogueRow:
    """One model as the table shows it; None where it has no ImageNet weights."""

    name: str
    acc1: float | None
    params: float | None
    gflops: float | None
    size: float | None
    crop: int
    recipe: str

    def cells(self) -> list[str]:
        def shown(value: float | None, decimals: int) -> str:
            return "-" if value is None else f"{value:.{decimals}f}"

        return [self.name, shown(self.acc1, 1), shown(self.params, 1), shown(self.gflops, 2),
                shown(self.size, 1), str(self.crop), self.recipe]


def register(sub: argparse._SubParsersAction) -> None:
    models = sub.add_parser(
        "models", help="list the models to train with their ImageNet accuracy, size and cost",
        description="Every model --model takes, with torchvision's figures for its ImageNet "
                    "weights (top-1 accuracy, parameters, GFLOPS of one image at its crop, "
                    "download size), the crop it was trained at and the fine-tuning recipe "
                    "choosing it sets.")
    models.add_argument("--sort", choices=SORT_COLUMNS, default="name",
                        help="the column to sort by: names and figures ascending, except "
                             "acc1, train_speed and largest_batch, highest first; the "
                             f"measured columns ({', '.join(MEASURED_COLUMNS)}) need --measure "
                             "(default: name)")
    measure = models.add_argument_group(
        "measuring on this machine",
        "--measure times each model's training step on a synthetic batch (warm-up steps, then "
        "timed ones), its batch-1 inference latency and, on a GPU, its peak memory and the "
        "largest batch that fits. Results are remembered per machine (host, device, torch and "
        "torchvision versions, settings) in the image cache folder and shown again at once.")
    measure.add_argument("--measure", action="store_true",
                         help="add the measured columns (minutes for all models on a CPU)")
    measure.add_argument("--models", default="",
                         help="comma-separated models to list and measure (default: all)")
    measure.add_argument("--batch-size", type=int, default=0,
                         help="training batch measured (default: each model's own)")
    measure.add_argument("--crop-size", type=int, default=0,
                         help="crop side in pixels (default: each model's own crop)")
    measure.add_argument("--device", default="auto",
                         help="cpu, cuda or cuda:N (default: auto, a GPU when there is one)")
    measure.add_argument("--amp", action=argparse.BooleanOptionalAction, default=True,
                         help="mixed precision on a GPU, as a run uses it (default: on)")
    measure.add_argument("--finetune", choices=("last_layer", "full"), default=None,
                         help="what trains: the head only, or every layer (default: each "
                              "model's own, last_layer for the ImageNet models)")
    measure.add_argument("--steps", type=int, default=0,
                         help="timed training steps (default: 2 on a CPU, 10 on a GPU)")
    measure.add_argument("--remeasure", action="store_true",
                         help="measure again even where a remembered measurement exists")
    models.set_defaults(handler=_cmd_models)


def catalogue_rows() -> list[CatalogueRow]:
    """A row for every model of the catalogue, in its order."""
    from workbench.core.runs.model_catalog import MODEL_NAMES, TORCHVISION_MODELS, model_facts
    from workbench.core.runs.model_defaults import defaults_for

    rows = []
    for name in MODEL_NAMES:
        defaults = defaults_for(name)
        recipe = f"{defaults['optimizer']} lr {defaults['lr']:g}, {defaults['scheduler']}"
        if name in TORCHVISION_MODELS:
            facts = model_facts(name)
            rows.append(CatalogueRow(name, facts.acc1, facts.params / 1e6, facts.gflops,
                                     facts.file_mib, facts.crop_size, recipe))
        else:
            rows.append(CatalogueRow(name, None, None, None, None,
                                     int(defaults["crop_size"]), recipe))
    return rows


def sorted_rows(rows: list[CatalogueRow], column: str,
                measured: dict[str, ModelMeasurement] | None = None) -> list[CatalogueRow]:
    """``rows`` by ``column``; rows without a value for it (small_cnn's ImageNet figures, a
    model that was not measured or ran out of memory) last."""
    if column in _MEASURED_HEADINGS:
        measured = measured or {}
        key: Callable[[CatalogueRow], Any] = lambda row: measured_value(  # noqa: E731
            measured.get(row.name), column)
        reverse = _MEASURED_HEADINGS[column][1]
    else:
        key = lambda row: getattr(row, column)  # noqa: E731
        reverse = column == "acc1"
    known = [row for row in rows if key(row) is not None]
    unknown = [row for row in rows if key(row) is None]
    return sorted(known, key=key, reverse=reverse) + unknown


def measured_value(measurement: ModelMeasurement | None, column: str) -> float | None:
    """The number a measured column sorts by; None when there is none."""
    if measurement is None:
        return None
    return {"train_speed": measurement.train_images_per_second,
            "peak_memory": measurement.peak_memory_bytes,
            "latency": measurement.latency_ms,
            "largest_batch": measurement.largest_batch}[column]


def measured_cells(measurement: ModelMeasurement | None) -> list[str]:
    """The measured columns of one row: '-' where not measured, 'n/a' for the GPU-only figures
    of a CPU measurement."""
    if measurement is None:
        return ["-"] * len(_MEASURED_HEADINGS)
    speed = measurement.train_images_per_second
    speed_text = f"{speed:,.1f}" if speed is not None else "out of memory"
    latency = f"{measurement.latency_ms:.1f}" if measurement.latency_ms is not None else "-"
    if not measurement.on_gpu:
        return [speed_text, NOT_ON_CPU, latency, NOT_ON_CPU]
    peak = measurement.peak_memory_bytes
    peak_text = f"{peak / 2**20:,.0f}" if peak is not None else "-"
    fits = "yes" if measurement.fits else "no"
    largest = "" if measurement.largest_batch is None else \
        f" ({'>=' if measurement.largest_is_cap else ''}{measurement.largest_batch})"
    return [speed_text, peak_text, latency, fits + largest]


def format_table(rows: list[CatalogueRow],
                 measured: dict[str, ModelMeasurement | None] | None = None) -> str:
    """The table; with ``measured`` (model -> measurement) the measured columns too."""
    heading = list(_HEADINGS.values())
    if measured is not None:
        heading += [title for title, _ in _MEASURED_HEADINGS.values()]
    table = [heading]
    for row in rows:
        cells = row.cells()
        if measured is not None:
            cells += measured_cells(measured.get(row.name))
        table.append(cells)
    widths = [max(len(line[column]) for line in table) for column in range(len(table[0]))]
    recipe_column = len(_HEADINGS) - 1
    lines = []
    for line in table:
        # Names and recipes left-aligned, figures right-aligned so their decimals line up.
        cells = [cell.ljust(width) if column in (0, recipe_column) else cell.rjust(width)
                 for column, (cell, width) in enumerate(zip(line, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _cmd_models(args: argparse.Namespace) -> int:
    rows = catalogue_rows()
    if args.models:
        from workbench.core.runs.model_catalog import model_names_from_list

        try:
            wanted = model_names_from_list(args.models)
        except ValueError as exc:
            return _usage_error(f"--models: {exc}")
        rows = [row for row in rows if row.name in wanted]
    if args.sort in _MEASURED_HEADINGS and not args.measure:
        return _usage_error(f"--sort {args.sort} is a measured column; add --measure")
    measured = None
    if args.measure:
        try:
            measured = _measure(args, [row.name for row in rows])
        except ValueError as exc:
            return _usage_error(str(exc))
    print(format_table(sorted_rows(rows, args.sort, measured), measured))
    print("Figures from torchvision's ImageNet weights; GFLOPS of one image at the crop. "
          "Choosing a model (--model) sets its crop and recipe in the settings not given.")
    if measured is not None:
        batch = args.batch_size or "each model's own"
        crop = f"{args.crop_size} px" if args.crop_size else "each model's own"
        print(f"Measured at batch {batch}, crop {crop}. " + _measured_footer(measured))
    return 0


def _usage_error(text: str) -> int:
    print(f"workbench models: error: {text}", file=sys.stderr)
    return 2


def _measure(args: argparse.Namespace, names: list[str]) -> dict[str, ModelMeasurement | None]:
    """Every model of ``names`` measured or recalled, progress on stderr.

    Raises:
        ValueError: a setting is out of range (the message names it).
    """
    from workbench.core.devices.selection import DeviceError
    from workbench.core.training.tuning.measurement_cache import MeasurementCache
    from workbench.core.training.tuning.model_measurement import (
        measure_model,
        measurement_settings,
    )

    if args.steps < 0:
        raise ValueError(f"--steps: must be at least 1 (got {args.steps})")
    cache = MeasurementCache()
    measured: dict[str, ModelMeasurement | None] = {}
    for index, name in enumerate(names, 1):
        try:
            settings = measurement_settings(name, args.batch_size, args.crop_size, args.amp,
                                            args.finetune or "", args.device)
        except DeviceError as exc:
            raise ValueError(str(exc)) from exc
        precision = ("amp " + ("on" if settings.amp else "off")
                     if settings.device.startswith("cuda") else "float32")
        where = (f"{settings.device}, batch {settings.batch_size}, crop {settings.crop_size}, "
                 f"{precision}, {settings.finetune}")
        remembered = None if args.remeasure else cache.get(settings)
        if remembered is not None:
            print(f"[{index}/{len(names)}] {name} ({where}): remembered from "
                  f"{remembered.measured_at}", file=sys.stderr)
            measured[name] = remembered
            continue
        print(f"[{index}/{len(names)}] {name} ({where}): measuring\u2026", file=sys.stderr,
              flush=True)
        try:
            measurement = measure_model(settings, timed_steps=args.steps or None)
        except ValueError as exc:
            print(f"  {name} not measured: {exc}", file=sys.stderr)
            measured[name] = None
            continue
        assert measurement is not None  # nothing stops it here
        cache.put(measurement)
        measured[name] = measurement
        speed = measurement.train_images_per_second
        print(f"  {name}: " + (f"{speed:,.1f} training images/s, "
                               f"{measurement.latency_ms:.1f} ms a single image"
                               if speed is not None else measurement.error), file=sys.stderr)
    return measured


def _measured_footer(measured: dict[str, ModelMeasurement | None]) -> str:
    done = [m for m in measured.values() if m is not None]
    if not done:
        return "No model was measured."
    first = done[0]
    where = (f"Measured on {first.device_name} ({first.settings.device}, {first.precision}, "
             f"torch {first.torch_version}): training images/s with synthetic batches "
             "(the data loader not included), latency the median of single-image inferences.")
    if first.on_gpu:
        return (where + " Peak memory is the device's peak over the training steps; fits "
                "says whether the batch trained, with the largest batch that does.")
    return (where + " Peak memory and fits / largest batch are GPU-only figures (n/a on the "
            "CPU, which shares memory with the system and swaps before it runs out).")
