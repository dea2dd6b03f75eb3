"""The data health panel: Cancel stops the check and no report arrives after it; after a
check the dataset panel shows the split that keeps copies together (the whole flow in the
window is in tests/gui/window/test_data_health.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from tests.core.data.health.conftest import near_copy_maker, write_flat_folder_with_copies
from workbench.core.data.health.generated_folders import write_distinct_images
from workbench.gui.panels.dataset.dataset_panel import DatasetPanel
from workbench.gui.panels.dataset.health_findings_panel import HealthFindingsPanel

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


def test_after_a_check_the_panel_shows_the_split_that_keeps_copies_together(qtbot, tmp_path,
                                                                             cache):
    root = tmp_path / "flat"
    groups = write_flat_folder_with_copies(root, near_copy_maker())
    panel = DatasetPanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.dataset_scanned, timeout=CHECK_TIMEOUT_MS) as first:
        panel.set_folder(str(root))

    def straddling(scan) -> list[set[str]]:
        train, val = {p for p, _ in scan.train}, {p for p, _ in scan.val}
        return [g for g in groups if g & train and g & val]

    assert straddling(first.args[0]), "near copies straddle the split before any check"
    with qtbot.waitSignals([panel.health_panel.report_ready, panel.dataset_scanned],
                           order="strict", timeout=CHECK_TIMEOUT_MS):
        qtbot.mouseClick(panel.health_panel.check_button, Qt.MouseButton.LeftButton)
    rescanned = panel.scan()
    assert rescanned is not first.args[0] and straddling(rescanned) == []
    assert panel.wait_for_scan(30_000)
