"""``workbench models``: the models Workbench trains, with torchvision's figures for each."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Column -> (heading, value of a row for sorting). Figures sort ascending except accuracy,
# best first; small_cnn, which has no ImageNet figures, sorts last.
_HEADINGS = {"name": "model", "acc1": "acc@1 %", "params": "params M", "gflops": "GFLOPS",
             "size": "file MiB", "crop": "crop", "recipe": "recipe"}
SORT_COLUMNS = tuple(_HEADINGS)


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
                             "acc1, highest first (default: name)")
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


def sorted_rows(rows: list[CatalogueRow], column: str) -> list[CatalogueRow]:
    key: Callable[[CatalogueRow], Any] = lambda row: getattr(row, column)  # noqa: E731
    known = [row for row in rows if key(row) is not None]
    unknown = [row for row in rows if key(row) is None]
    return sorted(known, key=key, reverse=column == "acc1") + unknown


def format_table(rows: list[CatalogueRow]) -> str:
    table = [list(_HEADINGS.values())] + [row.cells() for row in rows]
    widths = [max(len(line[column]) for line in table) for column in range(len(table[0]))]
    lines = []
    for line in table:
        # Names and recipes left-aligned, figures right-aligned so their decimals line up.
        cells = [cell.ljust(width) if column in (0, len(line) - 1) else cell.rjust(width)
                 for column, (cell, width) in enumerate(zip(line, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _cmd_models(args: argparse.Namespace) -> int:
    print(format_table(sorted_rows(catalogue_rows(), args.sort)))
    print("Figures from torchvision's ImageNet weights; GFLOPS of one image at the crop. "
          "Choosing a model (--model) sets its crop and recipe in the settings not given.")
    return 0
