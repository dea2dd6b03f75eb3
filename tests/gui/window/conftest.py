"""The main window as the window tests drive it: shown, not asking before it closes, and
left with no run and no learning-rate test still going."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from workbench.gui.window.main_window import MainWindow


@pytest.fixture
def window(qtbot) -> Iterator[MainWindow]:
    """A shown MainWindow; a run still going at the end is stopped and waited for."""
    win = MainWindow()
    qtbot.addWidget(win)
    win.ask_before_closing_during_training = False
    win.show()
    qtbot.waitExposed(win)
    yield win
    win.lr_finder.cancel()  # the pool is drained after each test (tests/gui/conftest.py)
    if win.controller.is_running():
        win.controller.request_stop()
        assert win.controller.wait_finished(60)
