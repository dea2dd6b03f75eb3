"""Cooperative cancel, pause and "stop after this epoch", shared between the thread that trains
and the one that asks."""

from __future__ import annotations

import threading


class RunControl:
    """Thread-safe flags the engine checks between steps. Nothing is ever killed."""

    def __init__(self) -> None:
        self._cancel = threading.Event()
        self._stop_after_epoch = threading.Event()
        self._running = threading.Event()
        self._running.set()

    def request_cancel(self) -> None:
        self._cancel.set()
        self._running.set()  # a paused run must wake up to see the cancel

    def request_stop_after_epoch(self) -> None:
        """Finish the current epoch (training and validation), then end the run as completed,
        its best epoch being its result. A paused run goes on, to reach the epoch's end."""
        self._stop_after_epoch.set()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    @property
    def stop_after_epoch_requested(self) -> bool:
        return self._stop_after_epoch.is_set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def wait_while_paused(self, poll_s: float = 0.1) -> bool:
        """Block while paused; return True if the run should go on, False if it was cancelled."""
        while not self._running.wait(poll_s):
            if self._cancel.is_set():
                return False
        return not self._cancel.is_set()
