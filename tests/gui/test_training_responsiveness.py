"""The UI thread stays responsive while a real run trains through the worker into the window."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QObject, QTimer, Slot

from workbench.gui.main_window import MainWindow

HEARTBEAT_MS = 10


class Heartbeat(QObject):
    """A 10 ms timer on the UI thread; lateness is how much later than 10 ms each tick came."""

    def __init__(self) -> None:
        super().__init__()
        self.lateness_ms: list[float] = []
        self._last = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(HEARTBEAT_MS)
        self._timer.timeout.connect(self._on_tick)

    @Slot(object)
    def start(self, _event: object = None) -> None:
        self._last = time.perf_counter()
        self._timer.start()

    @Slot(object)
    def stop(self, _event: object = None) -> None:
        self._timer.stop()

    @Slot()
    def _on_tick(self) -> None:
        now = time.perf_counter()
        self.lateness_ms.append(max(0.0, (now - self._last) * 1000.0 - HEARTBEAT_MS))
        self._last = now


def test_ui_heartbeat_during_training(qtbot, shapes_dataset, tiny_config, reraise_errors):
    window = MainWindow()
    qtbot.addWidget(window)
    window.ask_before_closing_during_training = False
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=30_000):
        window.open_folder(str(shapes_dataset))
    window.apply_config(tiny_config.replace(epochs=3))
    reraise_errors(window.controller)
    heartbeat = Heartbeat()
    # From the first event to the last: torch's one-time import before the run is not training.
    window.controller.run_started.connect(heartbeat.start)
    window.controller.run_ended.connect(heartbeat.stop)
    steps: list[object] = []
    window.controller.step_finished.connect(steps.append)

    with qtbot.waitSignal(window.controller.run_ended, timeout=120_000) as ended:
        assert window.start_training()
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)

    assert ended.args[0].status == "completed" and len(steps) == 12
    lateness = np.array(heartbeat.lateness_ms)
    assert len(lateness) > 50, "the run was too short to measure"
    p95, p99, worst = np.percentile(lateness, 95), np.percentile(lateness, 99), lateness.max()
    print(f"\nUI heartbeat lateness over {len(lateness)} ticks while training: "
          f"p95 {p95:.1f} ms, p99 {p99:.1f} ms, max {worst:.1f} ms")
    assert p99 <= 50.0
    assert worst <= 100.0
