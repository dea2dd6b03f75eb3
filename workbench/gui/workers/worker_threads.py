"""A worker's own QThread, wired the superqt way, and waiting (with the event loop running)
for a worker thread's ``finished`` signal."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEventLoop, QObject, QThread, QTimer, SignalInstance


def thread_for(worker: QObject, name: str) -> QThread:
    """A new (not yet started) thread named ``name`` that runs ``worker.run`` when started;
    the worker's ``finished`` ends it, and both delete themselves (``deleteLater``) once it
    has. The caller keeps both references while the work lasts."""
    thread = QThread()
    thread.setObjectName(name)
    worker.moveToThread(thread)
    thread.started.connect(worker.run)
    worker.finished.connect(thread.quit)
    worker.finished.connect(worker.deleteLater)
    thread.finished.connect(thread.deleteLater)
    return thread


def wait_until_finished(is_running: Callable[[], bool], finished: SignalInstance,
                        timeout_s: float) -> bool:
    """Process events until ``finished`` fires or ``timeout_s`` passed; True once
    ``is_running()`` is False (at once when it already is)."""
    if not is_running():
        return True
    loop = QEventLoop()
    finished.connect(loop.quit)
    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(loop.quit)
    timer.start(max(1, int(timeout_s * 1000)))
    if is_running():
        loop.exec()
    timer.stop()
    finished.disconnect(loop.quit)
    return not is_running()
