"""The export dialog: ticked formats are written, measured and tabled; the run report is saved."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt

from workbench.gui.panels.results_panel import ResultsPanel

TIMEOUT_MS = 300_000


def test_ticked_formats_are_measured_side_by_side_and_the_report_is_saved(
        qtbot, finished_run, tmp_path):
    panel = ResultsPanel()
    qtbot.addWidget(panel)
    panel.show_run_start(finished_run.start)
    for epoch in finished_run.epochs:
        panel.show_epoch_end(epoch)
    panel.show_run_end(finished_run.end)
    assert panel.export_measured_button.isEnabled()
    qtbot.mouseClick(panel.export_measured_button, Qt.MouseButton.LeftButton)
    dialog = panel.export_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.folder_edit.setText(str(tmp_path))
    dialog.format_boxes["onnx"].setChecked(True)
    dialog.format_boxes["onnx-int8"].setChecked(True)
    dialog.format_boxes["torchscript"].setChecked(False)
    dialog.format_boxes["onnx-fp16"].setChecked(False)

    with qtbot.waitSignal(dialog.all_done, timeout=TIMEOUT_MS):
        qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
        assert not dialog.export_button.isEnabled()  # one batch of exports at a time
    table = dialog.table
    assert table.rowCount() == 2
    assert [table.item(r, 0).text() for r in range(2)] == ["model.onnx", "model_int8.onnx"]
    sizes = [float(table.item(r, 3).text().split()[0]) for r in range(2)]
    assert sizes[0] > 3 * sizes[1]  # the INT8 file is the smaller one
    report = json.loads((tmp_path / "export_report.json").read_text())
    assert set(report["exports"]) == {"model.onnx", "model_int8.onnx"}
    for row, name in enumerate(("model.onnx", "model_int8.onnx")):
        figures = report["exports"][name]
        # The verdict first, beside the file name, in the same words as the file.
        assert table.horizontalHeaderItem(1).text() == "Verdict"
        assert table.item(row, 1).text() == figures["verdict"]
        assert figures["verdict"].startswith(("VERIFIED: ", "NOT VERIFIED: "))
        # How it was made and checked is a detail, in the last column: no second verdict.
        assert table.item(row, 8).text() == figures["verification"]
        assert figures["verification"].startswith("ONNX opset 18; max |difference|")
        assert [column for column in range(9)
                if "verified" in table.item(row, column).text().lower()] == [1]
        assert table.item(row, 6).text().startswith(f"{figures['latency_ms_median']:.2f} ms")
    assert "export_report.json" in dialog.status_label.text()
    assert dialog.export_button.isEnabled()

    with qtbot.waitSignal(dialog.report_saved, timeout=TIMEOUT_MS) as saved:
        qtbot.mouseClick(dialog.report_button, Qt.MouseButton.LeftButton)
    path = Path(saved.args[0])
    assert path.is_file() and path.parent == Path(finished_run.end.run_dir)
    assert str(path) in dialog.status_label.text()
    dialog.close()
