"""Keep ``None`` alive under PySide6 6.12.0 on Python 3.11 and older.

PySide6 6.12.0 drops one reference to ``None`` each time C++ receives ``None`` from a Python
override that returns a ``QVariant`` (``QAbstractItemModel.data`` for every role a model does
not handle, pyqtgraph's ``itemChange``...). A few thousand repaints of a list view or a plot
bring ``None``'s count to zero and CPython aborts with "none_dealloc: deallocating None".
PySide6 6.11.3 does not do this, and from Python 3.12 ``None`` is immortal.

``guard_none_refcount()`` adds a reserve of 2**40 references to ``None`` once per process, which
no session can use up; on interpreters where ``None`` is immortal it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

_RESERVE = 2**40
_guarded = False


def guard_none_refcount() -> None:
    """Give ``None`` a reference reserve (once; a no-op from Python 3.12 and off CPython)."""
    global _guarded
    if _guarded or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    # ob_refcnt is the first field of every CPython object, and id() is the object's address.
    ctypes.c_ssize_t.from_address(id(None)).value += _RESERVE
    _guarded = True
