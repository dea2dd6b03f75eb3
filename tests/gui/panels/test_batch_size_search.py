"""The device panel's "Find largest batch" button: a real search in the pool, never the UI
thread, its result in the panel and (in the window) in the form's batch size.

The CPU has no memory limit to find, so the searches here simulate a GPU's limit
(``batch_search_memory_limit``), except the one that checks the CPU changes nothing."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.device_panel import DevicePanel
from workbench.gui.window.main_window import MainWindow

SEARCH_TIMEOUT_MS = 60_000
SIMULATED_LIMIT = 10**12  # bytes: more than these tiny batches keep, as on a large GPU


def cnn_config(**changes: object) -> TrainConfig:
    return TrainConfig(
        model="small_cnn", weights="none", finetune="full", crop_mode="standard",
        resize_size=20, crop_size=16, device="cpu", amp=False,
    ).replace(**changes)


def test_the_button_asks_and_the_search_reports_the_largest_batch(qtbot):
    panel = DevicePanel()
    qtbot.addWidget(panel)
    panel.batch_search_memory_limit = SIMULATED_LIMIT
    panel.show()
    panel.batch_search_requested.connect(lambda: panel.start_batch_search(cnn_config(),
                                                                          max_batch=4))
    with qtbot.waitSignal(panel.batch_size_found, timeout=SEARCH_TIMEOUT_MS) as found:
        qtbot.mouseClick(panel.batch_button, Qt.MouseButton.LeftButton)
        assert not panel.batch_button.isEnabled()  # the click returned; the search runs on
        assert panel.batch_label.text().startswith("Training a few steps")

    result = found.args[0]
    assert (result.largest_fitting, result.first_failing, result.batch_size) == (4, None, 3)
    assert result.tried == (1, 2, 4)
    assert panel.batch_button.isEnabled()
    assert panel.batch_label.text() == result.describe()
    assert "Recommended batch_size 3" in panel.batch_label.text()


def test_a_cancelled_search_reports_nothing(qtbot):
    panel = DevicePanel()
    qtbot.addWidget(panel)
    panel.batch_search_memory_limit = SIMULATED_LIMIT
    with qtbot.assertNotEmitted(panel.batch_size_found, wait=200):
        panel.start_batch_search(cnn_config(), max_batch=4096)
        panel.cancel_batch_search()
        qtbot.waitUntil(lambda: not panel.is_searching_batch(), timeout=SEARCH_TIMEOUT_MS)
    assert panel.batch_button.isEnabled()
    assert panel.batch_label.text() == "Batch size search stopped."


def test_a_bad_config_is_reported_not_raised(qtbot):
    panel = DevicePanel()
    qtbot.addWidget(panel)
    panel.batch_search_memory_limit = SIMULATED_LIMIT
    with qtbot.waitSignal(panel.batch_search_failed, timeout=SEARCH_TIMEOUT_MS) as failed:
        panel.start_batch_search(cnn_config(model="no_such_model"), max_batch=2)
    assert "no_such_model" in failed.args[0]
    assert panel.batch_label.text().startswith("The batch size search failed:")


def test_the_window_sets_the_form_batch_size_from_the_search(qtbot, tmp_path):
    window = MainWindow()
    qtbot.addWidget(window)
    window.config_form.set_config(cnn_config(batch_size=32, output_dir=str(tmp_path)))
    window.device_panel.batch_search_max = 6
    window.device_panel.batch_search_memory_limit = SIMULATED_LIMIT
    with qtbot.waitSignal(window.device_panel.batch_size_found, timeout=SEARCH_TIMEOUT_MS):
        qtbot.mouseClick(window.device_panel.batch_button, Qt.MouseButton.LeftButton)
    assert window.config_form.config().batch_size == 5  # int(0.9 * 6)
    assert "Recommended batch_size 5" in window.log_panel.toPlainText()


def test_on_the_cpu_the_window_says_there_is_no_limit_and_keeps_the_batch_size(qtbot, tmp_path):
    window = MainWindow()
    qtbot.addWidget(window)
    window.config_form.set_config(cnn_config(batch_size=32, output_dir=str(tmp_path)))
    with qtbot.assertNotEmitted(window.device_panel.batch_size_found), \
            qtbot.waitSignal(window.device_panel.batch_search_not_needed,
                             timeout=SEARCH_TIMEOUT_MS):
        qtbot.mouseClick(window.device_panel.batch_button, Qt.MouseButton.LeftButton)
    assert window.config_form.config().batch_size == 32
    label = window.device_panel.batch_label.text()
    assert "no memory limit to find on the CPU" in label and "left unchanged" in label
    assert "no memory limit to find on the CPU" in window.log_panel.toPlainText()
    assert window.device_panel.batch_button.isEnabled()
