"""Rows of the benchmark table: one measured comparison each, with its target and verdict.

Every benchmark returns ``BenchRow``s; the suite prints them as one table and writes them as
JSON. A row compares the workbench figure with a baseline measured side by side in the same
run (``ratio``), or states an absolute figure against a limit (latency, start-up time), or
just reports a figure (absolute images/s, peak memory) with no target.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

# How a row's target is checked.
AT_LEAST_RATIO = "ratio_at_least"  # ratio >= target
AT_MOST_VALUE = "value_at_most"  # workbench figure <= target
INFO = "info"  # no target: a figure worth reporting


@dataclass(frozen=True)
class BenchRow:
    """One line of the table.

    Attributes:
        group: the benchmark that measured it ("loader", "training", ...).
        what: what was compared, in words.
        workbench: the workbench figure, in ``unit``.
        baseline: the figure it is compared with, measured in the same run (None for
            absolute rows).
        unit: unit of ``workbench`` and ``baseline`` ("img/s", "s", "ms", "GiB", "batch").
        ratio: how many times better the workbench figure is (higher is better for every
            ratio in the table), or None.
        target_kind: ``AT_LEAST_RATIO``, ``AT_MOST_VALUE`` or ``INFO``.
        target: the number the figure is held to (None for ``INFO``).
        details: the settings it was measured with and the raw measurements.
    """

    group: str
    what: str
    workbench: float
    baseline: float | None
    unit: str
    ratio: float | None
    target_kind: str
    target: float | None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def met(self) -> bool | None:
        """Whether the target is met; None for rows without a target."""
        if self.target_kind == AT_LEAST_RATIO:
            return self.ratio is not None and self.ratio >= self.target
        if self.target_kind == AT_MOST_VALUE:
            return self.workbench <= self.target
        return None

    @property
    def target_text(self) -> str:
        if self.target_kind == AT_LEAST_RATIO:
            return f">= {self.target:g}x"
        if self.target_kind == AT_MOST_VALUE:
            return f"<= {self.target:g} {self.unit}"
        return ""

    def to_dict(self) -> dict[str, Any]:
        document = asdict(self)
        document["met"] = self.met
        document["target_text"] = self.target_text
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> BenchRow:
        names = cls.__dataclass_fields__
        return cls(**{key: value for key, value in document.items() if key in names})


def ratio_row(group: str, what: str, workbench: float, baseline: float, unit: str,
              target: float | None, higher_is_better: bool = True, **details: Any) -> BenchRow:
    """A side-by-side comparison; the ratio is oriented so that above 1 means faster."""
    ratio = workbench / baseline if higher_is_better else baseline / workbench
    kind = AT_LEAST_RATIO if target is not None else INFO
    return BenchRow(group, what, workbench, baseline, unit, ratio, kind, target, details)


def limit_row(group: str, what: str, value: float, unit: str, limit: float,
              **details: Any) -> BenchRow:
    """An absolute figure held to an upper limit (latency, start-up time)."""
    return BenchRow(group, what, value, None, unit, None, AT_MOST_VALUE, limit, details)


def info_row(group: str, what: str, value: float, unit: str, **details: Any) -> BenchRow:
    """A figure reported without a target (absolute images/s, memory)."""
    return BenchRow(group, what, value, None, unit, None, INFO, None, details)


def format_table(rows: list[BenchRow]) -> str:
    """The rows as an aligned plain-text table with a verdict column."""
    header = ("what", "workbench", "baseline", "ratio", "target", "met")
    lines = [header]
    for row in rows:
        lines.append((
            row.what,
            _figure(row.workbench, row.unit),
            _figure(row.baseline, row.unit),
            f"{row.ratio:.2f}x" if row.ratio is not None else "",
            row.target_text,
            {True: "yes", False: "NO", None: ""}[row.met],
        ))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = []
    for index, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True)]
        text.append("  ".join(cells).rstrip())
        if index == 0:
            text.append("  ".join("-" * w for w in widths))
    return "\n".join(text)


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if isinstance(value, int):
        return f"{value:,} {unit}"
    if not math.isfinite(value):
        return f"{value} {unit}"
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2 if abs(value) >= 1 else 3
    return f"{value:,.{digits}f} {unit}"
