"""The line under the model choice: its ImageNet accuracy, size, cost, crop and recipe.

The figures come from torchvision (``model_defaults.model_summary``), whose import takes
seconds; the window must appear before torch is loaded, so until torchvision is in memory the
line is filled from the thread pool (``load_in_background``), once the window is up.
"""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QLabel, QWidget

from workbench.core.runs.model_catalog import MODEL_NAMES, TORCHVISION_MODELS
from workbench.core.runs.model_defaults import model_summary
from workbench.gui.workers.pool_tasks import LatestRequestRunner


def _torchvision_loaded() -> bool:
    return "torchvision.models" in sys.modules


class ModelFactsLabel(QLabel):
    """Shows ``model_summary`` of the model and weights last given to ``show_model``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modelFacts")
        self.setWordWrap(True)
        self.setStyleSheet("color: palette(placeholder-text);")
        self._model = ""
        self._weights = "imagenet"
        self._runner = LatestRequestRunner(self)
        self._runner.result_ready.connect(self._on_summary)

    def show_model(self, model: str, weights: str = "imagenet") -> None:
        """Describe ``model`` starting from ``weights`` (its recipe follows them) now when
        that needs no torchvision import, else leave the line empty until
        ``load_in_background`` (or a later call once torchvision is loaded)."""
        if (model, weights) == (self._model, self._weights) and self.text():
            return
        self._model, self._weights = model, weights
        self._runner.cancel()
        if model not in MODEL_NAMES:
            self.setText("")
        elif model not in TORCHVISION_MODELS or _torchvision_loaded():
            self.setText(model_summary(model, weights))
        else:
            self.setText("")

    def load_in_background(self) -> None:
        """Fill the line from the pool if it is still waiting for torchvision."""
        if self._model in TORCHVISION_MODELS and not self.text():
            self._runner.submit(_summary_of, self._model, self._weights)

    def _on_summary(self, result: object) -> None:
        model, weights, text = result  # type: ignore[misc]
        if (model, weights) == (self._model, self._weights):
            self.setText(text)


def _summary_of(model: str, weights: str) -> tuple[str, str, str]:
    return model, weights, model_summary(model, weights)
