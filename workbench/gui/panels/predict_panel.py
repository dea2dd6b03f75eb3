"""Try a model on new images: drop (or pick) images or folders, see the top classes with their
probabilities and the Grad-CAM of the image selected, save the table as CSV.

Prediction runs in the thread pool (latest request wins), on the best model of the last run
or any model file or TorchScript export the user picks; Grad-CAM needs a model file (an
export's layers cannot be hooked).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.gui.panels.results.grad_cam_view import GradCamView
from workbench.gui.workers.pool_tasks import LatestRequestRunner

MODEL_FILTER = "Models (*.pt *.pth *.onnx);;All files (*)"


def run_predictions(model_file: str, paths: list[str], topk: int) -> tuple[list, bool]:
    """Pool thread: expand folders, classify every image; also whether the model is a model
    file (Grad-CAM works on those, not on exports)."""
    from workbench.core.models.export import PreprocessingClassifier
    from workbench.core.models.prediction import expand_image_paths, load_classifier, predict_with

    images = expand_image_paths(paths)
    if not images:
        raise ValueError(f"no images in {', '.join(paths)}")
    classifier = load_classifier(model_file)
    eager = isinstance(classifier.module, PreprocessingClassifier)
    return predict_with(classifier, images, topk), eager


def dropped_paths(event: QDropEvent | QDragEnterEvent) -> list[str]:
    """The local files and folders of a drag."""
    mime = event.mimeData()
    if not mime.hasUrls():
        return []
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile()]


class PredictPanel(QWidget):
    """The model line, the image buttons, the predictions table and the Grad-CAM view.

    Signals:
        predictions_shown(int): the table shows this many predictions.
        errored(str): predicting or saving failed; the message says why.
    """

    predictions_shown = Signal(int)
    errored = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)
        self._model_file = ""
        self._grad_cam_possible = False
        self._predictions: list = []
        self.model_label = QLabel("No model yet: train one, or choose a model file.", self)
        self.model_label.setWordWrap(True)
        self.choose_model_button = QPushButton("Choose model\u2026", self)
        self.add_images_button = QPushButton("Images\u2026", self)
        self.add_folder_button = QPushButton("Folder\u2026", self)
        self.topk_spin = QSpinBox(self)
        self.topk_spin.setRange(1, 10)
        self.topk_spin.setValue(3)
        self.topk_spin.setPrefix("top ")
        self.save_button = QPushButton("Save CSV\u2026", self)
        self.status_label = QLabel("Drop images or a folder on the window, or pick them.", self)
        self.status_label.setWordWrap(True)
        self.table = QTableWidget(0, 3, self)
        self.table.setObjectName("predictions")
        self.table.setHorizontalHeaderLabels(["Image", "Prediction", "Top classes"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.grad_cam = GradCamView(self)
        self._predictor = LatestRequestRunner(self)
        self._build_layout()

        self.choose_model_button.clicked.connect(self._on_choose_model_clicked)
        self.add_images_button.clicked.connect(self._on_add_images_clicked)
        self.add_folder_button.clicked.connect(self._on_add_folder_clicked)
        self.save_button.clicked.connect(self._on_save_clicked)
        self.table.itemSelectionChanged.connect(self._on_selection_changed)
        self._predictor.result_ready.connect(self._on_predictions_ready)
        self._predictor.failed.connect(self._on_predictions_failed)

        self._update_buttons()

    # ------------------------------------------------------------------ public API
    def set_model_file(self, model_file: str) -> None:
        """Predict with ``model_file`` (best_model.pt, a checkpoint or an export) from now on."""
        self._model_file = model_file
        self.model_label.setText(f"Model: {model_file}" if model_file else
                                 "No model yet: train one, or choose a model file.")
        self._update_buttons()

    def model_file(self) -> str:
        """The model predictions use ('' when none is chosen)."""
        return self._model_file

    def predict(self, paths: Sequence[str]) -> bool:
        """Classify ``paths`` (images or folders) in the pool; False when there is no model."""
        if not self._model_file:
            self.status_label.setText("Choose a model first (or train one).")
            return False
        paths = [str(p) for p in paths]
        self.status_label.setText(f"Classifying {len(paths)} item(s)\u2026")
        self._predictor.submit(run_predictions, self._model_file, paths, self.topk_spin.value())
        return True

    def predictions(self) -> list:
        """The predictions in the table, in row order."""
        return list(self._predictions)

    def save_csv(self, path: str) -> bool:
        """Write the table as CSV (atomically); a failure is reported through ``errored``."""
        from workbench.core.models.prediction import write_predictions_csv

        try:
            write_predictions_csv(self._predictions, path)
        except OSError as exc:
            self._report(f"cannot write {path}: {exc}")
            return False
        self.status_label.setText(f"Saved {len(self._predictions)} predictions to {path}")
        return True

    def is_busy(self) -> bool:
        """True while predicting or computing a Grad-CAM."""
        return self._predictor.is_busy() or self.grad_cam.is_busy()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if dropped_paths(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        paths = dropped_paths(event)
        if paths:
            event.acceptProposedAction()
            self.predict(paths)

    # ------------------------------------------------------------------ slots
    def _on_choose_model_clicked(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Model to predict with",
                                              str(Path(self._model_file).parent)
                                              if self._model_file else "", MODEL_FILTER)
        if path:
            self.set_model_file(path)

    def _on_add_images_clicked(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Images to classify")
        if paths:
            self.predict(paths)

    def _on_add_folder_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder of images to classify")
        if folder:
            self.predict([folder])

    def _on_save_clicked(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save predictions", "predictions.csv",
                                              "CSV (*.csv)")
        if path:
            self.save_csv(path)

    def _on_predictions_ready(self, outcome: tuple[list, bool]) -> None:
        predictions, self._grad_cam_possible = outcome
        self._predictions = list(predictions)
        self.table.setRowCount(len(self._predictions))
        for row, prediction in enumerate(self._predictions):
            best = (f"{prediction.top[0][0]} {100 * prediction.top[0][1]:.1f}%"
                    if prediction.top else f"error: {prediction.error}")
            ranked = ", ".join(f"{name} {100 * p:.1f}%" for name, p in prediction.top)
            for column, text in enumerate((Path(prediction.path).name, best, ranked)):
                item = QTableWidgetItem(text)
                item.setToolTip(prediction.path)
                self.table.setItem(row, column, item)
        failed = sum(1 for p in self._predictions if p.error)
        self.status_label.setText(f"{len(self._predictions) - failed} image(s) classified"
                                  + (f", {failed} could not be read" if failed else ""))
        self._update_buttons()
        self.predictions_shown.emit(len(self._predictions))
        if self._predictions:
            self.table.selectRow(0)

    def _on_predictions_failed(self, message: str) -> None:
        self._report(f"prediction failed: {message}")

    def _on_selection_changed(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self._predictions):
            return
        prediction = self._predictions[rows[0].row()]
        if not self._grad_cam_possible:
            self.grad_cam.caption.setText("Grad-CAM needs a model file (best_model.pt or a "
                                          "checkpoint); an export's layers cannot be reached.")
        elif prediction.top:
            self.grad_cam.show_for(self._model_file, prediction.path)

    # ------------------------------------------------------------------ refreshes
    def _report(self, message: str) -> None:
        self.status_label.setText(message)
        self.errored.emit(message)

    def _update_buttons(self) -> None:
        has_model = bool(self._model_file)
        self.add_images_button.setEnabled(has_model)
        self.add_folder_button.setEnabled(has_model)
        self.save_button.setEnabled(bool(self._predictions))

    def _build_layout(self) -> None:
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_label, 1)
        model_row.addWidget(self.choose_model_button)
        actions = QHBoxLayout()
        for widget in (self.add_images_button, self.add_folder_button, self.topk_spin,
                       self.save_button):
            actions.addWidget(widget)
        actions.addStretch(1)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.table)
        splitter.addWidget(self.grad_cam)
        layout = QVBoxLayout(self)
        layout.addLayout(model_row)
        layout.addLayout(actions)
        layout.addWidget(self.status_label)
        layout.addWidget(splitter, 1)
