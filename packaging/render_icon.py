"""Render resources/workbench.svg to resources/workbench.png (256x256) with Qt's SVG renderer.

Run after editing the SVG: ``QT_QPA_PLATFORM=offscreen python packaging/render_icon.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
SIZE = 256


def render(svg: Path, png: Path, size: int = SIZE) -> None:
    """Draw ``svg`` into a transparent ``size`` x ``size`` PNG."""
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg}: not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    if not image.save(str(png)):
        raise SystemExit(f"{png}: cannot write")


def main() -> int:
    QGuiApplication(sys.argv)
    render(RESOURCES / "workbench.svg", RESOURCES / "workbench.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
