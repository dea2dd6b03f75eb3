"""Before the window opens on Linux: are the system libraries Qt's xcb platform plugin loads
installed? Without them Qt stops with a message that names only the first one missing; this
check names every missing library and the packages that provide it, on Debian/Ubuntu and
Fedora, so one install command fixes it.

Nothing here imports Qt: it runs before the QApplication is created.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SystemLibrary:
    """A shared library the xcb plugin links, and the packages that install it."""

    soname: str
    debian: str
    fedora: str


# What PySide6's libqxcb.so and libQt6XcbQpa.so link beyond Qt itself (from ldd).
XCB_PLUGIN_LIBRARIES = (
    SystemLibrary("libxcb-cursor.so.0", "libxcb-cursor0", "xcb-util-cursor"),
    SystemLibrary("libxcb-icccm.so.4", "libxcb-icccm4", "xcb-util-wm"),
    SystemLibrary("libxcb-keysyms.so.1", "libxcb-keysyms1", "xcb-util-keysyms"),
    SystemLibrary("libxcb-image.so.0", "libxcb-image0", "xcb-util-image"),
    SystemLibrary("libxcb-render-util.so.0", "libxcb-render-util0", "xcb-util-renderutil"),
    SystemLibrary("libxcb-util.so.1", "libxcb-util1", "xcb-util"),
    SystemLibrary("libxcb-randr.so.0", "libxcb-randr0", "libxcb"),
    SystemLibrary("libxcb-render.so.0", "libxcb-render0", "libxcb"),
    SystemLibrary("libxcb-shape.so.0", "libxcb-shape0", "libxcb"),
    SystemLibrary("libxcb-shm.so.0", "libxcb-shm0", "libxcb"),
    SystemLibrary("libxcb-sync.so.1", "libxcb-sync1", "libxcb"),
    SystemLibrary("libxcb-xfixes.so.0", "libxcb-xfixes0", "libxcb"),
    SystemLibrary("libxcb-xkb.so.1", "libxcb-xkb1", "libxcb"),
    SystemLibrary("libxcb.so.1", "libxcb1", "libxcb"),
    SystemLibrary("libxkbcommon.so.0", "libxkbcommon0", "libxkbcommon"),
    SystemLibrary("libxkbcommon-x11.so.0", "libxkbcommon-x11-0", "libxkbcommon-x11"),
    SystemLibrary("libX11-xcb.so.1", "libx11-xcb1", "libX11-xcb"),
    SystemLibrary("libX11.so.6", "libx11-6", "libX11"),
)


def qt_platform(environ: Mapping[str, str] | None = None) -> str:
    """The platform plugin Qt will use: QT_QPA_PLATFORM's first choice, else Wayland in a
    Wayland session and xcb otherwise."""
    env = os.environ if environ is None else environ
    chosen = env.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    if chosen:
        return chosen
    if env.get("XDG_SESSION_TYPE") == "wayland" and env.get("WAYLAND_DISPLAY"):
        return "wayland"
    return "xcb"


def missing_libraries(libraries: Sequence[SystemLibrary] = XCB_PLUGIN_LIBRARIES,
                      ) -> list[SystemLibrary]:
    """The libraries of ``libraries`` the dynamic loader cannot find."""
    missing = []
    for library in libraries:
        try:
            ctypes.CDLL(library.soname)
        except OSError:
            missing.append(library)
    return missing


def missing_libraries_message(missing: Sequence[SystemLibrary]) -> str:
    """What is missing and the install commands that add it ('' when nothing is)."""
    if not missing:
        return ""
    debian = " ".join(dict.fromkeys(library.debian for library in missing))
    fedora = " ".join(dict.fromkeys(library.fedora for library in missing))
    names = ", ".join(library.soname for library in missing)
    return (f"Workbench cannot open its window: Qt's xcb platform plugin needs system "
            f"libraries that are not installed ({names}).\n"
            f"  Debian/Ubuntu: sudo apt-get install {debian}\n"
            f"  Fedora:        sudo dnf install {fedora}\n"
            "The command line (workbench train ...) does not need them.")


def check_platform_libraries(environ: Mapping[str, str] | None = None,
                             libraries: Sequence[SystemLibrary] = XCB_PLUGIN_LIBRARIES) -> str:
    """'' when the window can open; otherwise the message naming the packages to install.
    Only Linux with the xcb platform is checked."""
    if not sys.platform.startswith("linux") or qt_platform(environ) != "xcb":
        return ""
    return missing_libraries_message(missing_libraries(libraries))
