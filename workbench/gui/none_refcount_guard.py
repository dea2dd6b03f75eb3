"""Keep ``None``, ``True`` and ``False`` alive under PySide6 6.12.0 on Python 3.11 and older.

PySide6 6.12.0 drops one reference to ``None`` each time C++ receives ``None`` from a Python
override that returns a ``QVariant`` (``QAbstractItemModel.data`` for every role a model does
not handle), and pyqtgraph's paint path loses references to ``None`` and ``True`` the same way:
300 plot repaints cost ``None`` about 80,000 references. Within minutes the count reaches zero
and CPython aborts with "none_dealloc: deallocating None" (or "bool_dealloc"). PySide6 6.11.3
does not do this, and from Python 3.12 these objects are immortal.

``guard_none_refcount()`` adds a reserve of 2**40 references to each of them once per process,
which no session can use up; on interpreters where they are immortal it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

_RESERVE = 2**40
_guarded = False


def guard_none_refcount() -> None:
    """Give ``None``, ``True`` and ``False`` a reference reserve, once per process."""
    global _guarded
    if _guarded or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    for singleton in (None, True, False):
        # ob_refcnt is the first field of every CPython object; id() is the object's address.
        ctypes.c_ssize_t.from_address(id(singleton)).value += _RESERVE
    _guarded = True
