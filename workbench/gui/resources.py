"""Where the icon and the stylesheet are found.

Installed from a wheel, they are inside the package, ``workbench/resources/`` (``setup.py``
copies them there at build time). In a checkout (or an editable install) ``resources/`` sits
next to the ``workbench`` package at the repository root, and ``packaging/workbench.spec``
copies it to the same place relative to the frozen package. Where neither has the files,
``app_icon``/``stylesheet`` fall back to the platform's look, so the window still opens.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QIcon

PACKAGE_DIR = Path(__file__).resolve().parent.parent
INSTALLED_RESOURCES = PACKAGE_DIR / "resources"
"""Inside the package: a wheel's install."""
CHECKOUT_RESOURCES = PACKAGE_DIR.parent / "resources"
"""Beside the package: a checkout, an editable install, the PyInstaller folder."""
RESOURCES_DIR = INSTALLED_RESOURCES if INSTALLED_RESOURCES.is_dir() else CHECKOUT_RESOURCES


def resource_path(name: str) -> Path:
    """The path of ``resources/<name>``; check ``is_file()`` where it may be missing."""
    return RESOURCES_DIR / name


def app_icon() -> QIcon:
    """The application icon (SVG and 256 px PNG); an empty icon when neither is there."""
    icon = QIcon()
    for name in ("workbench.svg", "workbench.png"):
        path = resource_path(name)
        if path.is_file():
            icon.addFile(str(path))
    return icon


def stylesheet() -> str:
    """The application stylesheet, or "" when it is missing."""
    path = resource_path("style.qss")
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""
