"""The main window's layout, kept apart from its behaviour."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QSplitter, QTabWidget, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from workbench.gui.main_window import MainWindow


def build_main_layout(window: MainWindow) -> None:
    """Place the window's panels: dataset and preview tabs on the left; controls over the
    settings, training and results tabs on the right; the device line in the status bar."""
    window.dataset_page, window.dataset_placeholder = _placeholder_page("Loading\u2026")
    window.plots_page, window.plots_placeholder = _placeholder_page("Loading plots\u2026")
    window.left_tabs = QTabWidget()
    window.left_tabs.addTab(window.dataset_page, "Dataset")
    window.left_tabs.addTab(window.preview_panel, "Preview")
    settings_page = QWidget()
    settings_page.setMaximumWidth(860)  # long rows of wide fields are hard to read
    settings_layout = QVBoxLayout(settings_page)
    settings_layout.addWidget(window.device_panel)
    settings_layout.addWidget(window.config_form)
    settings_scroll = QScrollArea()
    settings_scroll.setWidgetResizable(True)
    settings_scroll.setWidget(settings_page)
    window.training_tab = QSplitter(Qt.Orientation.Vertical)
    window.training_tab.addWidget(window.status_panel)
    window.training_tab.addWidget(window.plots_page)
    window.training_tab.addWidget(window.log_panel)
    window.training_tab.setStretchFactor(1, 1)
    window.training_tab.setSizes([200, 640, 130])
    window.right_tabs = QTabWidget()
    window.right_tabs.addTab(settings_scroll, "Settings")
    window.right_tabs.addTab(window.training_tab, "Training")
    window.right_tabs.addTab(window.results_panel, "Results")
    right = QWidget()
    right_layout = QVBoxLayout(right)
    right_layout.setContentsMargins(0, 0, 0, 0)
    right_layout.addWidget(window.controls)
    right_layout.addWidget(window.right_tabs, 1)
    splitter = QSplitter(Qt.Orientation.Horizontal)
    splitter.addWidget(window.left_tabs)
    splitter.addWidget(right)
    splitter.setSizes([600, 1000])
    window.setCentralWidget(splitter)
    window.statusBar().addPermanentWidget(window.device_status)



def _placeholder_page(text: str) -> tuple[QWidget, QLabel]:
    """A page holding a centred label until its real panel is added below it."""
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.setContentsMargins(0, 0, 0, 0)
    label = QLabel(text, page)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    layout.addWidget(label)
    return page, label
