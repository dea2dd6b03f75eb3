"""The garbage-collection policy the app and these tests share: no collection off the UI thread,
even with collections every few milliseconds while a real run trains in its thread."""

from __future__ import annotations

import gc
import threading

from workbench.core.runs.config import TrainConfig
from workbench.core.training import engine  # noqa: F401 - see the test
from workbench.gui.workers.training_worker import TrainingController

RUN_TIMEOUT_MS = 120_000


def test_a_run_finishes_under_frequent_collections_all_made_on_the_ui_thread(
        qtbot, ui_garbage_collector, tiny_config: TrainConfig, monkeypatch, reraise_errors):
    # torch is imported above, not in the training thread under these collections: each full
    # collection walks the whole heap, and importing torch under one every few milliseconds
    # takes minutes (the app collects the oldest generation rarely; see its thresholds).
    collector = ui_garbage_collector  # started by tests/gui/conftest.py as the app starts it
    monkeypatch.setattr(collector, "thresholds", (0, 0, 0))  # every check collects something
    collector.set_interval_ms(5)
    collecting_threads: list[tuple[int, int]] = []

    def record(phase: str, info: dict) -> None:  # runs in whichever thread collects
        if phase == "start":
            collecting_threads.append((threading.get_ident(), info["generation"]))

    controller = TrainingController()
    reraise_errors(controller)
    ends = []
    controller.run_ended.connect(ends.append)
    gc.callbacks.append(record)
    try:
        with qtbot.waitSignal(controller.finished, timeout=RUN_TIMEOUT_MS):
            controller.start(tiny_config)
    finally:
        gc.callbacks.remove(record)

    assert [end.status for end in ends] == ["completed"]
    assert not gc.isenabled() and collector.is_active()
    ui_thread = threading.get_ident()
    assert {ident for ident, _ in collecting_threads} == {ui_thread}
    full = sum(1 for _, generation in collecting_threads if generation == 2)
    assert full >= 10, collecting_threads  # the stress really happened
