"""Where the icon and the stylesheet are found.

``resources/`` sits next to the ``workbench`` package: in a checkout (or an editable install)
that is the repository root, and ``packaging/workbench.spec`` copies it to the same place
relative to the frozen package, so one rule covers both. A wheel does not ship ``resources/``:
``resource_path`` then names a file that does not exist, and ``app_icon``/``stylesheet`` fall
back to the platform's look, so the window still opens.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QIcon

RESOURCES_DIR = Path(__file__).resolve().parent.parent.parent / "resources"


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
