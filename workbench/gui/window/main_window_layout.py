"""The main window's layout, kept apart from its behaviour: panels in, placed widgets out."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QLabel,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.gui.widgets.vertical_scroll_area import VerticalScrollArea


@dataclass(frozen=True)
class MainLayout:
    """The containers the window keeps a hold of; ``central`` becomes its central widget."""

    central: QSplitter
    left_tabs: QTabWidget
    right_tabs: QTabWidget
    training_tab: QWidget
    dataset_page: QWidget
    dataset_placeholder: QLabel
    plots_page: QWidget
    plots_placeholder: QLabel


def build_main_layout(*, preview_panel: QWidget, device_panel: QWidget, config_form: QWidget,
                      controls: QWidget, status_panel: QWidget, log_panel: QWidget,
                      results_panel: QWidget) -> MainLayout:
    """Place the panels: dataset, preview and log tabs on the left; controls over the settings,
    training and results tabs on the right. The dataset panel and the plots go into their pages
    later (they import pyqtgraph), under a placeholder until then.

    The training tab is the run's status over the plots and nothing else, so the five plots
    stay readable on a 1366x768 screen; the log sits on the left, where it can be read beside
    the plots during a run."""
    dataset_page, dataset_placeholder = _placeholder_page("Loading\u2026")
    plots_page, plots_placeholder = _placeholder_page("Loading plots\u2026")
    left_tabs = QTabWidget()
    left_tabs.addTab(VerticalScrollArea(dataset_page), "Dataset")
    left_tabs.addTab(preview_panel, "Preview")
    left_tabs.addTab(log_panel, "Log")
    settings_page = QWidget()
    settings_page.setMaximumWidth(860)  # long rows of wide fields are hard to read
    settings_layout = QVBoxLayout(settings_page)
    settings_layout.addWidget(device_panel)
    settings_layout.addWidget(config_form)
    settings_scroll = QScrollArea()
    settings_scroll.setWidgetResizable(True)
    settings_scroll.setWidget(settings_page)
    training_content = QWidget()
    training_layout = QVBoxLayout(training_content)
    training_layout.setContentsMargins(0, 0, 0, 0)
    training_layout.setSpacing(0)
    training_layout.addWidget(status_panel)  # its height follows its text: nothing is clipped
    training_layout.addWidget(plots_page, 1)
    training_tab = QWidget()  # a banner can go above the scrolling content
    tab_layout = QVBoxLayout(training_tab)
    tab_layout.setContentsMargins(0, 0, 0, 0)
    tab_layout.setSpacing(0)
    tab_layout.addWidget(VerticalScrollArea(training_content), 1)
    right_tabs = QTabWidget()
    right_tabs.setUsesScrollButtons(True)  # more tabs than fit scroll rather than widen it
    right_tabs.addTab(settings_scroll, "Settings")
    right_tabs.addTab(training_tab, "Training")
    right_tabs.addTab(results_panel, "Results")
    right = QWidget()
    right_layout = QVBoxLayout(right)
    right_layout.setContentsMargins(0, 0, 0, 0)
    right_layout.addWidget(controls)
    right_layout.addWidget(right_tabs, 1)
    central = QSplitter(Qt.Orientation.Horizontal)
    central.addWidget(left_tabs)
    central.addWidget(right)
    central.setSizes([600, 1000])
    return MainLayout(central, left_tabs, right_tabs, training_tab, dataset_page,
                      dataset_placeholder, plots_page, plots_placeholder)


def _placeholder_page(text: str) -> tuple[QWidget, QLabel]:
    """A page holding a centred label until its real panel is added below it."""
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.setContentsMargins(0, 0, 0, 0)
    label = QLabel(text, page)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    layout.addWidget(label)
    return page, label
