"""The speed probe button and the memory fit line: real work in the pool, results in the
panel, and (in the window) the fastest combination applied to the form."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.speed_memory_panel import SpeedMemoryPanel
from workbench.gui.window.main_window import MainWindow

TIMEOUT_MS = 120_000


def _config(tmp_path, **changes: object) -> TrainConfig:
    data = write_shape_dataset(tmp_path / "data", per_class=4, size=(40, 32),
                               layout="train_val", val_per_class=2)
    return TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=4, epochs=1,
        workers=0, output_dir=str(tmp_path / "runs"), device="cpu", amp=True,
        channels_last=True, cache_images=False,
    ).replace(**changes)


def test_the_memory_line_says_the_cpu_is_not_limited(qtbot, tmp_path):
    panel = SpeedMemoryPanel()
    qtbot.addWidget(panel)
    panel.check_memory(_config(tmp_path), 4)
    qtbot.waitUntil(lambda: panel.memory_text() != "", timeout=TIMEOUT_MS)
    assert panel.memory_text().startswith("Memory is not limited on the CPU")
    qtbot.waitUntil(lambda: not panel.is_busy(), timeout=TIMEOUT_MS)


def test_the_window_probes_on_a_click_and_applies_the_fastest(qtbot, tmp_path):
    window = MainWindow()
    qtbot.addWidget(window)
    window.resize(1366, 768)
    window.show()
    window.config_form.set_config(_config(tmp_path))
    measurements = window.device_panel.measurements
    qtbot.waitUntil(lambda: "not limited" in measurements.memory_text(), timeout=TIMEOUT_MS)
    # Before a probe nothing but the layout's spacing lies between its button and the form.
    assert _gap_under_probe_button(window) <= 20
    with qtbot.waitSignal(measurements.probe_finished, timeout=TIMEOUT_MS) as finished:
        qtbot.mouseClick(measurements.probe_button, Qt.MouseButton.LeftButton)
        assert not measurements.probe_button.isEnabled()  # the click returned; it runs on
    result = finished.args[0]
    # float32 at batch 4 and 8, in the layout a CPU run uses: nothing it would not apply.
    assert [(row.channels_last, row.batch_size) for row in result.rows] == [(False, 4),
                                                                            (False, 8)]
    table = measurements.probe_label.text().splitlines()
    assert len(table) == 3 and all(line.split()[1] == "off" for line in table[1:])
    assert "channels_last was not measured" in measurements.probe_summary.text()
    fastest = result.fastest
    config = window.config_form.config()
    assert (config.amp, config.channels_last, config.batch_size) == \
        (False, True, fastest.batch_size)
    assert "<- fastest" in measurements.probe_label.text()
    qtbot.waitUntil(lambda: _gap_under_probe_button(window) >= measurements.probe_label.height())
    assert measurements.probe_label.height() > 40  # the table's rows are on screen
    assert "Speed probe: Fastest on cpu" in window.log_panel.toPlainText()
    qtbot.waitUntil(lambda: not measurements.is_busy(), timeout=TIMEOUT_MS)


def _gap_under_probe_button(window: MainWindow) -> int:
    """Pixels between the bottom of "Probe speed" and the top of the settings form."""
    button = window.device_panel.measurements.probe_button
    button_bottom = button.mapTo(window, button.rect().bottomLeft()).y()
    form_top = window.config_form.mapTo(window, window.config_form.rect().topLeft()).y()
    return form_top - button_bottom
