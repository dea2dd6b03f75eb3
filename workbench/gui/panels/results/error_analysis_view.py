"""Galleries of the best epoch's predictions: a confusion cell's images, the top losses and
the possibly mislabeled images, beside the Grad-CAM of the image last clicked.

"Possibly mislabeled" follows one stated rule, shown above its gallery with its threshold:
the model gives a class other than the image's label at least that probability, on
validation images it never trained on.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.core.runs.prediction_analysis import (
    MISLABEL_THRESHOLD,
    LabelIssue,
    cell_rows,
    possibly_mislabeled,
    top_losses,
)
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
            "Images the model gives another class at least the probability set above: check "
            "their labels (double-click opens one).")
        self.mislabel_threshold = QSpinBox(self)
        self.mislabel_threshold.setObjectName("mislabelThreshold")
        # Above 50%: an image predicted as its own label can then never be listed.
        self.mislabel_threshold.setRange(51, 99)
        self.mislabel_threshold.setSuffix(" %")
        self.mislabel_threshold.setValue(round(100 * MISLABEL_THRESHOLD))
        self.mislabel_threshold.setToolTip(
            "An image is listed when the model gives a class other than its label at least "
            "this probability. The predictions are of validation images the model never "
            "trained on (out of sample).")
        self.tabs = QTabWidget(self)
        # Names are never cut with '…'; the results panel gives the pane their width when it
        # can, and only a pane too narrow for them scrolls them.
        self.tabs.setElideMode(Qt.TextElideMode.ElideNone)
        self.tabs.addTab(self.cell_gallery, "Cell images")
        self.tabs.addTab(self.top_losses_gallery, "Top losses")
        self.tabs.addTab(self._mislabeled_page(), "Possibly mislabeled")
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
        self.mislabel_threshold.valueChanged.connect(self._on_mislabel_threshold_changed)

    def _mislabeled_page(self) -> QWidget:
        """The rule with its threshold, above the gallery it fills."""
        page = QWidget(self)
        rule = QHBoxLayout()
        rule.addWidget(QLabel("Another class at least", page))
        rule.addWidget(self.mislabel_threshold)
        rule.addStretch(1)
        # Below the threshold, wrapped: the gallery pane is narrow beside the figures on a
        # laptop screen, and one unwrapped line here set the window's minimum width.
        note = QLabel("Validation images only, which the model never trained on.", page)
        note.setWordWrap(True)
        note.setToolTip(self.mislabel_threshold.toolTip())
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.addLayout(rule)
        layout.addWidget(note)
        layout.addWidget(self.mislabeled_gallery, 1)
        return page

    def galleries(self) -> tuple[PredictionGallery, ...]:
        """The three galleries, in tab order."""
        return self.cell_gallery, self.top_losses_gallery, self.mislabeled_gallery

    def set_predictions(self, rows: Sequence[PredictionRow], model_file: str) -> None:
        """Show a new set of predictions; ``model_file`` is what Grad-CAM explains."""
        self._rows = list(rows)
        self._model_file = model_file
        self.top_losses_gallery.set_rows(top_losses(self._rows, TOP_LOSSES),
                                         [f"loss {r.loss:.2f}" for r in
                                          top_losses(self._rows, TOP_LOSSES)])
        self._update_mislabeled()
        self.cell_gallery.set_rows([])

    def mislabel_threshold_value(self) -> float:
        """The probability another class must reach for an image to be listed, 0..1."""
        return self.mislabel_threshold.value() / 100

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
        self.tabs.setTabText(2, "Possibly mislabeled")
        self.tabs.setTabToolTip(0, "")
        self.grad_cam.clear()
        self.hint.setText("Predictions appear after the first epoch.")

    def rows(self) -> list[PredictionRow]:
        """All predictions shown."""
        return list(self._rows)

    def _on_mislabel_threshold_changed(self, _percent: int) -> None:
        self._update_mislabeled()

    def _update_mislabeled(self) -> None:
        issues: list[LabelIssue] = possibly_mislabeled(self._rows,
                                                       self.mislabel_threshold_value())
        self.mislabeled_gallery.set_rows(
            [i.row for i in issues],
            [f"maybe {i.suggested_class} {100 * i.suggested_probability:.0f}%" for i in issues])
        self.tabs.setTabText(2, f"Possibly mislabeled ({len(issues)})")
        if not self._rows:
            return
        wrong = sum(not r.correct for r in self._rows)
        self.hint.setText(
            f"{len(self._rows)} validation images, {wrong} misclassified, {len(issues)} "
            f"possibly mislabeled (another class at least "
            f"{self.mislabel_threshold.value()}%). Click a matrix cell or an image.")

    def _on_row_chosen(self, row: PredictionRow) -> None:
        # The class the run predicted for this image (from its crops), not a new guess on the
        # whole image: the overlay shows why the model said what the table says.
        self.grad_cam.show_for(self._model_file, row.path, row.predicted_class)
