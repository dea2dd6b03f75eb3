"""The learning-rate finder in the window: a real range test in the pool on generated images,
its plot and suggestion, applying it to the form, cancelling it, Start held meanwhile, a bad
folder's message, and the refusal while a run trains."""

from __future__ import annotations

import threading

import pytest

from workbench.core.runs.config import TrainConfig
from workbench.gui.window.lr_finder_action import BUSY_REASON, TRAINING_REASON

TIMEOUT_MS = 120_000


def small_cnn_config(data, tmp_path) -> TrainConfig:
    return TrainConfig(data_root=str(data), model="small_cnn", weights="none", finetune="full",
                       crop_mode="standard", resize_size=32, crop_size=28, batch_size=8,
                       epochs=2, lr=0.05, workers=0, device="cpu", amp=False,
                       output_dir=str(tmp_path / "runs"), cache_dir=str(tmp_path / "cache"))


def test_the_range_test_runs_in_the_pool_plots_and_its_suggestion_is_applied(
        qtbot, window, shapes_dataset, tmp_path):
    window.apply_config(small_cnn_config(shapes_dataset, tmp_path))
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)
    step_threads: set[int] = set()

    assert window.lr_finder.open(steps=30)
    dialog = window.lr_finder.dialog
    assert dialog.isVisible() and dialog.is_running()  # open() returned while it runs
    dialog._job.signals.step_measured.connect(  # direct: runs in the thread that steps
        lambda *_: step_threads.add(threading.get_ident()), type=_direct())
    assert not window.controls.start_button.isEnabled()  # the device is taken
    assert window.controls.problem_label.text() == f"Cannot start: {BUSY_REASON}"
    assert not window.start_training()

    qtbot.waitUntil(lambda: not window.lr_finder.is_busy(), timeout=TIMEOUT_MS)
    assert step_threads and threading.get_ident() not in step_threads
    lrs, losses = dialog.points()
    assert len(lrs) >= 10 and len(lrs) == len(losses)
    x, y = dialog.curve.getData()
    assert len(x) == len(lrs)  # drawn
    assert dialog.plot.getPlotItem().ctrl.logXCheck.isChecked()
    suggestion = dialog.suggestion()
    assert suggestion is not None and lrs[0] <= suggestion <= lrs[-1]
    assert dialog.marker.isVisible()
    assert "Suggested lr" in dialog.result_label.text()
    assert "falls fastest" in dialog.result_label.text()
    button = dialog.apply_button
    assert button.isEnabled() and button.text() == f"Use {dialog.result_label.text().split()[2]}"
    assert window.controls.start_button.isEnabled()  # the test is over

    button.click()
    assert window.config_form.config().lr == pytest.approx(suggestion, rel=1e-9)
    assert float(button.text().removeprefix("Use ")) == pytest.approx(suggestion, rel=1e-9)
    assert window.config_form.field_problem_text("lr") == ""
    # Set as the user would have set it: choosing another model keeps it.
    window.config_form.edit_field("model", "resnet18")
    assert window.config_form.config().lr == pytest.approx(suggestion, rel=1e-9)


def _direct():
    from PySide6.QtCore import Qt

    return Qt.ConnectionType.DirectConnection


def test_cancel_stops_the_test_and_no_result_arrives(qtbot, window, shapes_dataset, tmp_path):
    window.apply_config(small_cnn_config(shapes_dataset, tmp_path))
    assert window.lr_finder.open(steps=1000)
    dialog = window.lr_finder.dialog
    steps_run: list[int] = []  # counted in the pool thread, as the job steps
    dialog._job.signals.step_measured.connect(lambda step, *_: steps_run.append(step),
                                              type=_direct())
    qtbot.waitUntil(lambda: len(dialog.points()[0]) >= 3, timeout=TIMEOUT_MS)

    dialog.cancel_button.click()
    at_cancel = len(steps_run)
    assert not dialog.is_running()
    qtbot.waitUntil(lambda: not window.lr_finder.is_busy(), timeout=TIMEOUT_MS)
    assert len(steps_run) <= at_cancel + 1  # it stopped before its next step
    qtbot.wait(200)  # anything the job still sent has arrived
    assert dialog.suggestion() is None and not dialog.apply_button.isEnabled()
    assert dialog.result_label.text().startswith("Cancelled")
    assert window.controls.start_button.isEnabled()


def test_a_bad_data_folder_is_a_message_in_the_dialog(qtbot, window, tmp_path):
    empty = tmp_path / "no-classes"
    empty.mkdir()
    window.apply_config(small_cnn_config(empty, tmp_path))
    assert window.lr_finder.open(steps=20)
    dialog = window.lr_finder.dialog
    qtbot.waitUntil(lambda: not window.lr_finder.is_busy(), timeout=TIMEOUT_MS)
    text = dialog.error_text()
    assert text.startswith("The range test could not run: ") and str(empty) in text
    assert "Traceback" not in text and dialog.suggestion() is None
    assert window.last_error == ""  # no message box


def test_the_finder_refuses_while_a_run_trains(qtbot, window, shapes_dataset, tmp_path):
    window.apply_config(small_cnn_config(shapes_dataset, tmp_path).replace(epochs=20))
    assert window.start_training()
    assert not window.lr_finder.action.isEnabled()
    assert not window.config_form.find_lr_button.isEnabled()

    assert not window.lr_finder.open(steps=20)
    dialog = window.lr_finder.dialog
    assert dialog.error_text() == TRAINING_REASON and not dialog.is_running()
    window.controller.request_stop()
    assert window.controller.wait_finished(60)
    assert window.lr_finder.action.isEnabled()
