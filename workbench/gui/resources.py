"""Where the icon and the stylesheet are found.

``resources/`` sits next to the ``workbench`` package: in a checkout (or an editable install)
that is the repository root, and the PyInstaller spec copies it to the same place relative to
the frozen package, so one rule covers both. A wheel does not ship ``resources/``; the
functions below then fall back to no stylesheet and the platform's default icon, so the
window still opens.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QIcon

RESOURCES_DIR = Path(__file__).resolve().parent.parent.parent / "resources"


def resource_path(name: str) -> Path:
    """The path of ``resources/<name>``.

    Raises:
        FileNotFoundError: the file is not there (e.g. in a wheel install).
    """
    path = RESOURCES_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: resource not found")
    return path


def app_icon() -> QIcon:
    """The application icon (SVG where Qt can draw it, else the PNG); empty when missing."""
    icon = QIcon()
    for name in ("workbench.svg", "workbench.png"):
        try:
            icon.addFile(str(resource_path(name)))
        except FileNotFoundError:
            continue
    return icon


def stylesheet() -> str:
    """The application stylesheet, or "" when it is missing."""
    try:
        return resource_path("style.qss").read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
