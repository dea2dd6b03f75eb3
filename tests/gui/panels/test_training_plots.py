"""RingBuffer and TrainingPlots: bounded memory, redraw only on change, NaN losses drawn as gaps."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from workbench.core.runs.events import EpochEnd, RunStart, StepStats
from workbench.gui.panels.training_plots import TrainingPlots, round_bound, sticky_y_range
from workbench.gui.widgets.ring_buffer import RingBuffer


def step(epoch: int, index: int, loss: float, rss: int | None = 2**30,
         allocated: int | None = None) -> StepStats:
    return StepStats(
        epoch=epoch, step=index, steps_in_epoch=10, global_step=(epoch - 1) * 10 + index,
        loss=loss, loss_smoothed=loss, accuracy=0.5, accuracy_smoothed=0.5, lr=0.01,
        images_per_second=100.0, data_wait_s=0.01, compute_s=0.03, memory_allocated=allocated,
        memory_reserved=allocated, memory_peak=allocated, memory_total=None, process_rss=rss,
    )


def run_start(memory_total: int | None) -> RunStart:
    return RunStart(run_dir="", device="cpu" if memory_total is None else "cuda:0",
                    device_name="CPU" if memory_total is None else "GPU",
                    memory_total=memory_total, amp=False, class_names=("a", "b"),
                    train_samples=80, val_samples=20, epochs=3, start_epoch=0,
                    steps_per_epoch=10, crops_per_sample=5, feature_cache=False,
                    dataset_summary="")


def test_ring_buffer_keeps_the_newest_points_in_order():
    buffer = RingBuffer(4)
    assert buffer.data()[0].size == 0 and not buffer.changed
    for i in range(6):
        buffer.append(i, 10 * i)
    xs, ys = buffer.data()
    assert xs.tolist() == [2, 3, 4, 5] and ys.tolist() == [20, 30, 40, 50]
    assert len(buffer) == buffer.capacity == 4 and buffer.changed
    assert buffer.last() == (5.0, 50.0)
    xs[0] = -1  # a copy: the plot owns what it was given
    assert buffer.data()[0][0] == 2
    buffer.clear()
    assert len(buffer) == 0 and buffer.last() is None
    with pytest.raises(ValueError):
        RingBuffer(0)


@pytest.fixture
def plots(qtbot) -> TrainingPlots:
    widget = TrainingPlots(refresh_ms=10_000)  # redraws happen when the test says
    qtbot.addWidget(widget)
    widget.resize(900, 600)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_nan_losses_are_kept_and_do_not_break_drawing(plots, qtbot):
    plots.set_run_start(run_start(None))
    for i in range(1, 11):
        plots.add_step(step(1, i, math.nan if i in (4, 5) else 1.0 / i))
    plots.add_epoch(EpochEnd(1, 3, math.nan, 0.5, 0.7, 0.6, (0.5, 0.7), ((1, 0), (0, 1)), 0.01,
                             1.0, 100.0, True, 1, 0.6, ""))
    plots.flush()
    qtbot.wait(50)  # paint

    xs, ys = plots._curves["loss_raw"].item.getOriginalDataset()
    assert len(xs) == 10 and np.isnan(ys).sum() == 2
    assert np.allclose(xs, np.arange(1, 11) / 10)
    assert plots.plotted_count("loss_train_epoch") == 0  # a NaN epoch average: no marker
    assert plots.plotted_count("loss_val_epoch") == 1
    assert np.isfinite(plots.loss_plot.getViewBox().viewRange()[1]).all()


def test_only_changed_curves_are_redrawn(plots):
    plots.set_run_start(run_start(None))
    plots.add_step(step(1, 1, 0.5))
    plots.flush()
    first = plots.redraw_count
    assert first > 0
    plots.flush()
    assert plots.redraw_count == first  # nothing new, nothing redrawn
    plots.add_epoch(EpochEnd(1, 3, 0.4, 0.5, 0.7, 0.6, (0.5, 0.7), ((1, 0), (0, 1)), 0.01,
                             1.0, 100.0, True, 1, 0.6, ""))
    plots.flush()
    assert plots.redraw_count == first + 4  # train/val loss and accuracy markers only


def test_memory_plot_says_what_a_cpu_run_shows(plots):
    plots.set_run_start(run_start(None))
    plots.add_step(step(1, 1, 0.5, rss=3 * 2**30))
    assert "process RSS (CPU: no GPU memory)" in plots.memory_title()
    assert plots.point_count("process_rss") == 1 and plots.point_count("memory_allocated") == 0
    assert not plots.total_memory_line.isVisible()

    plots.reset()
    plots.set_run_start(run_start(4 * 2**30))
    plots.add_step(step(1, 1, 0.5, allocated=2**30))
    assert "no GPU memory" not in plots.memory_title()
    assert "allocated" in plots.memory_title()
    assert plots.total_memory_line.isVisible() and plots.total_memory_line.value() == 4096
    assert plots.point_count("memory_allocated") == 1 and plots.point_count("process_rss") == 0


def test_the_red_band_shows_only_while_the_input_starves_the_device(plots, qtbot):
    def steps(first: int, count: int, wait_s: float, compute_s: float) -> None:
        for index in range(first, first + count):
            plots.add_step(dataclasses.replace(step(1, index, 0.5), data_wait_s=wait_s,
                                               compute_s=compute_s))
        plots.flush()

    def shown() -> bool:
        return plots.starving_band.isVisible() or plots.starving_label.isVisible()

    assert not shown()  # no data yet
    plots.set_run_start(run_start(None))
    steps(1, 10, wait_s=0.0, compute_s=0.05)
    assert not shown()  # 0% waiting
    steps(11, 10, wait_s=0.01, compute_s=0.05)
    assert not shown()  # 17%: below the input-bound share
    steps(21, 20, wait_s=0.05, compute_s=0.05)
    qtbot.wait(20)
    assert plots.starving_band.isVisible() and plots.starving_label.isVisible()
    assert plots.starving
    steps(41, 20, wait_s=0.001, compute_s=0.05)
    assert not shown()  # the input caught up
    steps(61, 20, wait_s=0.1, compute_s=0.05)
    assert shown()
    plots.reset()
    assert not shown()  # a new run starts clean


def test_slow_first_steps_of_an_epoch_are_not_starvation(plots):
    plots.set_run_start(run_start(None))
    for index in (1, 2):  # loader processes starting up
        plots.add_step(dataclasses.replace(step(1, index, 0.5), data_wait_s=2.0,
                                           compute_s=0.05))
    plots.add_step(dataclasses.replace(step(1, 3, 0.5), data_wait_s=0.0, compute_s=0.05))
    plots.flush()
    assert not plots.starving_band.isVisible()


def y_range(plot) -> tuple[float, float]:
    low, high = plot.getViewBox().viewRange()[1]
    return float(low), float(high)


def test_y_axes_hold_still_while_new_points_fit_and_always_show_every_point(plots, qtbot):
    """A run's loss falls and its accuracy rises on every refresh: the loss axis keeps one
    round range while the points fit, accuracy keeps 0-100 % (relabelling an axis repaints
    the whole canvas), and every point drawn so far stays inside it."""
    plots.set_run_start(run_start(None))
    loss_ranges, accuracy_ranges = set(), set()
    losses = []
    for index in range(1, 31):
        loss = 2.3 * 0.93 ** index
        losses.append(loss)
        event = dataclasses.replace(step(1, index, loss), accuracy_smoothed=0.3 + index / 50)
        plots.add_step(event)
        plots.flush()
        qtbot.wait(5)  # let a paint settle any pending range change
        loss_low, loss_high = y_range(plots.loss_plot)
        assert loss_low <= min(losses) and max(losses) <= loss_high
        loss_ranges.add((loss_low, loss_high))
        accuracy_ranges.add(y_range(plots.accuracy_plot))
    assert loss_ranges == {(0.0, 2.5)}
    assert accuracy_ranges == {(0.0, 100.0)}

    plots.add_step(step(1, 31, 40.0))  # a spike: the range grows to hold it
    plots.flush()
    qtbot.wait(5)
    assert y_range(plots.loss_plot) == (0.0, 50.0)
    plots.reset()
    assert y_range(plots.loss_plot) == (0.0, 1.0)  # the previous run's range is gone


def test_the_memory_axis_shows_the_cards_total_above_the_curves(plots, qtbot):
    plots.set_run_start(run_start(4 * 2**30))  # 4,096 MiB card
    plots.add_step(step(1, 1, 0.5, allocated=2**30))
    plots.flush()
    qtbot.wait(5)
    assert y_range(plots.memory_plot) == (0.0, 5000.0)


def test_round_bounds_and_when_a_range_moves():
    assert [round_bound(v) for v in (0.3, 1.0, 1.2, 2.2, 4.0, 7.0, 4096.0)] == \
        [0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 5000.0]
    assert sticky_y_range((0.0, 2.5), (0.1, 2.3)) == (0.0, 2.5)  # fits: stays
    assert sticky_y_range((0.0, 2.5), (0.1, 0.4)) == (0.0, 0.5)  # fills 16%: narrows
    assert sticky_y_range((0.0, 2.5), (-0.2, 1.0)) == (-0.25, 2.0)  # below zero
    assert sticky_y_range((0.0, 1.0), (0.0, 0.0)) == (0.0, 1.0)  # all zero
