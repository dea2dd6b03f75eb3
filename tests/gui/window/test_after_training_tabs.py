"""Predict and Runs tabs in the real window, on a real tiny run: a dropped image is classified,
the run is listed and its results reopen."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from workbench.core.models.prediction import predict_images
from workbench.gui.window.main_window import MainWindow

TIMEOUT_MS = 60_000


@pytest.fixture
def window(window, finished_run) -> MainWindow:
    """The shown window of tests/gui/window/conftest.py, once the module's run has finished."""
    return window


def _drop(window: MainWindow, path: Path) -> QDropEvent:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    position = QPoint(window.width() - 40, window.height() // 2)  # over the right-hand tabs
    buttons, modifiers = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(position, Qt.DropAction.CopyAction, mime, buttons, modifiers)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    drop = QDropEvent(position, Qt.DropAction.CopyAction, mime, buttons, modifiers)
    QApplication.sendEvent(window, drop)
    return drop


def test_dropping_an_image_shows_its_prediction_and_grad_cam(qtbot, window, finished_run):
    tabs = window.after_training
    predict = tabs.predict_panel
    model = finished_run.end.best_model_path
    predict.set_model_file(model)
    image = Path(next(iter(Path(finished_run.end.run_dir).parent.parent.glob(
        "shapes/val/square/*.png"))))

    with qtbot.waitSignals([predict.predictions_shown, predict.grad_cam.shown],
                           timeout=TIMEOUT_MS):
        drop = _drop(window, image)
    assert drop.isAccepted()
    assert window.right_tabs.currentWidget() is predict
    expected = predict_images(model, [image], topk=3)[0]
    assert predict.table.rowCount() == 1
    assert predict.table.item(0, 0).text() == image.name
    name, probability = expected.top[0]
    assert predict.table.item(0, 1).text() == f"{name} {100 * probability:.1f}%"
    assert predict.grad_cam.result().path == str(image)

    out = Path(finished_run.end.run_dir).parent / "dropped.csv"
    assert predict.save_csv(str(out))
    assert out.read_text().splitlines()[1].startswith(f"{image},{name},")
    qtbot.waitUntil(lambda: not predict.is_busy())


def test_the_predict_tab_counts_an_image_it_cannot_read_apart_from_the_classified(
        qtbot, window, finished_run):
    predict = window.after_training.predict_panel
    predict.set_model_file(finished_run.end.best_model_path)
    images = sorted(Path(finished_run.end.run_dir).parent.parent.glob("shapes/val/*/*.png"))[:2]
    missing = images[0].parent / "not_there.png"

    with qtbot.waitSignal(predict.predictions_shown, timeout=TIMEOUT_MS):
        assert predict.predict([str(images[0]), str(missing), str(images[1])])

    assert predict.table.rowCount() == 3
    rows = {predict.table.item(row, 0).text(): predict.table.item(row, 1).text()
            for row in range(3)}
    assert rows[missing.name].startswith("error: ")
    assert predict.status_label.text() == "2 image(s) classified, 1 could not be read"
    qtbot.waitUntil(lambda: not predict.is_busy())


def test_the_runs_tab_lists_the_run_and_reopens_its_results(qtbot, window, finished_run):
    runs = window.after_training.runs_panel
    output = str(Path(finished_run.end.run_dir).parent)
    with qtbot.waitSignal(runs.runs_listed, timeout=TIMEOUT_MS):
        window.config_form.update_config(output_dir=output)
    assert [r.run_dir for r in runs.runs()] == [finished_run.end.run_dir]
    runs.select_rows([0])
    results = window.results_panel
    with qtbot.waitSignal(results.predictions_loaded, timeout=TIMEOUT_MS) as loaded:
        qtbot.mouseClick(runs.open_button, Qt.MouseButton.LeftButton)
    assert window.right_tabs.currentWidget() is results
    assert loaded.args[0] == finished_run.start.val_samples
    assert results.confusion_view.matrix() == [
        e for e in finished_run.epochs if e.epoch == finished_run.end.best_epoch][0].confusion
    qtbot.waitUntil(lambda: not runs.is_busy() and not results.is_loading_predictions())
