"""Nothing of a previous run stays on screen as if it were current: a new Start clears the
Results and Training tabs before the new run's first event, results still being read when
Start is pressed never arrive, another image folder clears the Training tab and marks the
results as the previous run's, and a failure before the first epoch is shown on a cleared tab."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QMessageBox

import workbench.gui.panels.results_panel as results_panel_module
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.predictions_file import read_predictions
from workbench.core.runs.run_index import best_epoch_events
from workbench.gui.panels.results_panel import PREVIOUS_RUN_NOTE
from workbench.gui.window.main_window import MainWindow

RUN_TIMEOUT_MS = 120_000
DASH = "\u2014"


def open_dataset(qtbot, window: MainWindow, folder: Path) -> None:
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=30_000):
        window.open_folder(str(folder))


def click_start(qtbot, window: MainWindow) -> None:
    """Click Start once the pre-flight check of the current settings lets it."""
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)
    qtbot.mouseClick(window.controls.start_button, Qt.MouseButton.LeftButton)


def train_first_run(qtbot, window: MainWindow, folder: Path, config: TrainConfig) -> None:
    """Open ``folder``, click Start with ``config`` and wait until the run has finished."""
    open_dataset(qtbot, window, folder)
    window.apply_config(config)
    with qtbot.waitSignal(window.controller.finished, timeout=RUN_TIMEOUT_MS):
        click_start(qtbot, window)
    results = window.results_panel
    qtbot.waitUntil(lambda: not results.is_reading() and bool(results.analysis.rows()),
                    timeout=30_000)


def points_drawn(window: MainWindow) -> int:
    """Points of every curve on the Training tab's plots, as drawn now."""
    total = 0
    for plot in window.plots.plot_items():
        for item in plot.listDataItems():
            xs, _ = item.getData()
            total += 0 if xs is None else len(xs)
    return total


def status_figures(window: MainWindow) -> dict[str, object]:
    status = window.status_panel
    return {"epoch": (status.epoch_bar.value(), status.epoch_bar.format()),
            "step": (status.step_bar.value(), status.step_bar.format()),
            "speed": status.speed_label.text(), "time left": status.eta_label.text(),
            "device": status.device_label.text(), "bottleneck": status.bottleneck_text()}


CLEARED_STATUS = {"epoch": (0, "Epoch"), "step": (0, "Step"), "speed": DASH, "time left": DASH,
                  "device": DASH, "bottleneck": DASH}


def assert_first_run_is_shown(window: MainWindow, epochs: int) -> None:
    """The dirty state is visible, so the checks after it can see a leftover."""
    results = window.results_panel
    assert results.table.rowCount() == 4
    assert sum(map(sum, results.confusion_view.matrix())) == 16
    assert results.analysis.top_losses_gallery.count() > 0
    assert f" of {epochs}: validation accuracy" in results.summary_label.text()
    window.plots.flush()
    assert window.plots.plotted_count("accuracy_val_epoch") == epochs
    assert points_drawn(window) > 0
    status = status_figures(window)
    assert status["epoch"] == (100, f"Epoch {epochs}/{epochs}")
    assert "images/s" in status["speed"] and status["device"].startswith("cpu")
    assert status["bottleneck"] not in (DASH, "")


def test_a_new_start_clears_the_results_tab_before_the_new_run_shows(
        qtbot, window, shapes_dataset, tiny_config):
    train_first_run(qtbot, window, shapes_dataset, tiny_config)
    results = window.results_panel
    assert_first_run_is_shown(window, epochs=2)
    first_dir = results.run_dir()
    assert first_dir in results.summary_label.text()

    at_run_started: dict[str, object] = {}

    def look_at_the_tabs(event) -> None:  # connected after the window's own slots
        at_run_started.update(
            rows=results.table.rowCount(), matrix=results.confusion_view.matrix(),
            galleries=[g.count() for g in results.analysis.galleries()],
            predictions=results.analysis.rows(), summary=results.summary_label.text(),
            hint=results.analysis.hint.text(), run_dir=results.run_dir(),
            points=points_drawn(window))

    window.controller.run_started.connect(look_at_the_tabs)
    epochs = []
    window.controller.epoch_ended.connect(epochs.append)
    # Another seed, so the second run's predictions differ from the first's.
    window.apply_config(tiny_config.replace(epochs=3, seed=1))
    with qtbot.waitSignal(window.controller.run_started, timeout=RUN_TIMEOUT_MS) as started:
        click_start(qtbot, window)
    second_dir = started.args[0].run_dir
    assert second_dir != first_dir
    assert at_run_started == {
        "rows": 0, "matrix": (), "galleries": [0, 0, 0], "predictions": [],
        "summary": "Training\u2026 results appear after each epoch.",
        "hint": "Predictions appear after the first epoch.", "run_dir": second_dir,
        "points": 0}

    qtbot.waitUntil(lambda: results.table.rowCount() == 4, timeout=RUN_TIMEOUT_MS)
    window.controller.request_stop()  # the first epoch is all this test needs
    assert window.controller.wait_finished(60)
    qtbot.waitUntil(lambda: not results.is_reading() and bool(results.analysis.rows()),
                    timeout=30_000)
    assert results.run_dir() == second_dir
    assert results.confusion_view.matrix() == epochs[0].confusion
    assert "Best epoch 1 of 3" in results.summary_label.text()
    # Runs started within one second share a stamp ('...-081801' and '...-081801-2'):
    # the folder as the summary ends it, not as a prefix of the second one.
    summary = results.summary_label.text()
    assert f"{first_dir}." not in summary and summary.endswith(f"{second_dir}.")
    assert results.analysis.rows() == read_predictions(second_dir)
    assert read_predictions(second_dir) != read_predictions(first_dir)
    window.plots.flush()
    assert window.plots.plotted_count("accuracy_val_epoch") == 1


def test_results_still_being_read_when_start_is_pressed_never_show(
        qtbot, window, shapes_dataset, tiny_config, finished_run, monkeypatch):
    release = threading.Event()
    read: list[str] = []

    def slow_best_epoch_events(run_dir: str):
        release.wait(60)  # still reading when Start is pressed
        read.append(run_dir)
        return best_epoch_events(run_dir)

    monkeypatch.setattr(results_panel_module, "best_epoch_events", slow_best_epoch_events)
    open_dataset(qtbot, window, shapes_dataset)
    old_dir = finished_run.end.run_dir
    runs, results = window.after_training.runs_panel, window.results_panel
    with qtbot.waitSignal(runs.runs_listed, timeout=30_000):
        window.config_form.update_config(output_dir=str(Path(old_dir).parent))
    runs.select_rows([0])
    qtbot.mouseClick(runs.open_button, Qt.MouseButton.LeftButton)
    assert results.is_reading() and old_dir in results.summary_label.text()

    window.apply_config(tiny_config.replace(epochs=3))
    window.controller.run_started.connect(lambda _event: release.set())
    with qtbot.waitSignal(window.controller.run_started, timeout=RUN_TIMEOUT_MS) as started:
        click_start(qtbot, window)
    qtbot.waitUntil(lambda: read == [old_dir] and not results.is_reading(), timeout=30_000)
    QCoreApplication.processEvents()  # the old read's outcome, queued before it was done
    new_dir = started.args[0].run_dir
    assert results.run_dir() == new_dir
    assert old_dir not in results.summary_label.text()
    assert " of 2: " not in results.summary_label.text()  # the old run's best epoch

    epochs = []
    window.controller.epoch_ended.connect(epochs.append)
    qtbot.waitUntil(lambda: bool(epochs), timeout=RUN_TIMEOUT_MS)
    window.controller.request_stop()
    assert window.controller.wait_finished(60)
    qtbot.waitUntil(lambda: not results.is_reading(), timeout=30_000)
    assert results.run_dir() == new_dir
    assert results.confusion_view.matrix() == epochs[0].confusion
    assert "Best epoch 1 of 3" in results.summary_label.text()


def test_another_folder_clears_the_training_tab_and_marks_the_results_as_the_previous_runs(
        qtbot, window, shapes_dataset, tiny_config, tmp_path):
    train_first_run(qtbot, window, shapes_dataset, tiny_config.replace(epochs=1))
    assert_first_run_is_shown(window, epochs=1)
    results_text = window.results_panel.summary_label.text()
    other = write_shape_dataset(tmp_path / "other", classes=("circle", "square"), per_class=4,
                                size=(32, 32))

    open_dataset(qtbot, window, other)

    assert status_figures(window) == CLEARED_STATUS
    assert window.status_panel.state_label.text() == f"Idle: {other} is open; Start trains on it."
    assert points_drawn(window) == 0
    results = window.results_panel
    assert results.summary_label.text() == f"{PREVIOUS_RUN_NOTE} {results_text}"
    assert results.table.rowCount() == 4  # still there to look at or export, marked
    assert results.export_button.isEnabled()


def test_a_failure_before_the_first_epoch_is_shown_without_the_previous_runs_figures(
        qtbot, window, shapes_dataset, tiny_config, tmp_path):
    train_first_run(qtbot, window, shapes_dataset, tiny_config.replace(epochs=1))
    assert_first_run_is_shown(window, epochs=1)
    loss_plot = window.plots.plot_items()[0]
    assert loss_plot.viewRange()[0][1] > 0.9  # the first run's epoch axis
    # A weights file that exists but holds no weights: the pre-flight check lets Start go
    # (it checks that the file is there), and the run fails while it builds the model.
    in_the_way = tmp_path / "not_weights.pt"
    in_the_way.write_text("not a state dict")
    window.config_form.update_config(weights="file", weights_file=str(in_the_way))
    started = []
    window.controller.run_started.connect(started.append)

    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        click_start(qtbot, window)

    assert ended.args[0].status == "failed" and not started
    boxes = [box for box in window.findChildren(QMessageBox) if box.isVisible()]
    assert [box.text() for box in boxes] == [ended.args[0].error]
    assert str(in_the_way) in ended.args[0].error
    assert window.right_tabs.currentWidget() is window.training_tab
    state = window.status_panel.state_label.text()
    assert state.startswith("Failed after 0 epoch(s)")
    assert status_figures(window) == CLEARED_STATUS
    assert points_drawn(window) == 0
    for plot in window.plots.plot_items()[:4]:  # the first run's axes are gone too
        (x_low, x_high), (y_low, y_high) = plot.viewRange()
        percent = plot is window.plots.accuracy_plot  # always 0-100 %
        assert (x_low, x_high, y_low, y_high) == (0, 1, 0, 100 if percent else 1), \
            plot.titleLabel
    results = window.results_panel
    assert results.table.rowCount() == 0 and results.confusion_view.matrix() == ()
    assert results.summary_label.text().startswith("No epoch finished")
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)
