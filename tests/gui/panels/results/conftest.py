"""The Results panel showing a finished run, its predictions read."""

from __future__ import annotations

import pytest

from workbench.gui.panels.results_panel import ResultsPanel

TIMEOUT_MS = 240_000


@pytest.fixture
def panel(qtbot, finished_run) -> ResultsPanel:
    """A shown ResultsPanel after ``finished_run``, its predictions.csv read."""
    panel = ResultsPanel()
    qtbot.addWidget(panel)
    panel.resize(1200, 700)
    panel.show()
    with qtbot.waitSignal(panel.predictions_loaded, timeout=TIMEOUT_MS):
        panel.show_run_start(finished_run.start)
        for event in finished_run.epochs:
            panel.show_epoch_end(event)
        panel.show_run_end(finished_run.end)
    qtbot.waitUntil(lambda: not panel.is_loading_predictions())
    return panel
