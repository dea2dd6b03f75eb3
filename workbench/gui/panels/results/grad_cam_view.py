"""The Grad-CAM overlay of one image, computed in the thread pool on the run's best model.

The model is loaded and the map computed off the UI thread (latest request wins: clicking
through a gallery only computes the last image clicked); the GUI thread only turns the
finished overlay into a pixmap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPixmap, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from workbench.gui.widgets.image_conversion import numpy_to_qimage
from workbench.gui.workers.pool_tasks import LatestRequestRunner

if TYPE_CHECKING:  # grad_cam imports torch; the window must not at start-up
    from workbench.core.models.grad_cam import GradCam


def compute_grad_cam(model_file: str, image_path: str, class_name: str | None) -> GradCam:
    """Pool thread: Grad-CAM of ``image_path`` under ``model_file``."""
    from workbench.core.models.grad_cam import grad_cam_from_model_file

    return grad_cam_from_model_file(model_file, image_path, class_name)


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
        self.caption = QLabel("Click an image to see where the model looked (Grad-CAM).", self)
        self.caption.setObjectName("gradCamCaption")
        self.caption.setWordWrap(True)
        self.image_label = QLabel(self)
        self.image_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.image_label.setMinimumSize(120, 120)
        self.image_label.setSizePolicy(QSizePolicy.Policy.Expanding,
                                       QSizePolicy.Policy.Expanding)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.image_label, 1)
        layout.addWidget(self.caption)
        self._pixmap = QPixmap()
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
        self._result, self._pixmap = None, QPixmap()
        self.image_label.clear()
        self.caption.setText("Click an image to see where the model looked (Grad-CAM).")

    def result(self) -> GradCam | None:
        """The map on screen, if any."""
        return self._result

    def is_busy(self) -> bool:
        """True while a map is being computed."""
        return self._runner.is_busy()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._update_pixmap()

    def _on_grad_cam_ready(self, result: GradCam) -> None:
        self._result = result
        self._pixmap = QPixmap.fromImage(numpy_to_qimage(result.overlay()))
        self.caption.setText(f"Grad-CAM for '{result.class_name}' "
                             f"({100 * result.probability:.0f}%): red is where the evidence "
                             f"for it lies. {result.path}")
        self._update_pixmap()
        self.shown.emit(result)

    def _on_grad_cam_failed(self, message: str) -> None:
        self.caption.setText(f"Grad-CAM failed: {message}")
        self.errored.emit(message)

    def _update_pixmap(self) -> None:
        if self._pixmap.isNull():
            return
        size = self.image_label.size()
        self.image_label.setPixmap(self._pixmap.scaled(
            size, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation))
