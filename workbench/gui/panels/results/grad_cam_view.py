"""The Grad-CAM overlay of one image, computed in the thread pool on the run's best model.

The model is loaded and the map computed off the UI thread (latest request wins: clicking
through a gallery only computes the last image clicked); the GUI thread only turns the
finished overlay into a pixmap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QPainter, QPaintEvent, QPixmap, QResizeEvent
from PySide6.QtWidgets import QSizePolicy, QVBoxLayout, QWidget

from workbench.gui.widgets.elided_label import ElidedLabel
from workbench.gui.widgets.image_conversion import numpy_to_qimage
from workbench.gui.workers.pool_tasks import LatestRequestRunner

if TYPE_CHECKING:  # grad_cam imports torch; the window must not at start-up
    from workbench.core.models.grad_cam import GradCam


def compute_grad_cam(model_file: str, image_path: str, class_name: str | None
                     ) -> tuple[GradCam, np.ndarray]:
    """Pool thread: Grad-CAM of ``image_path`` under ``model_file``, and its overlay (blended
    here, so the UI thread only copies finished pixels)."""
    from workbench.core.models.grad_cam import grad_cam_from_model_file

    result = grad_cam_from_model_file(model_file, image_path, class_name)
    return result, result.overlay()


CAPTION_LINES = 3
MINIMUM_IMAGE_HEIGHT = 48


class FittedImage(QWidget):
    """A pixmap scaled to fit the widget, centred, aspect kept. Unlike a ``QLabel`` showing a
    pixmap, its size hints never follow the pixmap, so a large overlay cannot push the caption
    below it out of place or make the pane grow."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._pixmap = QPixmap()
        self._scaled = QPixmap()
        self.setMinimumSize(MINIMUM_IMAGE_HEIGHT, MINIMUM_IMAGE_HEIGHT)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_pixmap(self, pixmap: QPixmap) -> None:
        """Show ``pixmap`` (a null one shows nothing)."""
        self._pixmap = pixmap
        self._rescale()

    def pixmap(self) -> QPixmap:
        """The pixmap as drawn (scaled to fit); null when nothing is shown."""
        return self._scaled

    def image_rect(self) -> QRect:
        """Where the pixmap is drawn, in this widget's coordinates (empty when none is)."""
        if self._scaled.isNull():
            return QRect()
        rect = QRect(0, 0, self._scaled.width(), self._scaled.height())
        rect.moveCenter(self.rect().center())
        return rect

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(240, 240)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._rescale()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        if not self._scaled.isNull():
            QPainter(self).drawPixmap(self.image_rect(), self._scaled)

    def _rescale(self) -> None:
        self._scaled = QPixmap() if self._pixmap.isNull() else self._pixmap.scaled(
            self.size(), Qt.AspectRatioMode.KeepAspectRatio,
            Qt.TransformationMode.SmoothTransformation)
        self.update()


class GradCamView(QWidget):
    """Shows the overlay and what it explains.

    Signals:
        shown(GradCam): an overlay is on screen.
        errored(str): the map could not be computed; the message says why.
    """

    shown = Signal(object)
    errored = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # At most CAPTION_LINES lines, wrapped; the whole text is in its tooltip. The image
        # takes what is left, so the two never overlap however small the pane.
        self.caption = ElidedLabel("Click an image to see where the model looked (Grad-CAM).",
                                   self, max_lines=CAPTION_LINES)
        self.caption.setObjectName("gradCamCaption")
        self.caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.image_label = FittedImage(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.image_label, 1)
        layout.addWidget(self.caption)
        self._result: GradCam | None = None
        self._runner = LatestRequestRunner(self)
        self._runner.result_ready.connect(self._on_grad_cam_ready)
        self._runner.failed.connect(self._on_grad_cam_failed)

    def show_for(self, model_file: str, image_path: str, class_name: str | None = None) -> None:
        """Compute and show the map of ``image_path`` for ``class_name`` (default: predicted)."""
        if not model_file:
            self.caption.setText("Grad-CAM needs the run's best model, which is not saved yet.")
            return
        self.caption.setText(f"Computing Grad-CAM of {image_path}\u2026")
        self._runner.submit(compute_grad_cam, model_file, image_path, class_name)

    def clear(self) -> None:
        """Show nothing and drop any map still being computed."""
        self._runner.cancel()
        self._result = None
        self.image_label.set_pixmap(QPixmap())
        self.caption.setText("Click an image to see where the model looked (Grad-CAM).")

    def result(self) -> GradCam | None:
        """The map on screen, if any."""
        return self._result

    def is_busy(self) -> bool:
        """True while a map is being computed."""
        return self._runner.is_busy()

    def _on_grad_cam_ready(self, outcome: tuple[GradCam, np.ndarray]) -> None:
        result, overlay = outcome
        self._result = result
        self.image_label.set_pixmap(QPixmap.fromImage(numpy_to_qimage(overlay)))
        self.caption.setText(f"Grad-CAM for '{result.class_name}' "
                             f"({100 * result.probability:.0f}%): red is where the evidence "
                             f"for it lies. {result.path}")
        self.shown.emit(result)

    def _on_grad_cam_failed(self, message: str) -> None:
        self.caption.setText(f"Grad-CAM failed: {message}")
        self.errored.emit(message)
