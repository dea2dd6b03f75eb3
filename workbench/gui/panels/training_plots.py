"""Live training plots: loss, accuracy, memory, throughput and the share of time spent waiting.

Curves are created once. Events append points to preallocated ring buffers; a ~100 ms timer
redraws (``setData``) only the curves whose buffers changed, so a fast run costs the UI thread a
few appends per step and at most ten small redraws a second. The x axis is in epochs: a step's
x is ``epoch - 1 + step / steps_in_epoch`` and an epoch's averages sit at ``x = epoch``.

Each plot's legend is written into its title row, after the title, so it never covers curves.
"""

from __future__ import annotations

import html
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.core.runs.events import EpochEnd, RunStart, StepStats
from workbench.core.training.bottleneck import INPUT_BOUND_SHARE, WARMUP_STEPS
from workbench.gui.widgets.ring_buffer import RingBuffer

STEP_CAPACITY = 20_000
EPOCH_CAPACITY = 2_000
STARVING_PERCENT = 100.0 * INPUT_BOUND_SHARE
# Recent steps whose waiting share decides the red band: enough to ride out one slow batch.
STARVING_WINDOW = 20
MIB = 1024.0**2
AXIS_COLOUR = "#444444"
TITLE_SIZE = "9pt"
TITLE_ROW_HEIGHT = 22
TITLE_X = 40  # past the left axis's tick labels
CPU_MEMORY_NOTE = "CPU: no GPU memory"
# A y range is narrowed again only when the data fill less than this share of it.
SHRINK_BELOW = 0.4
# Room left above the highest point, so that it is not drawn on the frame.
HEADROOM = 1.05
MINIMUM_PLOT_HEIGHT = 150  # below this a plot is a stripe, not a chart (DESIGN targets)
_MEMORY_CURVES = (("memory_allocated", "allocated"), ("memory_reserved", "reserved"),
                  ("memory_peak", "peak"), ("process_rss", "process RSS"))


@dataclass
class _Curve:
    buffer: RingBuffer
    item: pg.PlotDataItem
    plot: pg.PlotItem
    # Lowest and highest finite y of the points last drawn; None when there are none.
    y_bounds: tuple[float, float] | None = None


@dataclass
class _Title:
    """A plot's title and the legend entries written after it (glyph, colour, label)."""

    text: str
    item: pg.TextItem
    entries: list[tuple[str, str, str]] = field(default_factory=list)

    def html(self) -> str:
        legend = "&nbsp;&nbsp;".join(
            f'<span style="color:{colour}">{glyph}</span>&nbsp;{html.escape(label)}'
            for glyph, colour, label in self.entries)
        return f"<b>{html.escape(self.text)}</b>&nbsp;&nbsp;&nbsp;{legend}"


class TrainingPlots(QWidget):
    """Five plots fed by ``add_step`` / ``add_epoch``; ``reset`` before each run."""

    def __init__(self, parent: QWidget | None = None, refresh_ms: int = 100) -> None:
        super().__init__(parent)
        self._curves: dict[str, _Curve] = {}
        self._titles: dict[int, _Title] = {}
        self._canvas = pg.GraphicsLayoutWidget(self)
        self._canvas.setBackground("w")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._canvas)
        self.loss_plot = self._new_plot("Loss", "loss", 0, 0)
        self.accuracy_plot = self._new_plot("Accuracy", "%", 0, 1)
        self.memory_plot = self._new_plot("Memory", "MiB", 1, 0)
        self.throughput_plot = self._new_plot("Throughput", "images/s", 1, 1)
        self.data_wait_plot = self._new_plot("Time waiting for data", "% of step", 2, 0, colspan=2)
        self._make_loss_curves()
        self._make_accuracy_curves()
        self._make_memory_curves()
        self._make_throughput_and_wait_curves()
        for plot in self._plots():
            self._update_title(plot)
        for column in (0, 1):
            self._canvas.ci.layout.setColumnStretchFactor(column, 1)
        self._canvas.setMinimumHeight(3 * MINIMUM_PLOT_HEIGHT)
        self._show_memory_curves(gpu=False)
        self._recent_wait: deque[tuple[float, float]] = deque(maxlen=STARVING_WINDOW)
        self._redraws = 0
        self._timer = QTimer(self)
        self._timer.setInterval(refresh_ms)

        self._timer.timeout.connect(self._update_curves)

        self._timer.start()

    # ------------------------------------------------------------------ public API
    def reset(self) -> None:
        """Forget every point (before a new run)."""
        for curve in self._curves.values():
            curve.buffer.clear()
        self.total_memory_line.hide()
        self._recent_wait.clear()
        self._update_starving()
        for plot in self._plots():
            # Empty curves leave the axes where the previous run had them: show a neutral
            # range until new points arrive (y then grows to round bounds that hold them).
            fixed_y = plot in (self.accuracy_plot, self.data_wait_plot)  # always 0-100 %
            plot.setRange(xRange=(0, 1), yRange=None if fixed_y else (0, 1), padding=0)
            plot.enableAutoRange(axis="x", enable=True)
        self.flush()

    def set_run_start(self, event: RunStart) -> None:
        """Fix the x axis to the run's epochs (from 0 when earlier epochs are drawn already);
        show the card's total memory, or say that a CPU run has no GPU memory figures."""
        # A resumed run's earlier epochs, drawn before it started, stay in view.
        first = 0 if any(len(curve.buffer) for curve in self._curves.values()) \
            else event.start_epoch
        for plot in self._plots():
            # A fixed x range shows how far the run has come, and saves re-laying out the
            # x axis on every point.
            plot.enableAutoRange(axis="x", enable=False)
            plot.setXRange(first, max(event.epochs, event.start_epoch + 1), padding=0.02)
        if event.memory_total:
            mib = event.memory_total / MIB
            self.total_memory_line.setValue(mib)
            self.total_memory_line.label.setFormat(f"card total {mib / 1024:.1f} GiB")
            self.total_memory_line.show()
            self._show_memory_curves(gpu=True)
        else:
            self.total_memory_line.hide()
            self._show_memory_curves(gpu=False)

    def add_step(self, event: StepStats) -> None:
        """Append one step's figures (NaN losses are kept and drawn as gaps)."""
        steps = max(1, event.steps_in_epoch)
        x = (event.epoch - 1) + event.step / steps
        self._append("loss_raw", x, event.loss)
        self._append("loss_smoothed", x, event.loss_smoothed)
        self._append("accuracy_smoothed", x, 100.0 * event.accuracy_smoothed)
        self._append("throughput", x, event.images_per_second)
        self._append("data_wait", x, 100.0 * event.data_wait_fraction)
        if event.step > WARMUP_STEPS:  # loader start-up is not starvation
            self._recent_wait.append((event.data_wait_s, event.compute_s))
        for name, value in (("memory_allocated", event.memory_allocated),
                            ("memory_reserved", event.memory_reserved),
                            ("memory_peak", event.memory_peak)):
            if value is not None:
                self._append(name, x, value / MIB)
        if event.memory_allocated is None and event.process_rss is not None:
            self._append("process_rss", x, event.process_rss / MIB)

    def add_epoch(self, event: EpochEnd) -> None:
        """Append an epoch's train and validation averages (a NaN average gets no marker)."""
        x = float(event.epoch)
        for name, value in (("loss_train_epoch", event.train_loss),
                            ("loss_val_epoch", event.val_loss),
                            ("accuracy_train_epoch", 100.0 * event.train_accuracy),
                            ("accuracy_val_epoch", 100.0 * event.val_accuracy)):
            if math.isfinite(value):  # a marker curve of only NaN upsets pyqtgraph's bounds
                self._append(name, x, value)

    def point_count(self, name: str) -> int:
        """Points buffered for curve ``name`` (e.g. 'loss_raw', 'accuracy_val_epoch')."""
        return len(self._curves[name].buffer)

    def plotted_count(self, name: str) -> int:
        """Points the curve ``name`` currently draws (after the last redraw)."""
        xs, _ = self._curves[name].item.getOriginalDataset()
        return 0 if xs is None else len(xs)

    @property
    def starving(self) -> bool:
        """Whether the plot shows the red band: the recent steps waited at least
        ``STARVING_PERCENT`` of their time for data (the bottleneck's input-bound share)."""
        return self.starving_band.isVisible()

    @property
    def redraw_count(self) -> int:
        """How many times the timer has called ``setData`` on some curve."""
        return self._redraws

    def flush(self) -> None:
        """Redraw now, visible or not (e.g. when a run ends)."""
        self._update_curves(force=True)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self._update_curves(force=True)  # catch up on what arrived while hidden

    def plot_items(self) -> tuple[pg.PlotItem, ...]:
        """The five plots: loss, accuracy, memory, throughput, time waiting for data."""
        return self._plots()

    # ------------------------------------------------------------------ refreshes
    def _update_curves(self, force: bool = False) -> None:
        if not force and not self.isVisible():
            return  # buffers keep their changed flags; showEvent redraws
        self._update_starving()
        changed_plots: list[pg.PlotItem] = []
        for curve in self._curves.values():
            if curve.buffer.changed:
                curve.buffer.changed = False
                xs, ys = curve.buffer.data()
                curve.item.setData(xs, ys)
                finite = ys[np.isfinite(ys)]
                curve.y_bounds = (float(finite.min()), float(finite.max())) if finite.size \
                    else None
                self._redraws += 1
                if curve.plot not in changed_plots:
                    changed_plots.append(curve.plot)
        for plot in changed_plots:
            self._fit_y_range(plot)

    def _fit_y_range(self, plot: pg.PlotItem) -> None:
        """Keep ``plot``'s y range while its drawn points fit in it; move it, to a round
        bound, only when they leave it or fill less than ``SHRINK_BELOW`` of it. Following
        every new maximum (pyqtgraph's auto-range) relabels the axis and repaints the whole
        canvas on most refreshes; on a busy machine those paints made the window late."""
        if plot in (self.accuracy_plot, self.data_wait_plot):
            return  # always 0-100 %
        bounds = [curve.y_bounds for curve in self._curves.values()
                  if curve.plot is plot and curve.y_bounds is not None
                  and curve.item.isVisible()]
        if plot is self.memory_plot and self.total_memory_line.isVisible():
            total = float(self.total_memory_line.value())
            bounds.append((total, total))
        if not bounds:
            return
        data = (min(low for low, _ in bounds), max(high for _, high in bounds))
        current = tuple(plot.viewRange()[1])
        wanted = sticky_y_range((current[0], current[1]), data)
        if wanted != current:
            plot.setYRange(*wanted, padding=0)

    def _update_starving(self) -> None:
        """Red band and words only while the recent steps wait too long for data."""
        wait = sum(w for w, _ in self._recent_wait)
        total = wait + sum(c for _, c in self._recent_wait)
        starving = total > 0 and 100.0 * wait / total >= STARVING_PERCENT
        if starving != self.starving_band.isVisible():
            self.starving_band.setVisible(starving)
            self.starving_label.setVisible(starving)

    def _show_memory_curves(self, gpu: bool) -> None:
        """GPU runs draw allocator figures; CPU runs draw the process's resident memory, and
        say why there is no GPU memory."""
        title = self._titles[id(self.memory_plot)]
        title.entries = []
        for name, label in _MEMORY_CURVES:
            item = self._curves[name].item
            wanted = gpu != (name == "process_rss")
            item.setVisible(wanted)
            if wanted:
                title.entries.append(_legend_entry(item, label))
        if not gpu:
            title.entries.append(("", AXIS_COLOUR, f"({CPU_MEMORY_NOTE})"))
        self._update_title(self.memory_plot)

    def memory_title(self) -> str:
        """The memory plot's title row as plain text (title, legend and note)."""
        title = self._titles[id(self.memory_plot)]
        return " ".join([title.text, *(f"{glyph} {label}".strip()
                                       for glyph, _, label in title.entries)])

    def _update_title(self, plot: pg.PlotItem) -> None:
        title = self._titles[id(plot)]
        title.item.setHtml(f'<span style="color:{AXIS_COLOUR}; font-size:{TITLE_SIZE}">'
                           f"{title.html()}</span>")

    # ------------------------------------------------------------------ construction
    def _plots(self) -> tuple[pg.PlotItem, ...]:
        return (self.loss_plot, self.accuracy_plot, self.memory_plot, self.throughput_plot,
                self.data_wait_plot)

    def _append(self, name: str, x: float, y: float) -> None:
        self._curves[name].buffer.append(x, y if y is not None else math.nan)

    def _new_plot(self, title: str, y_label: str, row: int, col: int,
                  colspan: int = 1) -> pg.PlotItem:
        plot = self._canvas.addPlot(row=row, col=col, colspan=colspan)
        # The title is drawn in the plot's (empty) title row rather than laid out in it: a
        # laid-out title as long as its legend would take width from the plot beside it.
        item = pg.TextItem(anchor=(0, 0))
        item.setParentItem(plot)
        item.setPos(TITLE_X, 0)
        self._titles[id(plot)] = _Title(title, item)
        plot.layout.setRowFixedHeight(0, TITLE_ROW_HEIGHT)
        plot.setLabel("left", y_label)
        plot.setLabel("bottom", "epoch")
        plot.setDownsampling(auto=True, mode="peak")
        plot.setClipToView(True)
        for axis in ("left", "bottom"):
            plot.getAxis(axis).setPen(AXIS_COLOUR)
            plot.getAxis(axis).setTextPen(AXIS_COLOUR)
            # Relabelling an axis on every range change (SI prefixes) costs a layout pass.
            plot.getAxis(axis).enableAutoSIPrefix(False)
        plot.setMinimumHeight(MINIMUM_PLOT_HEIGHT)
        plot.setYRange(0, 1, padding=0)  # grows to the data in _fit_y_range
        plot.enableAutoRange(axis="y", enable=False)
        return plot

    def _add_curve(self, plot: pg.PlotItem, name: str, label: str, pen: object,
                   capacity: int = STEP_CAPACITY, symbol: str | None = None,
                   legend: bool = True) -> None:
        item = plot.plot(pen=pen, symbol=symbol, symbolSize=7,
                         symbolBrush=pg.mkPen(pen).color() if symbol else None,
                         symbolPen=None, connect="finite")
        self._curves[name] = _Curve(RingBuffer(capacity), item, plot)
        if legend:
            self._titles[id(plot)].entries.append(_legend_entry(item, label))

    def _make_loss_curves(self) -> None:
        plot = self.loss_plot
        self._add_curve(plot, "loss_raw", "step", pg.mkPen((31, 119, 180, 60), width=1))
        self._add_curve(plot, "loss_smoothed", "smoothed", pg.mkPen("#1f77b4", width=2))
        self._add_curve(plot, "loss_train_epoch", "train", pg.mkPen("#ff7f0e", width=2),
                        EPOCH_CAPACITY, "o")
        self._add_curve(plot, "loss_val_epoch", "val", pg.mkPen("#2ca02c", width=2),
                        EPOCH_CAPACITY, "s")

    def _make_accuracy_curves(self) -> None:
        plot = self.accuracy_plot
        self._add_curve(plot, "accuracy_smoothed", "smoothed",
                        pg.mkPen((31, 119, 180, 140), width=1))
        self._add_curve(plot, "accuracy_train_epoch", "train",
                        pg.mkPen("#ff7f0e", width=2), EPOCH_CAPACITY, "o")
        self._add_curve(plot, "accuracy_val_epoch", "val",
                        pg.mkPen("#2ca02c", width=2), EPOCH_CAPACITY, "s")
        plot.setYRange(0, 100, padding=0)

    def _make_memory_curves(self) -> None:
        plot = self.memory_plot
        self._add_curve(plot, "memory_allocated", "allocated", pg.mkPen("#1f77b4", width=2))
        self._add_curve(plot, "memory_reserved", "reserved", pg.mkPen("#9467bd", width=2))
        self._add_curve(plot, "memory_peak", "peak", pg.mkPen("#d62728", width=1,
                                                              style=Qt.PenStyle.DashLine))
        self._add_curve(plot, "process_rss", "process RSS", pg.mkPen("#7f7f7f", width=2))
        self.total_memory_line = pg.InfiniteLine(
            angle=0, movable=False, pen=pg.mkPen("#d62728", width=1, style=Qt.PenStyle.DotLine),
            label="card total", labelOpts={"position": 0.1, "color": "#d62728"},
        )
        plot.addItem(self.total_memory_line, ignoreBounds=False)
        self.total_memory_line.hide()

    def _make_throughput_and_wait_curves(self) -> None:
        # One curve each: the title says what it is, a legend would only repeat it.
        self._add_curve(self.throughput_plot, "throughput", "images/s",
                        pg.mkPen("#17becf", width=2), legend=False)
        plot = self.data_wait_plot
        self.starving_band = pg.LinearRegionItem(
            values=(STARVING_PERCENT, 100.0), orientation="horizontal", movable=False,
            brush=pg.mkBrush(214, 39, 40, 40), pen=pg.mkPen(None))
        plot.addItem(self.starving_band, ignoreBounds=True)
        self.starving_label = pg.TextItem("input pipeline is starving the device",
                                          color="#b71c1c", anchor=(0, 0))
        self.starving_label.setParentItem(plot.getViewBox())
        self.starving_label.setPos(6, 4)
        self.starving_band.hide()  # until steps show it (see _update_starving)
        self.starving_label.hide()
        self._add_curve(plot, "data_wait", "waiting for data", pg.mkPen("#8c564b", width=2),
                        legend=False)
        plot.setYRange(0, 100, padding=0)
        plot.enableAutoRange(axis="y", enable=False)
        plot.setMouseEnabled(y=False)


def round_bound(value: float) -> float:
    """The smallest of 1, 2, 2.5 or 5 times a power of ten that is >= ``value`` (> 0)."""
    if not value > 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for mantissa in (1.0, 2.0, 2.5, 5.0, 10.0):
        bound = mantissa * power
        if bound >= value * (1 - 1e-12):
            return bound
    return 10.0 * power


def sticky_y_range(current: tuple[float, float], data: tuple[float, float]
                   ) -> tuple[float, float]:
    """The y range to show ``data`` (lowest, highest finite y) in: ``current`` while the data
    fit in it and fill at least ``SHRINK_BELOW`` of its height above zero; otherwise from 0
    (or a round bound below a negative lowest) to a round bound above the highest, with
    ``HEADROOM``."""
    low, high = data
    fits = current[0] <= low and high <= current[1]
    if fits and high >= SHRINK_BELOW * current[1]:
        return current
    bottom = 0.0 if low >= 0 else -round_bound(-low * HEADROOM)
    top = round_bound(high * HEADROOM) if high > 0 else 1.0
    return bottom, top


def _legend_entry(item: pg.PlotDataItem, label: str) -> tuple[str, str, str]:
    """(glyph, colour, label) drawing ``item`` in a title: its marker, or a line."""
    opts = item.opts
    colour = pg.mkPen(opts["pen"]).color()
    if opts.get("symbol") == "o":
        glyph = "\u25cf"
    elif opts.get("symbol") == "s":
        glyph = "\u25a0"
    elif pg.mkPen(opts["pen"]).style() != Qt.PenStyle.SolidLine:
        glyph = "\u2504"
    else:
        glyph = "\u25ac"
    # A faint curve is drawn over white: its swatch is that blend, made a little stronger.
    alpha = max(colour.alphaF(), 0.45)
    blend = [round(255 - alpha * (255 - c)) for c in (colour.red(), colour.green(), colour.blue())]
    return glyph, "#{:02x}{:02x}{:02x}".format(*blend), label
