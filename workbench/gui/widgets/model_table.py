"""The model picker's table: every model with torchvision's figures and, once measured, what it
costs on this machine. Sortable by any column (numbers as numbers: 9 before 10), filtered by a
text that any cell may contain. It only draws; the dialog fills it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from workbench.core.runs.model_catalog import MODEL_LABELS, MODEL_NAMES, TORCHVISION_MODELS
from workbench.core.runs.model_defaults import defaults_for

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
NOT_MEASURED = "\u2014"
NOT_ON_CPU = "n/a (CPU)"


@dataclass(frozen=True)
class Column:
    """A column: heading, tooltip, and whether it holds a measurement."""

    heading: str
    tooltip: str
    measured: bool = False


COLUMNS: dict[str, Column] = {
    "model": Column("Model", "torchvision's name (what --model takes)"),
    "acc1": Column("acc@1 %", "ImageNet-1K top-1 accuracy of its weights"),
    "params": Column("params M", "parameters, millions"),
    "gflops": Column("GFLOPS", "cost of one image at its own crop"),
    "size": Column("file MiB", "download size of its ImageNet weights"),
    "crop": Column("crop", "the crop its weights were trained and evaluated at"),
    "recipe": Column("recipe", "optimiser, lr and schedule choosing it sets"),
    "train_speed": Column("train img/s", "training images a second on this machine: the run's "
                          "step on a synthetic batch", measured=True),
    "peak_memory": Column("peak MiB", "the GPU's peak memory while training at the batch "
                          "(GPU only)", measured=True),
    "latency": Column("latency ms", "median time of one image through the model",
                      measured=True),
    "fits": Column("fits (largest)", "whether the batch trains on the GPU, and the largest "
                   "batch that does (GPU only)", measured=True),
}
COLUMN_NAMES = tuple(COLUMNS)


class SortableItem(QTableWidgetItem):
    """A cell that sorts by the number (or text) in ``SORT_ROLE``; cells without one last."""

    def __lt__(self, other: QTableWidgetItem) -> bool:  # Qt's sort asks this
        mine, theirs = self.data(SORT_ROLE), other.data(SORT_ROLE)
        if mine is None or theirs is None:
            # Unknown figures go after the known ones whichever way the column is sorted.
            table = self.tableWidget()
            ascending = table is None or table.horizontalHeader().sortIndicatorOrder() \
                == Qt.SortOrder.AscendingOrder
            if mine is None and theirs is None:
                return False
            return (mine is None) != ascending
        if isinstance(mine, str) or isinstance(theirs, str):
            return str(mine).lower() < str(theirs).lower()
        return mine < theirs


def catalogue_values(model: str) -> dict[str, tuple[str, Any]]:
    """(text, sort value) of the catalogue columns for ``model``. Imports torchvision."""
    defaults = defaults_for(model)
    recipe = f"{defaults['optimizer']} lr {defaults['lr']:g}, {defaults['scheduler']}"
    values: dict[str, tuple[str, Any]] = {
        "model": (model, model), "crop": (str(defaults["crop_size"]), defaults["crop_size"]),
        "recipe": (recipe, recipe)}
    if model in TORCHVISION_MODELS:
        from workbench.core.runs.model_catalog import model_facts

        facts = model_facts(model)
        values.update(acc1=(f"{facts.acc1:.1f}", facts.acc1),
                      params=(f"{facts.params / 1e6:.1f}", facts.params / 1e6),
                      gflops=(f"{facts.gflops:.2f}", facts.gflops),
                      size=(f"{facts.file_mib:.1f}", facts.file_mib))
    else:
        values.update({name: ("-", None) for name in ("acc1", "params", "gflops", "size")})
    return values


def measured_values(measurement: Any) -> dict[str, tuple[str, Any]]:
    """(text, sort value) of the measured columns of a ``ModelMeasurement``."""
    speed = measurement.train_images_per_second
    values: dict[str, tuple[str, Any]] = {
        "train_speed": (f"{speed:,.1f}" if speed is not None else "out of memory", speed),
        "latency": (f"{measurement.latency_ms:.1f}" if measurement.latency_ms is not None
                    else NOT_MEASURED, measurement.latency_ms)}
    if not measurement.on_gpu:
        values.update(peak_memory=(NOT_ON_CPU, None), fits=(NOT_ON_CPU, None))
        return values
    peak = measurement.peak_memory_bytes
    largest = measurement.largest_batch
    values["peak_memory"] = (f"{peak / 2**20:,.0f}" if peak is not None else NOT_MEASURED,
                             peak / 2**20 if peak is not None else None)
    at_least = "\u2265" if measurement.largest_is_cap else ""
    values["fits"] = (("yes" if measurement.fits else "no")
                      + (f" ({at_least}{largest})" if largest is not None else ""), largest)
    return values


class ModelTable(QTableWidget):
    """One row a model, in catalogue order until the user sorts."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(len(MODEL_NAMES), len(COLUMNS), parent)
        self.setObjectName("modelTable")
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setVisible(False)
        for index, column in enumerate(COLUMNS.values()):
            header = QTableWidgetItem(column.heading)
            header.setToolTip(column.tooltip)
            self.setHorizontalHeaderItem(index, header)
        self._filter = ""
        for row, model in enumerate(MODEL_NAMES):
            values = catalogue_values(model)
            for name in COLUMN_NAMES:
                text, value = values.get(name, (NOT_MEASURED, None))
                self.setItem(row, COLUMN_NAMES.index(name), self._item(text, value, name))
            self.item(row, 0).setToolTip(MODEL_LABELS[model])
        self.setWordWrap(False)  # a recipe cut in two lines and elided read worse than one
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        # Catalogue order until a heading is clicked: enabling sorting sorts by the indicator.
        self.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.setSortingEnabled(True)

    # ------------------------------------------------------------------ reading
    def models(self) -> list[str]:
        """The models in the order shown (hidden rows too)."""
        return [self.item(row, 0).data(SORT_ROLE) for row in range(self.rowCount())]

    def visible_models(self) -> list[str]:
        return [model for row, model in enumerate(self.models()) if not self.isRowHidden(row)]

    def selected_models(self) -> list[str]:
        """The selected models that the filter shows, in the order shown."""
        rows = sorted({index.row() for index in self.selectedIndexes()})
        return [self.item(row, 0).data(SORT_ROLE) for row in rows if not self.isRowHidden(row)]

    def current_model(self) -> str:
        """The model of the current row ('' when none is current or it is filtered out)."""
        row = self.currentRow()
        if row < 0 or self.isRowHidden(row):
            return ""
        return self.item(row, 0).data(SORT_ROLE)

    def cell_text(self, model: str, column: str) -> str:
        return self.item(self._row_of(model), COLUMN_NAMES.index(column)).text()

    # ------------------------------------------------------------------ changing
    def select_model(self, model: str) -> None:
        row = self._row_of(model)
        self.setCurrentCell(row, 0)
        self.selectRow(row)

    def set_measurement(self, measurement: Any) -> None:
        """Fill the measured cells of the measurement's model."""
        self._fill(measurement.settings.model, measured_values(measurement))

    def set_measuring(self, model: str) -> None:
        """Mark the row being measured (its older figures cleared)."""
        self._fill(model, {**_unmeasured(), "train_speed": ("measuring\u2026", None)})

    def set_failed(self, model: str, reason: str) -> None:
        self._fill(model, {**_unmeasured(), "train_speed": ("not measured", None)})
        self.item(self._row_of(model), COLUMN_NAMES.index("train_speed")).setToolTip(reason)

    def clear_measurements(self) -> None:
        for model in MODEL_NAMES:
            self._fill(model, _unmeasured())

    def set_filter(self, text: str) -> None:
        """Show only the rows with a cell containing ``text`` (any case); all when empty."""
        self._filter = text.strip().lower()
        for row in range(self.rowCount()):
            cells = [self.item(row, column).text().lower() for column in range(len(COLUMNS))]
            cells.append(self.item(row, 0).toolTip().lower())
            self.setRowHidden(row, bool(self._filter)
                              and not any(self._filter in cell for cell in cells))

    # ------------------------------------------------------------------ helpers
    def _fill(self, model: str, values: dict[str, tuple[str, Any]]) -> None:
        sorting = self.isSortingEnabled()
        self.setSortingEnabled(False)  # else the row moves under us between two cells
        row = self._row_of(model)
        for name, (text, value) in values.items():
            self.setItem(row, COLUMN_NAMES.index(name), self._item(text, value, name))
        self.setSortingEnabled(sorting)
        if self._filter:
            self.set_filter(self._filter)

    def _row_of(self, model: str) -> int:
        for row in range(self.rowCount()):
            if self.item(row, 0).data(SORT_ROLE) == model:
                return row
        raise KeyError(model)

    @staticmethod
    def _item(text: str, value: Any, column: str) -> SortableItem:
        item = SortableItem(text)
        item.setData(SORT_ROLE, value)
        if column not in ("model", "recipe"):
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return item


def _unmeasured() -> dict[str, tuple[str, Any]]:
    return {name: (NOT_MEASURED, None) for name, column in COLUMNS.items() if column.measured}
