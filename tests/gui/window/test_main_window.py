"""The real main window: folder, form validation, a real run, results, export and closing."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from workbench.core.runs.config import TrainConfig
from workbench.gui.window.main_window import MainWindow

RUN_TIMEOUT_MS = 120_000


def open_dataset(qtbot, window: MainWindow, folder: Path) -> None:
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=30_000):
        window.open_folder(str(folder))


def test_window_opens_and_names_the_device_it_will_use(qtbot, window):
    assert window.windowTitle() == "Workbench"
    assert window.device_panel.choice_text() == "Detecting devices\u2026"
    assert not window.controls.start_button.isEnabled()  # no folder chosen yet
    assert "data_root" in window.controls.problem_label.text()

    with qtbot.waitSignal(window.device_panel.devices_detected, timeout=60_000):
        window.start_background_tasks()
    text = window.device_panel.choice_text()
    if torch.cuda.is_available():
        assert text.startswith("Training will use cuda:0")
    else:
        assert text.startswith("Training will use the CPU, because CUDA is unavailable")
    assert window.device_status.text() == text
    # The form learns what detection found: CUDA-only settings apply only with a CUDA device.
    for field in ("amp", "amp_dtype", "channels_last", "pin_memory"):
        assert window.config_form.field_applies(field) == torch.cuda.is_available(), field
        row = window.config_form.findChild(QWidget, f"field_{field}")
        assert row.isEnabled() == torch.cuda.is_available(), field


def test_choosing_a_folder_fills_the_dataset_panel_and_the_config(qtbot, window,
                                                                  shapes_dataset):
    open_dataset(qtbot, window, shapes_dataset)

    scan = window.dataset_panel.scan()
    assert list(scan.class_names) == ["circle", "cross", "square", "triangle"]
    assert window.config_form.config().data_root == str(shapes_dataset)
    assert str(shapes_dataset) in window.recent_folders()
    assert scan.describe() in window.log_panel.toPlainText()
    # A folder with train/ and val/ folders needs no validation fraction: the form greys it out.
    assert scan.layout == "train_val"
    assert not window.config_form.findChild(QWidget, "field_val_fraction").isEnabled()
    # Start waits for the check of the new folder.
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)


def test_invalid_learning_rate_is_flagged_and_start_disabled(qtbot, window, shapes_dataset):
    open_dataset(qtbot, window, shapes_dataset)
    lr = window.config_form.field_widget("lr")

    lr.setValue(0.0)
    assert window.config_form.field_problem_text("lr") == (
        "Learning rate (lr): must be greater than 0 (got 0.0)")
    assert not window.controls.start_button.isEnabled()
    assert window.controls.problem_label.text().startswith(
        "Cannot start: Learning rate (lr): must be greater")
    assert window.start_training() is False and not window.controller.is_running()

    lr.setValue(0.01)
    assert window.config_form.field_problem_text("lr") == ""
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)


def test_start_trains_shows_results_and_exports_a_loadable_model(
        qtbot, window, shapes_dataset, tiny_config, tmp_path, monkeypatch):
    open_dataset(qtbot, window, shapes_dataset)
    window.apply_config(tiny_config)
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)

    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        qtbot.mouseClick(window.controls.start_button, Qt.MouseButton.LeftButton)
        assert not window.controls.start_button.isEnabled()
        assert window.controls.stop_button.isEnabled()
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)

    assert ended.args[0].status == "completed"
    results = window.results_panel
    assert window.right_tabs.currentWidget() is results
    assert results.table.rowCount() == 4
    assert [results.table.item(r, 0).text() for r in range(4)] == [
        "circle", "cross", "square", "triangle"]
    assert all(results.table.item(r, 2).text().endswith("%") for r in range(4))  # recall
    matrix = results.confusion_view.matrix()
    assert len(matrix) == 4 and all(len(row) == 4 for row in matrix)
    assert sum(map(sum, matrix)) == 16  # every validation image counted once
    assert "Best epoch" in results.summary_label.text()
    window.plots.flush()
    assert window.plots.plotted_count("loss_raw") == 8  # 2 epochs x 4 steps
    assert window.plots.plotted_count("accuracy_val_epoch") == 2
    assert window.controls.start_button.isEnabled()

    out = tmp_path / "exported" / "model.pt"
    monkeypatch.setattr(results, "ask_export_path", lambda: str(out))
    with qtbot.waitSignal(results.export_finished, timeout=RUN_TIMEOUT_MS) as exported:
        qtbot.mouseClick(results.export_button, Qt.MouseButton.LeftButton)
    assert exported.args[0].path == str(out) and out.is_file()
    assert exported.args[0].max_abs_diff <= 1e-4
    assert "VERIFIED: exported" in results.export_label.text()
    with warnings.catch_warnings():  # torch deprecates torch.jit; the file must still load
        warnings.simplefilter("ignore", FutureWarning)
        module = torch.jit.load(str(out), map_location="cpu")
    logits = module(torch.zeros(2, 1, 28, 28, dtype=torch.uint8))  # the small CNN's grey input
    assert tuple(logits.shape) == (2, 4)


def test_export_of_a_missing_model_file_is_reported(qtbot, window, tmp_path):
    missing = tmp_path / "runs" / "best_model.pt"
    results = window.results_panel
    with qtbot.waitSignal(results.export_failed, timeout=RUN_TIMEOUT_MS) as failed:
        results.export_to(str(tmp_path / "model.pt"), str(missing))
    assert str(missing) in failed.args[0]
    assert results.export_label.text().startswith("Export failed: ")
    qtbot.waitUntil(lambda: not results.is_exporting())
    assert f"Export failed: {failed.args[0]}" in window.log_panel.toPlainText()


def test_closing_during_training_stops_the_run_and_keeps_a_checkpoint(
        qtbot, window, shapes_dataset, tiny_config, no_dangling_qthreads):
    open_dataset(qtbot, window, shapes_dataset)
    window.apply_config(tiny_config.replace(epochs=50))
    ends = []
    window.controller.run_ended.connect(ends.append)
    with qtbot.waitSignal(window.controller.epoch_ended, timeout=RUN_TIMEOUT_MS) as first_epoch:
        assert window.start_training()
    checkpoint = Path(first_epoch.args[0].checkpoint_path)

    window.confirm_stop_on_close = lambda: False  # the user says "No": nothing happens
    assert not window.close()
    assert window.isVisible() and window.controller.is_running()

    window.confirm_stop_on_close = lambda: True
    assert window.close()

    assert not window.isVisible()
    assert not window.controller.is_running()
    assert [e.status for e in ends] == ["cancelled"]
    assert checkpoint.is_file() and checkpoint.name == "last.pt"
    assert torch.load(checkpoint, weights_only=True)["epoch"] >= 1
    assert all(not t.isRunning() for t in no_dangling_qthreads if _valid(t))


def test_config_files_load_save_and_errors_in_the_window(qtbot, window, tmp_path):
    saved = tmp_path / "config.json"
    window.config_form.update_config(epochs=7, lr=0.123)
    assert window.save_config_to(str(saved))
    window.config_form.update_config(epochs=1)

    assert window.load_config_from(str(saved))
    assert window.config_form.config().epochs == 7 and window.config_form.config().lr == 0.123

    broken = tmp_path / "broken.json"
    broken.write_text('{"epochs": "many"}')
    assert not window.load_config_from(str(broken))
    assert window.last_error == f"{broken}: field 'epochs' must be a whole number, got 'many'"
    assert window.last_error in window.log_panel.toPlainText()
    assert window.config_form.config().epochs == 7  # unchanged


def test_a_partial_config_merges_over_the_settings_and_names_what_it_set(
        qtbot, window, shapes_dataset, tmp_path):
    from workbench.core.data.generated.synthetic_images import write_shape_dataset

    open_dataset(qtbot, window, shapes_dataset)
    window.config_form.update_config(lr=0.05, epochs=3)
    partial = tmp_path / "partial.json"
    partial.write_text('{"epochs": 9, "batch_size": 4}')

    assert window.load_config_from(str(partial))

    config = window.config_form.config()
    assert (config.epochs, config.batch_size, config.lr) == (9, 4, 0.05)
    assert config.data_root == str(shapes_dataset)  # the file does not set it: kept
    said = "partial.json: it sets epochs, batch_size (2 changed); every other setting is kept."
    assert said in window.log_panel.toPlainText()
    assert window.statusBar().currentMessage().endswith(said)

    # A config that sets the data folder takes the Dataset tab there too.
    other = write_shape_dataset(tmp_path / "other", classes=("circle", "square"), per_class=4,
                                size=(32, 32))
    moved = tmp_path / "moved.json"
    moved.write_text(f'{{"data_root": "{other}"}}')
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=30_000):
        assert window.load_config_from(str(moved))
    assert window.dataset_panel.folder() == str(other)
    assert list(window.dataset_panel.scan().class_names) == ["circle", "square"]
    assert window.config_form.config().epochs == 9


def test_settings_are_saved_on_close_and_restored(qtbot, tmp_path, shapes_dataset):
    first = MainWindow()
    qtbot.addWidget(first)
    first.config_form.update_config(epochs=13, data_root=str(shapes_dataset))
    assert first.close()

    second = MainWindow()
    qtbot.addWidget(second)
    assert second.config_form.config() == TrainConfig(epochs=13, data_root=str(shapes_dataset))


def _valid(obj: object) -> bool:
    import shiboken6

    return shiboken6.isValid(obj)


def test_resume_from_a_checkpoint_continues_the_run(qtbot, window, shapes_dataset, tiny_config):
    from workbench.core.models.checkpoint_format import load_checkpoint
    from workbench.core.training.engine import train

    first = train(tiny_config.replace(epochs=1, run_name="first"))
    assert first.status == "completed"
    open_dataset(qtbot, window, shapes_dataset)

    assert window.resume_from(first.last_checkpoint_path)
    config = window.config_form.config()
    assert config.resume == first.last_checkpoint_path
    assert config.data_root == str(shapes_dataset) and config.run_name == "first"
    # Before Start: the run's settings are in the form and its finished epoch on the plots.
    plots = window.plots
    steps = plots.point_count("loss_raw")
    assert steps > 0 and plots.plotted_count("loss_raw") == steps
    assert plots.plotted_count("loss_val_epoch") == 1
    assert window.right_tabs.currentWidget() is window.training_tab
    assert "Start continues with epoch 2" in window.status_panel.state_label.text()
    window.config_form.update_config(epochs=2)
    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        assert window.start_training()
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)
    # After it: epoch 1 is still drawn, epoch 2 after it, and the x axis shows both.
    assert plots.point_count("loss_val_epoch") == 2 and plots.point_count("loss_raw") == 2 * steps
    assert plots.plot_items()[0].viewRange()[0][0] < 0.5

    assert ended.args[0].status == "completed" and ended.args[0].epochs_completed == 2
    assert ended.args[0].run_dir == first.run_dir
    assert load_checkpoint(first.last_checkpoint_path)["epoch"] == 2
    assert window.config_form.config().resume == ""  # the next Start is a new run


def test_resume_without_the_runs_config_is_refused(qtbot, window, tmp_path):
    stray = tmp_path / "elsewhere" / "last.pt"
    stray.parent.mkdir()
    stray.write_bytes(b"x")
    assert not window.resume_from(str(stray))
    assert "config.json" in window.last_error and str(stray) in window.last_error
    assert window.config_form.config().resume == ""
