"""The check of Qt's xcb platform libraries that runs before the window is created."""

from __future__ import annotations

import sys

import pytest

from workbench.gui import app
from workbench.gui.platform_libraries import (
    XCB_PLUGIN_LIBRARIES,
    SystemLibrary,
    check_platform_libraries,
    qt_platform,
)

ABSENT = (SystemLibrary("libxcb-cursor.so.0", "libxcb-cursor0", "xcb-util-cursor"),
          SystemLibrary("libworkbench-absent-a.so.0", "libxcb-icccm4", "xcb-util-wm"),
          SystemLibrary("libworkbench-absent-b.so.1", "libxcb-keysyms1", "xcb-util-keysyms"))

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="xcb is Linux's")


def test_the_platform_qt_will_use_is_read_from_the_environment():
    assert qt_platform({}) == "xcb"
    assert qt_platform({"QT_QPA_PLATFORM": "offscreen"}) == "offscreen"
    assert qt_platform({"QT_QPA_PLATFORM": "wayland;xcb"}) == "wayland"
    assert qt_platform({"XDG_SESSION_TYPE": "wayland", "WAYLAND_DISPLAY": "wayland-0"}) == \
        "wayland"


@linux_only
def test_missing_libraries_are_named_with_their_debian_and_fedora_packages():
    message = check_platform_libraries({"DISPLAY": ":0"}, ABSENT)

    assert "libworkbench-absent-a.so.0, libworkbench-absent-b.so.1" in message
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1\n" in message
    assert "sudo dnf install xcb-util-wm xcb-util-keysyms\n" in message
    assert "libxcb-cursor0" not in message  # installed here: not asked for


@linux_only
def test_nothing_is_reported_where_the_libraries_are_or_another_platform_is_used():
    assert check_platform_libraries({"QT_QPA_PLATFORM": "offscreen"}, ABSENT) == ""
    # The test machine can open windows under Xvfb, so every library the plugin needs is here.
    assert check_platform_libraries({"QT_QPA_PLATFORM": "xcb"}, XCB_PLUGIN_LIBRARIES) == ""


@linux_only
def test_the_app_stops_before_qt_with_the_message(monkeypatch, capsys):
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setattr(app, "check_platform_libraries",
                        lambda: check_platform_libraries(libraries=ABSENT))

    def qt_reached() -> None:
        raise AssertionError("the QApplication was created despite missing libraries")

    monkeypatch.setattr(app, "create_application", qt_reached)

    assert app.main([]) == 1
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1" in capsys.readouterr().err
