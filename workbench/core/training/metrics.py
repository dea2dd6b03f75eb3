"""Running figures for the training loop: smoothed values for step events, global averages for
epochs, and the confusion matrix that per-class accuracy is read from."""

from __future__ import annotations

import math
from collections import deque


class SmoothedValue:
    """A window of recent values (for step events) and the weighted average of all of them."""

    def __init__(self, window: int = 20) -> None:
        self._window: deque[float] = deque(maxlen=window)
        self.total = 0.0
        self.count = 0

    def update(self, value: float, weight: int = 1) -> None:
        if math.isfinite(value):
            self._window.append(value)
            self.total += value * weight
            self.count += weight

    @property
    def smoothed(self) -> float:
        return sum(self._window) / len(self._window) if self._window else math.nan

    @property
    def global_avg(self) -> float:
        return self.total / self.count if self.count else math.nan


class ConfusionMatrix:
    """Counts of (true class, predicted class); rows are the true class."""

    def __init__(self, num_classes: int) -> None:
        self.num_classes = num_classes
        self.counts = [[0] * num_classes for _ in range(num_classes)]

    def update(self, targets: list[int], predictions: list[int]) -> None:
        for target, predicted in zip(targets, predictions, strict=True):
            if target >= 0:
                self.counts[target][predicted] += 1

    def per_class_accuracy(self) -> tuple[float, ...]:
        """Recall of each class; NaN for a class with no samples."""
        result = []
        for index, row in enumerate(self.counts):
            total = sum(row)
            result.append(row[index] / total if total else math.nan)
        return tuple(result)

    def as_tuple(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(row) for row in self.counts)
