"""The window's size and place from the screen it opens on, so it fits from 1280x720 to 4K.

Sizes here are in device-independent pixels (what Qt reports for a high-DPI screen), so the same
rules give a 4K screen at 200 % the layout of a 1920x1080 one.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtWidgets import QWidget

FULL_SCREEN_BELOW = QSize(1700, 1000)  # smaller screens: the window takes all the room there is
SHARE_OF_LARGE_SCREEN = 0.85
LARGEST = QSize(2560, 1600)  # beyond this, more room only spreads the panels apart
FRAME_ALLOWANCE = QSize(16, 40)  # the window manager's border and title bar, not part of size()


def window_size_for(available: QSize) -> QSize:
    """The window's size on a screen whose available area (without task bars) is ``available``.

    Small screens get all of it, less the frame the window manager adds; larger ones a share
    of it, up to ``LARGEST``.
    """
    room = QSize(max(1, available.width() - FRAME_ALLOWANCE.width()),
                 max(1, available.height() - FRAME_ALLOWANCE.height()))
    if available.width() < FULL_SCREEN_BELOW.width() or \
            available.height() < FULL_SCREEN_BELOW.height():
        return room
    share = QSize(int(available.width() * SHARE_OF_LARGE_SCREEN),
                  int(available.height() * SHARE_OF_LARGE_SCREEN))
    return share.boundedTo(LARGEST).boundedTo(room)


def fit_rect_to(rect: QRect, available: QRect) -> QRect:
    """``rect`` made no larger than ``available`` (less the frame) and moved inside it; a
    window restored from a larger screen, or from one unplugged since, lands on this one."""
    room = QSize(max(1, available.width() - FRAME_ALLOWANCE.width()),
                 max(1, available.height() - FRAME_ALLOWANCE.height()))
    size = rect.size().boundedTo(room)
    left = min(max(rect.left(), available.left()), available.right() + 1 - size.width())
    top = min(max(rect.top(), available.top()), available.bottom() + 1 - size.height())
    return QRect(QPoint(left, top), size)


def size_window_to_screen(window: QWidget, restored: bool) -> None:
    """Size a window from its screen's available geometry: a new one by ``window_size_for``,
    centred; a ``restored`` one kept as it was unless it no longer fits there."""
    screen = window.screen()
    if screen is None:
        return
    available = screen.availableGeometry()
    if restored:
        fitted = fit_rect_to(window.geometry(), available)
        if fitted != window.geometry():
            window.setGeometry(fitted)
        return
    size = window_size_for(available.size())
    window.resize(size)
    centre = available.center()
    window.move(centre.x() - size.width() // 2, max(available.top(),
                                                    centre.y() - size.height() // 2))
