"""Entry script of the frozen Workbench window (PyInstaller wants a script, not module:function)."""

import multiprocessing
import sys

from workbench.gui.app import main

if __name__ == "__main__":
    # Loader worker processes of a frozen app re-enter here; this lets them run their task.
    multiprocessing.freeze_support()
    sys.exit(main())
