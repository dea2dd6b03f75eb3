"""The Results tab on a real tiny run: cell images, top losses, mislabeled, Grad-CAM."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

import workbench.gui.widgets.path_dialog as path_dialog
from workbench.core.runs.events import RunStart
from workbench.core.runs.predictions_file import read_predictions
from workbench.gui.panels.results_panel import ResultsPanel

TIMEOUT_MS = 60_000


def _click_item(qtbot, gallery, index: int) -> None:
    rect = gallery.visualItemRect(gallery.item(index))
    qtbot.mouseClick(gallery.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_clicking_a_cell_shows_its_images_and_grad_cam(qtbot, panel, finished_run):
    matrix = panel.confusion_view.matrix()
    cells = [(count, i, j) for i, row in enumerate(matrix) for j, count in enumerate(row)]
    count, true_index, predicted_index = max(cells)  # the fullest cell
    names = finished_run.start.class_names
    gallery = panel.analysis.cell_gallery

    with qtbot.waitSignal(gallery.thumbnails_shown, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.confusion_view, Qt.MouseButton.LeftButton,
                         pos=panel.confusion_view.cell_rect(true_index, predicted_index)
                         .center().toPoint())

    rows = gallery.rows()
    assert len(rows) == count == gallery.count()
    assert {(r.true_class, r.predicted_class) for r in rows} == {
        (names[true_index], names[predicted_index])}
    expected = {r.path for r in read_predictions(finished_run.end.run_dir)
                if (r.true_class, r.predicted_class) == (names[true_index],
                                                          names[predicted_index])}
    assert {r.path for r in rows} == expected
    assert f"pred {names[predicted_index]}" in gallery.item(0).text()
    assert not gallery.item(0).icon().pixmap(32, 32).isNull()
    assert panel.analysis.tabs.currentWidget() is gallery

    with qtbot.waitSignal(panel.analysis.grad_cam.shown, timeout=TIMEOUT_MS) as shown:
        _click_item(qtbot, gallery, 0)
    assert shown.args[0].path == rows[0].path
    assert shown.args[0].class_name == rows[0].predicted_class
    assert not panel.analysis.grad_cam.image_label.pixmap().isNull()


def test_top_losses_mislabeled_and_class_figures(qtbot, panel, finished_run):
    predictions = read_predictions(finished_run.end.run_dir)
    losses = [r.loss for r in panel.analysis.top_losses_gallery.rows()]
    assert losses == sorted((r.loss for r in predictions), reverse=True)[:len(losses)]
    assert len(losses) == min(len(predictions), 24)
    for row in panel.analysis.mislabeled_gallery.rows():
        assert not row.correct  # only images the model puts in another class
    figures = panel.table.figures()
    best = [e for e in finished_run.epochs if e.epoch == finished_run.end.best_epoch][0]
    assert [f.support for f in figures] == [sum(row) for row in best.confusion]
    assert [f.recall for f in figures] == pytest.approx(list(best.per_class_accuracy),
                                                        nan_ok=True)
    qtbot.waitUntil(lambda: not any(g.is_decoding() for g in panel.analysis.galleries()))


def test_export_onnx_from_the_results_tab(qtbot, panel, tmp_path, monkeypatch):
    out = tmp_path / "exports" / "model.onnx"
    monkeypatch.setattr(panel, "ask_export_path", lambda export_format="torchscript": str(out))
    with qtbot.waitSignal(panel.export_finished, timeout=240_000) as exported:
        qtbot.mouseClick(panel.export_onnx_button, Qt.MouseButton.LeftButton)
    assert exported.args[0].path == str(out) and out.is_file()
    result = exported.args[0]
    assert result.method.startswith("onnx") and result.subprocess_max_abs_diff <= 1e-4
    # Only the fresh onnxruntime process checked the file: the label claims nothing else.
    assert result.max_abs_diff is None
    # The verdict first, then how the file was made and checked.
    assert panel.export_label.text().startswith(f"VERIFIED: exported {out}\n")
    assert (f"ONNX opset 18; max |difference| from the trained model: "
            f"{result.subprocess_max_abs_diff:.2e} "
            "with onnxruntime in a fresh process, within tolerance ") in panel.export_label.text()
    assert "reloaded here" not in panel.export_label.text()
    qtbot.waitUntil(lambda: not panel.is_exporting())


def test_open_run_folder_opens_its_absolute_path_or_shows_it_to_copy(qtbot, tmp_path,
                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)  # a run of the default output_dir "runs" has a relative folder
    (tmp_path / "runs" / "run-1").mkdir(parents=True)
    asked: list = []

    class NoFileManager:  # QDesktopServices where no file manager answers (Xvfb, a server)
        @staticmethod
        def openUrl(url):  # noqa: N802 - Qt's name
            asked.append(url)
            return False

    monkeypatch.setattr(path_dialog, "QDesktopServices", NoFileManager)
    panel = ResultsPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.show_run_start(RunStart(
        run_dir="runs/run-1", device="cpu", device_name="CPU", memory_total=None, amp=False,
        class_names=("a", "b"), train_samples=8, val_samples=4, epochs=1, start_epoch=0,
        steps_per_epoch=1, crops_per_sample=1, feature_cache=False, dataset_summary=""))

    qtbot.mouseClick(panel.open_folder_button, Qt.MouseButton.LeftButton)

    absolute = str(tmp_path.resolve() / "runs" / "run-1")
    assert [(url.isLocalFile(), url.toLocalFile()) for url in asked] == [(True, absolute)]
    dialog = panel.path_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.path() == absolute and "could not be opened" in dialog.message_label.text()
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == absolute
    dialog.close()
