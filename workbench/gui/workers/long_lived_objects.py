"""Keep Python's full garbage collections from freezing the window.

A full collection walks every object the process holds while holding the GIL; once torch,
torchvision, Qt and pyqtgraph are imported that is millions of objects and about 200 ms on a
laptop, long enough to stutter the UI (it struck during a run's first checkpoint save). Those
objects live as long as the process, so they are moved out of the collector's sight once.
Freezing collects nothing, so it may run on any thread; collections themselves run on the UI
thread only (``workbench.gui.ui_garbage_collector``).
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_long_lived_objects() -> None:
    """``gc.freeze()`` what exists now, the first time this is called (later calls do nothing)."""
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True
