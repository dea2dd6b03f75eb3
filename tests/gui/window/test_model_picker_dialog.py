"""The model picker opened from the real window: numeric sorting, the filter, measuring a model
on this machine in its thread (the row fills, the measurement is remembered), "Use this model"
filling the form with that model's defaults, and cancelling or closing mid-measurement."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QLabel

from workbench.core.runs.config import MODELS, TrainConfig
from workbench.core.training.tuning.measurement_cache import MeasurementCache
from workbench.core.training.tuning.model_measurement import (
    ModelMeasurement,
    machine_identity,
    measurement_settings,
)
from workbench.gui.widgets.model_table import COLUMN_NAMES

TIMEOUT_MS = 120_000


@pytest.fixture
def picker(qtbot, window, tmp_path: Path, monkeypatch):
    """The picker opened by clicking Compare… on a CPU config at batch 2, crop 32 px."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    window.apply_config(TrainConfig(device="cpu", batch_size=2, amp=False, workers=0,
                                    output_dir=str(tmp_path / "runs")))
    qtbot.mouseClick(window.config_form.compare_models_button, Qt.MouseButton.LeftButton)
    dialog = window.model_picker.dialog
    qtbot.waitExposed(dialog)
    dialog.timed_steps = 1
    dialog.crop_spin.setValue(32)
    yield dialog
    dialog.stop_and_wait()


def column_texts(table, column: str) -> list[str]:
    """The column's cells from top to bottom, as shown (filtered rows left out)."""
    index = COLUMN_NAMES.index(column)
    return [table.item(row, index).text() for row in range(table.rowCount())
            if not table.isRowHidden(row)]


def click_header(qtbot, table, column: str) -> None:
    header = table.horizontalHeader()
    index = COLUMN_NAMES.index(column)
    x = header.sectionViewportPosition(index) + header.sectionSize(index) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, 5))


def select_row(qtbot, table, model: str) -> None:
    row = table.models().index(model)
    rect = table.visualRect(table.model().index(row, 0))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_the_picker_sorts_filters_measures_and_sets_the_forms_model(qtbot, window, picker):
    table = picker.table
    assert sorted(table.models()) == sorted(MODELS) and len(MODELS) == 15
    assert "These are CPU figures" in picker.device_label.text()

    click_header(qtbot, table, "params")  # ascending: 2.5 before 11.7 (a text sort says no)
    params = column_texts(table, "params")
    known = [float(text) for text in params if text != "-"]
    assert known == sorted(known) and len(known) == 14 and params[-1] == "-"
    assert known[:2] == [2.3, 2.5]  # shufflenet_v2_x1_0, mobilenet_v3_small
    click_header(qtbot, table, "params")  # descending: largest first, unknown still last
    params = column_texts(table, "params")
    assert params[0] == "86.6" and params[-1] == "-"

    qtbot.keyClicks(picker.filter_edit, "adamw")
    assert sorted(table.visible_models()) == ["convnext_tiny", "small_cnn", "swin_t",
                                              "vit_b_16"]
    picker.filter_edit.clear()
    qtbot.keyClicks(picker.filter_edit, "small_cnn")
    assert table.visible_models() == ["small_cnn"]

    select_row(qtbot, table, "small_cnn")
    assert picker.measure_button.text() == "Measure small_cnn on this machine"
    assert table.cell_text("small_cnn", "train_speed") == "\u2014"
    with qtbot.waitSignal(picker.controller.finished, timeout=TIMEOUT_MS):
        qtbot.mouseClick(picker.measure_button, Qt.MouseButton.LeftButton)
        assert picker.progress.isVisible() and picker.cancel_button.isVisible()

    speed = table.cell_text("small_cnn", "train_speed")
    assert float(speed.replace(",", "")) > 0
    assert float(table.cell_text("small_cnn", "latency")) > 0
    assert table.cell_text("small_cnn", "peak_memory") == "n/a (CPU)"
    assert table.cell_text("resnet18", "train_speed") == "\u2014"  # not selected: not measured
    assert picker.status_label.text() == "Measured 1 model(s) on cpu."
    assert not picker.progress.isVisible()

    picker.close()  # opened again: the remembered row is shown at once, nothing measured
    qtbot.mouseClick(window.config_form.compare_models_button, Qt.MouseButton.LeftButton)
    picker.crop_spin.setValue(32)
    assert not picker.controller.is_running()
    assert table.cell_text("small_cnn", "train_speed") == speed
    picker.crop_spin.setValue(48)  # other settings: not measured at those
    assert table.cell_text("small_cnn", "train_speed") == "\u2014"

    picker.filter_edit.clear()
    select_row(qtbot, table, "efficientnet_b1")
    qtbot.mouseClick(picker.use_button, Qt.MouseButton.LeftButton)

    assert not picker.isVisible()
    form = window.config_form
    assert form.config().model == "efficientnet_b1"
    assert (form.field_widget("resize_size").value(),
            form.field_widget("crop_size").value()) == (255, 240)
    assert form.field_widget("optimizer").currentData() == "sgd"
    assert "efficientnet_b1 defaults applied" in form.defaults_note_text()
    assert "ImageNet acc@1 79.8%" in form.findChild(QLabel, "modelFacts").text()


def remember(model: str, latency_ms: float) -> None:
    """A measurement of ``model`` in the measurements file, at the picker's settings."""
    settings = measurement_settings(model, batch_size=2, crop_size=32, amp=False, device="cpu")
    MeasurementCache().put(ModelMeasurement(
        settings=settings, precision="float32", train_images_per_second=10.0,
        peak_memory_bytes=None, latency_ms=latency_ms, fits=None, largest_batch=None,
        timed_steps=1, measured_at="2026-12-05T00:00:00Z", **machine_identity("cpu")))


def test_cancel_stops_the_measurement_and_no_row_arrives_after_it(qtbot, picker):
    remember("resnet50", 12.5)
    picker.crop_spin.setValue(31)
    picker.crop_spin.setValue(32)  # these settings again: the remembered row is read
    assert picker.table.cell_text("resnet50", "latency") == "12.5"
    picker.timed_steps = 500  # minutes if it were not stopped
    measured: list[object] = []
    picker.controller.model_measured.connect(measured.append)
    with qtbot.waitSignal(picker.controller.model_started, timeout=TIMEOUT_MS):
        picker.measure(["resnet50", "convnext_tiny"])
    assert picker.table.cell_text("resnet50", "train_speed") == "measuring\u2026"
    assert picker.table.cell_text("resnet50", "latency") == "\u2014"  # no older figure left

    with qtbot.waitSignal(picker.controller.finished, timeout=30_000):
        qtbot.mouseClick(picker.cancel_button, Qt.MouseButton.LeftButton)

    assert measured == []
    assert not picker.controller.is_running()
    assert picker.table.cell_text("resnet50", "train_speed") == "10.0"  # remembered again
    assert picker.table.cell_text("convnext_tiny", "train_speed") == "\u2014"
    assert picker.status_label.text().startswith("Measurement stopped; 0 model(s)")
    assert picker.measure_button.isEnabled() and not picker.cancel_button.isVisible()


def test_closing_the_window_mid_measurement_stops_it(qtbot, window, picker):
    picker.timed_steps = 500
    with qtbot.waitSignal(picker.controller.model_started, timeout=TIMEOUT_MS):
        picker.measure(["resnet50"])

    window.close()

    assert not picker.controller.is_running()  # waited for; the fixture checks the thread


def test_a_damaged_measurements_file_is_said_and_the_picker_still_opens(qtbot, tmp_path,
                                                                       monkeypatch):
    from workbench.gui.panels.model_picker_dialog import ModelPickerDialog

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    path = MeasurementCache().path
    path.parent.mkdir(parents=True)
    path.write_text("{half a file", encoding="utf-8")
    dialog = ModelPickerDialog()
    qtbot.addWidget(dialog)

    dialog.show_for(TrainConfig(device="cpu", batch_size=2, amp=False), "cpu")

    assert "is not a measurements file" in dialog.status_label.text()
    assert str(path) in dialog.status_label.text()
    assert dialog.table.cell_text("resnet18", "train_speed") == "\u2014"
    assert dialog.measure_button.text() == "Measure resnet18 on this machine"


def test_the_first_compare_imports_torchvision_in_the_pool_not_on_the_ui_thread(
        qtbot, window, tmp_path: Path, monkeypatch):
    from workbench.gui.window import model_picker_action

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    imported_on = []
    real_import = model_picker_action.import_catalogue

    def import_catalogue():
        imported_on.append(threading.current_thread() is threading.main_thread())
        return real_import()

    # As on a first start, before anything imported torchvision's models.
    monkeypatch.setattr(model_picker_action, "catalogue_loaded", lambda: False)
    monkeypatch.setattr(model_picker_action, "import_catalogue", import_catalogue)
    button = window.config_form.compare_models_button
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert not button.isEnabled() and button.text() == "Loading\u2026"
    assert window.model_picker.dialog is None  # not built on the UI thread meanwhile
    qtbot.waitUntil(lambda: window.model_picker.dialog is not None
                    and window.model_picker.dialog.isVisible(), timeout=TIMEOUT_MS)
    assert imported_on == [False]
    assert button.isEnabled() and button.text() == "Compare\u2026"
    window.model_picker.dialog.close()
