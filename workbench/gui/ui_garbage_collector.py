"""Python's garbage collection, done on the UI thread only: the app's policy, and the tests'.

Python's automatic collection runs on whichever thread happens to allocate when a generation's
count passes its threshold. In the training thread or a pool thread it can then destroy Qt
objects that belong to the UI thread and deadlock with it (it happened in an export job and in
the out-of-memory retry). So automatic collection is switched off and a timer on the UI thread
collects instead, with the thresholds Python would have used, as pyqtgraph's
``GarbageCollector`` does. The app and the GUI tests both start it with
:func:`start_ui_garbage_collector`, so the tests run the policy users get.

Full collections stay cheap because what lives as long as the process (torch, Qt, pyqtgraph)
is frozen out of the collector's sight once torch is loaded (see
``workbench.gui.workers.long_lived_objects``).
"""

from __future__ import annotations

import gc

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, QThread, QTimer

DEFAULT_INTERVAL_MS = 1000  # pyqtgraph's: garbage waits at most a second, collections stay rare

_collector: UiGarbageCollector | None = None


class UiGarbageCollector(QObject):
    """Keeps automatic collection off and collects what is due on a UI-thread timer.

    Attributes:
        thresholds: per generation, the count above which it is collected (Python's own
            ``gc.get_threshold()`` unless changed).
        collections: how many collections of generation 0, 1 and 2 this object has made.
    """

    def __init__(self, interval_ms: int = DEFAULT_INTERVAL_MS,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.thresholds: tuple[int, int, int] = gc.get_threshold()
        self.collections = [0, 0, 0]
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.collect_due)

    def start(self) -> None:
        """Switch automatic collection off and start the timer; on the UI thread only."""
        app = QCoreApplication.instance()
        if app is None or QThread.currentThread() is not app.thread():
            raise RuntimeError("the garbage collector's timer must run on the UI thread")
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Collect everything now, on this thread, and give collection back to Python."""
        self._timer.stop()
        gc.collect()
        gc.enable()

    def is_active(self) -> bool:
        """True while the timer collects (and automatic collection is off)."""
        return self._timer.isActive()

    def interval_ms(self) -> int:
        """Milliseconds between two checks."""
        return self._timer.interval()

    def set_interval_ms(self, interval_ms: int) -> None:
        """Check every ``interval_ms`` milliseconds from now on."""
        self._timer.setInterval(interval_ms)

    def collect_due(self) -> int | None:
        """Collect as Python's automatic collection would have by now: nothing until the
        youngest generation is over its threshold, then the oldest generation that is over its
        own. Returns the generation collected, or None."""
        counts = gc.get_count()
        if counts[0] <= self.thresholds[0]:
            return None
        generation = max(g for g in range(3) if counts[g] > self.thresholds[g])
        gc.collect(generation)
        self.collections[generation] += 1
        return generation


def start_ui_garbage_collector(interval_ms: int = DEFAULT_INTERVAL_MS) -> UiGarbageCollector:
    """Start the process's collector (created on the first call, owned by the application)
    and return it; call on the UI thread once the ``QApplication`` exists."""
    global _collector
    if _collector is None or not shiboken6.isValid(_collector):
        _collector = UiGarbageCollector(interval_ms, QCoreApplication.instance())
    _collector.set_interval_ms(interval_ms)
    _collector.start()
    return _collector
