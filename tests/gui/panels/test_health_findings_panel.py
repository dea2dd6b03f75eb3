"""The data health panel: Cancel stops the check and no report arrives after it (the whole
flow in the window is in tests/gui/window/test_data_health.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from workbench.core.data.health.generated_folders import write_distinct_images
from workbench.gui.panels.health_findings_panel import HealthFindingsPanel

CHECK_TIMEOUT_MS = 30_000


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_cancel_stops_the_check_and_no_report_arrives(qtbot, tmp_path, cache):
    root = tmp_path / "many"
    write_distinct_images(root / "a", 60, seed=1)
    write_distinct_images(root / "b", 60, seed=2)
    panel = HealthFindingsPanel()
    qtbot.addWidget(panel)
    panel.set_folder(str(root))
    with qtbot.assertNotEmitted(panel.report_ready, wait=200):
        with qtbot.waitSignal(panel._checker.cancelled, timeout=CHECK_TIMEOUT_MS):
            qtbot.mouseClick(panel.check_button, Qt.MouseButton.LeftButton)
            assert panel.cancel_button.isEnabled()
            qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert panel.report() is None
    assert "cancelled" in panel.status_label.text()
    assert panel.check_button.isEnabled() and not panel.cancel_button.isEnabled()
    assert panel.wait_for_done(10_000)
