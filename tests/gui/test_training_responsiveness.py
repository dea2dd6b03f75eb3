"""A real run trains through the worker into the window off the UI thread, which keeps running
its event loop, and the window receives the run's events in order.

How late the UI thread runs meanwhile is measured by ``workbench bench --only ui``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import workbench.core.training.engine
from workbench.gui.window.main_window import MainWindow


def test_training_runs_off_the_ui_thread_and_events_arrive_in_order(
    qtbot, monkeypatch, shapes_dataset, tiny_config, reraise_errors, ui_ticks
):
    real_train = workbench.core.training.engine.train
    training_threads: list[int] = []

    def recording_train(*args, **kwargs):
        training_threads.append(threading.get_ident())
        return real_train(*args, **kwargs)

    monkeypatch.setattr(workbench.core.training.engine, "train", recording_train)
    window = MainWindow()
    qtbot.addWidget(window)
    window.ask_before_closing_during_training = False
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=30_000):
        window.open_folder(str(shapes_dataset))
    window.apply_config(tiny_config.replace(epochs=2))
    reraise_errors(window.controller)
    events: list[object] = []
    heartbeat = ui_ticks
    controller = window.controller
    for signal in (controller.run_started, controller.step_finished, controller.epoch_ended,
                   controller.run_ended):
        signal.connect(events.append)
    # Counting from the first event to the last: the run's own time, not torch's import.
    controller.run_started.connect(lambda _event: heartbeat.timer.start())
    controller.run_ended.connect(lambda _event: heartbeat.timer.stop())
    cpu_at_steps: list[dict[int, tuple[int, int]]] = []
    controller.step_finished.connect(lambda _event: cpu_at_steps.append(_threads_cpu()))

    with qtbot.waitSignal(controller.run_ended, timeout=120_000) as ended:
        assert window.start_training()
    qtbot.waitUntil(lambda: not controller.is_running(), timeout=30_000)

    assert ended.args[0].status == "completed"
    assert training_threads and training_threads[0] != threading.get_ident()
    # The threads that did the training's work ran below the UI thread, so the UI thread gets a
    # core whenever it has work (the training thread, torch's intra-op pool it started, ...).
    ui_nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    first, last = cpu_at_steps[0], cpu_at_steps[-1]
    worked = {tid: (ticks - first[tid][0], nice) for tid, (ticks, nice) in last.items()
              if tid in first and tid != threading.get_native_id()}
    total = sum(ticks for ticks, _ in worked.values())
    below_ui = sum(ticks for ticks, nice in worked.values() if nice >= ui_nice + 5)
    assert total > 0 and below_ui >= 0.9 * total, (below_ui, total, worked)
    assert heartbeat.ticks > 0, "the UI thread did not run its timers while training"
    names = [type(event).__name__ for event in events]
    steps_per_epoch = events[0].steps_per_epoch
    epoch = ["StepStats"] * steps_per_epoch + ["EpochEnd"]
    assert names == ["RunStart", *epoch, *epoch, "RunEnd"]
    steps = [event for event in events if type(event).__name__ == "StepStats"]
    assert [(s.epoch, s.step) for s in steps] == [
        (e, s) for e in (1, 2) for s in range(1, steps_per_epoch + 1)]
    assert [s.global_step for s in steps] == list(range(1, 2 * steps_per_epoch + 1))


def _threads_cpu() -> dict[int, tuple[int, int]]:
    """CPU clock ticks (user + system) and nice level of each thread of this process."""
    threads = {}
    for stat in Path("/proc/self/task").glob("*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        # After the name: state is field 3, utime 14, stime 15, nice 19 (proc(5)).
        threads[int(stat.parent.name)] = (int(fields[11]) + int(fields[12]), int(fields[16]))
    return threads
