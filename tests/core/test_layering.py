"""workbench.core is a library usable from a notebook: no Qt, ever."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import workbench.core


def test_core_imports_no_qt():
    modules = [f"workbench.core.{m.name}" for m in pkgutil.iter_modules(workbench.core.__path__)]
    assert "workbench.core.engine" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "qt = sorted(m for m in sys.modules if m.startswith(('PySide', 'PyQt', 'pyqtgraph')))\n"
        "print(','.join(qt))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
