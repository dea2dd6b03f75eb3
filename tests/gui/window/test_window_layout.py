"""The window fits the screen it opens on, and its plots stay readable there: sized from the
available geometry (1366x768 and 1920x1080 emulated, and the real offscreen screen), each plot at
least ~150 px high, and long text never widens it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSize

from workbench.core.runs.events import RunEnd
from workbench.gui.window.main_window import MainWindow
from workbench.gui.window.window_geometry import fit_rect_to, window_size_for

READABLE_PLOT_HEIGHT = 150
SMALLEST_SCREEN = QSize(1280, 720)


@pytest.fixture
def window(qtbot) -> MainWindow:
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    return win


def plot_heights(window: MainWindow) -> list[float]:
    return [plot.geometry().height() for plot in window.plots.plot_items()]


def test_the_window_fits_the_real_screen_and_never_needs_more_than_a_small_one(window):
    available = window.screen().availableGeometry()
    assert available.contains(window.frameGeometry()) or \
        available.contains(window.geometry()), (window.frameGeometry(), available)
    minimum = window.minimumSizeHint()
    assert minimum.width() <= SMALLEST_SCREEN.width() - 16
    assert minimum.height() <= SMALLEST_SCREEN.height() - 40


@pytest.mark.parametrize("screen", [QSize(1366, 768), QSize(1920, 1080)],
                         ids=["1366x768", "1920x1080"])
def test_on_a_screen_the_window_fits_and_every_plot_is_readable(qtbot, window, screen):
    size = window_size_for(screen)
    assert size.width() <= screen.width() and size.height() <= screen.height()

    window.resize(size)
    window.right_tabs.setCurrentWidget(window.training_tab)
    qtbot.waitUntil(lambda: window.size() == size and window.plots.isVisible())
    qtbot.wait(50)  # the plots' scene lays out on the next pass

    heights = plot_heights(window)
    assert min(heights) >= READABLE_PLOT_HEIGHT, heights
    plots = window.plots
    # Every plot lies inside the canvas that shows it: none is cut off at the right or bottom.
    canvas = plots._canvas.viewport().rect()
    for plot in plots.plot_items():
        assert canvas.contains(plot.mapRectToScene(plot.boundingRect()).toRect()), plot


def test_a_size_from_a_4k_screen_is_moved_and_shrunk_onto_a_laptop_screen():
    laptop = QRect(0, 0, 1366, 728)  # 1366x768 less a task bar
    assert window_size_for(QSize(3840, 2160)) == QSize(2560, 1600)

    fitted = fit_rect_to(QRect(2000, 900, 2560, 1600), laptop)

    assert laptop.contains(fitted) and fitted.width() <= 1350 and fitted.height() <= 688
    assert fit_rect_to(QRect(100, 50, 800, 600), laptop) == QRect(100, 50, 800, 600)


def test_a_failed_run_with_a_long_error_leaves_the_width_unchanged(qtbot, window):
    window.resize(window_size_for(QSize(1366, 768)).boundedTo(
        window.screen().availableGeometry().size()))
    window.right_tabs.setCurrentWidget(window.training_tab)  # where the state label is
    qtbot.wait(50)
    width, minimum = window.width(), window.minimumSizeHint().width()
    error = "RuntimeError: " + " ".join(f"word{i}" for i in range(300))[:1986]
    assert len(error) == 2000

    window.controller.errored.emit(error)
    window.controller.run_ended.emit(RunEnd("failed", 1, 1, 0.5, "", "", "", 3.0, error))
    qtbot.wait(50)

    assert window.width() == width and window.minimumSizeHint().width() == minimum
    state = window.status_panel.state_label
    assert error in state.text() and state.is_elided()
    assert error in state.toolTip()  # the whole error is one hover away, and in the log
    assert error in window.log_panel.toPlainText()
    assert window.last_error == error


def test_a_long_start_problem_leaves_the_window_and_the_plots_unchanged(qtbot, window):
    window.right_tabs.setCurrentWidget(window.training_tab)
    qtbot.wait(50)
    width, minimum = window.width(), window.minimumSizeHint().width()
    controls, plots = window.controls.height(), window.plots.height()

    window.config_form.update_config(data_root="/nowhere/" + "very-long-folder-name/" * 60)
    qtbot.wait(50)

    assert window.width() == width and window.minimumSizeHint().width() == minimum
    assert window.controls.height() == controls and window.plots.height() == plots
    label = window.controls.problem_label
    assert label.text().startswith("Cannot start: Data folder (data_root)") and label.is_elided()
