"""A fixed-size buffer of (x, y) points for live plots: memory never grows during a long run."""

from __future__ import annotations

import numpy as np


class RingBuffer:
    """Preallocated numpy storage for the newest ``capacity`` points.

    ``append`` overwrites the oldest point once the buffer is full. ``changed`` is set by every
    append and by ``clear``; the plot timer resets it after it has redrawn the curve, so curves
    whose data did not change are not redrawn.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._xs = np.zeros(capacity, dtype=np.float64)
        self._ys = np.zeros(capacity, dtype=np.float64)
        self._start = 0
        self._size = 0
        self.changed = False

    @property
    def capacity(self) -> int:
        """How many points the buffer holds before it drops the oldest."""
        return len(self._xs)

    def __len__(self) -> int:
        return self._size

    def append(self, x: float, y: float) -> None:
        """Add one point; NaN and inf are stored as they are (the plot skips non-finite points)."""
        capacity = self.capacity
        index = (self._start + self._size) % capacity
        self._xs[index] = x
        self._ys[index] = y
        if self._size < capacity:
            self._size += 1
        else:
            self._start = (self._start + 1) % capacity
        self.changed = True

    def clear(self) -> None:
        """Forget every point."""
        self._start = 0
        self._size = 0
        self.changed = True

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the points, oldest first; copies, so later appends never alter a plot."""
        end = self._start + self._size
        if end <= self.capacity:
            return self._xs[self._start:end].copy(), self._ys[self._start:end].copy()
        wrap = end - self.capacity
        xs = np.concatenate((self._xs[self._start:], self._xs[:wrap]))
        ys = np.concatenate((self._ys[self._start:], self._ys[:wrap]))
        return xs, ys

    def last(self) -> tuple[float, float] | None:
        """The newest point, or None when empty."""
        if self._size == 0:
            return None
        index = (self._start + self._size - 1) % self.capacity
        return float(self._xs[index]), float(self._ys[index])
