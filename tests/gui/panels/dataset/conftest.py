"""The dataset panel on its own, as its tests drive it."""

from __future__ import annotations

import pytest

from workbench.gui.panels.dataset.dataset_panel import DatasetPanel


@pytest.fixture
def panel(qtbot):
    """A DatasetPanel sized like the window's left pane; its last scan must finish."""
    widget = DatasetPanel()
    qtbot.addWidget(widget)
    widget.resize(1000, 650)
    yield widget
    assert widget.wait_for_scan(10_000)
