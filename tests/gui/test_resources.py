"""The icon and the stylesheet are found and work."""

from __future__ import annotations

from PySide6.QtGui import QImage, QPalette
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from workbench.gui.resources import app_icon, resource_path, stylesheet


def test_icon_files_are_found_and_the_png_is_256_pixels():
    png = QImage(str(resource_path("workbench.png")))
    assert (png.width(), png.height()) == (256, 256)
    assert resource_path("workbench.svg").is_file()
    icon = app_icon()
    assert not icon.isNull()
    assert icon.pixmap(64, 64).width() == 64


def test_stylesheet_colours_error_and_warning_labels(qtbot):
    text = stylesheet()
    assert 'QLabel[role="error"]' in text
    window = QWidget()
    qtbot.addWidget(window)
    window.setStyleSheet(text)  # a parse error would be a Qt warning, which fails the test
    labels = {}
    layout = QVBoxLayout(window)
    for role in ("error", "warning", "device", ""):
        label = QLabel(role or "plain")
        label.setProperty("role", role)
        layout.addWidget(label)
        labels[role] = label
    for label in labels.values():
        label.ensurePolished()

    def colour(role: str) -> str:
        return labels[role].palette().color(QPalette.ColorRole.WindowText).name()

    assert colour("error") == "#c0392b"
    assert colour("warning") == "#b9770e"
    assert colour("") not in ("#c0392b", "#b9770e")
    assert labels["device"].font().bold()
    assert not labels[""].font().bold()
