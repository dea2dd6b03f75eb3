"""Galleries of the best epoch's predictions: a confusion cell's images, the top losses and
the possibly mislabeled images, beside the Grad-CAM of the image last clicked."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QTabWidget, QVBoxLayout, QWidget

from workbench.core.runs.prediction_analysis import cell_rows, possibly_mislabeled, top_losses
from workbench.core.runs.predictions_file import PredictionRow
from workbench.gui.panels.results.grad_cam_view import GradCamView
from workbench.gui.panels.results.prediction_gallery import PredictionGallery

TOP_LOSSES = 24
# A class name longer than this is cut in the cell tab's name, which must stay short enough
# for the three tab names to show whole.
TAB_CLASS_CHARS = 12


def short_class_name(name: str) -> str:
    """``name``, or its first characters and '…' when it is longer than TAB_CLASS_CHARS."""
    return name if len(name) <= TAB_CLASS_CHARS else name[:TAB_CLASS_CHARS - 1] + "\u2026"


class ErrorAnalysisView(QWidget):
    """Three galleries in tabs and a Grad-CAM view.

    Signals:
        errored(str): a Grad-CAM could not be computed.
    """

    errored = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[PredictionRow] = []
        self._model_file = ""
        self.hint = QLabel("Predictions appear after the first epoch.", self)
        self.hint.setObjectName("errorAnalysisHint")
        self.hint.setWordWrap(True)
        self.cell_gallery = PredictionGallery("Click a confusion-matrix cell to see its images.")
        self.top_losses_gallery = PredictionGallery("The images the model got most wrong.")
        self.mislabeled_gallery = PredictionGallery(
            "Images the model confidently puts in another class: check their labels "
            "(double-click opens one).")
        self.tabs = QTabWidget(self)
        # Names are never cut with '…'; the results panel gives the pane their width when it
        # can, and only a pane too narrow for them scrolls them.
        self.tabs.setElideMode(Qt.TextElideMode.ElideNone)
        self.tabs.addTab(self.cell_gallery, "Cell images")
        self.tabs.addTab(self.top_losses_gallery, "Top losses")
        self.tabs.addTab(self.mislabeled_gallery, "Possibly mislabeled")
        self.grad_cam = GradCamView(self)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.tabs)
        splitter.addWidget(self.grad_cam)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.hint)
        layout.addWidget(splitter, 1)

        for gallery in self.galleries():
            gallery.row_chosen.connect(self._on_row_chosen)
        self.grad_cam.errored.connect(self.errored)

    def galleries(self) -> tuple[PredictionGallery, ...]:
        """The three galleries, in tab order."""
        return self.cell_gallery, self.top_losses_gallery, self.mislabeled_gallery

    def set_predictions(self, rows: Sequence[PredictionRow], model_file: str) -> None:
        """Show a new set of predictions; ``model_file`` is what Grad-CAM explains."""
        self._rows = list(rows)
        self._model_file = model_file
        wrong = sum(not r.correct for r in self._rows)
        issues = possibly_mislabeled(self._rows)
        self.hint.setText(f"{len(self._rows)} validation images, {wrong} misclassified, "
                          f"{len(issues)} possibly mislabeled. Click a matrix cell or an image.")
        self.top_losses_gallery.set_rows(top_losses(self._rows, TOP_LOSSES),
                                         [f"loss {r.loss:.2f}" for r in
                                          top_losses(self._rows, TOP_LOSSES)])
        self.mislabeled_gallery.set_rows(
            [i.row for i in issues],
            [f"maybe {i.suggested_class} {100 * i.suggested_probability:.0f}%" for i in issues])
        self.cell_gallery.set_rows([])

    def set_model_file(self, model_file: str) -> None:
        """The model Grad-CAM uses from now on."""
        self._model_file = model_file

    def show_cell(self, true_class: str, predicted_class: str) -> None:
        """Show the images of one confusion-matrix cell in the first gallery."""
        rows = cell_rows(self._rows, true_class, predicted_class)
        self.cell_gallery.set_rows(rows)
        self.tabs.setTabText(0, f"{short_class_name(true_class)} \u2192 "
                                f"{short_class_name(predicted_class)} ({len(rows)})")
        self.tabs.setTabToolTip(0, f"{true_class} \u2192 {predicted_class}: {len(rows)} images")
        self.tabs.setCurrentWidget(self.cell_gallery)

    def clear(self) -> None:
        """Forget the predictions."""
        self._rows, self._model_file = [], ""
        for gallery in self.galleries():
            gallery.set_rows([])
        self.tabs.setTabText(0, "Cell images")
        self.tabs.setTabToolTip(0, "")
        self.grad_cam.clear()
        self.hint.setText("Predictions appear after the first epoch.")

    def rows(self) -> list[PredictionRow]:
        """All predictions shown."""
        return list(self._rows)

    def _on_row_chosen(self, row: PredictionRow) -> None:
        # The class the run predicted for this image (from its crops), not a new guess on the
        # whole image: the overlay shows why the model said what the table says.
        self.grad_cam.show_for(self._model_file, row.path, row.predicted_class)
