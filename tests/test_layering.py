"""The layer rules: import-linter's contracts (pyproject.toml) over the source, and a live import
of every module of workbench.core in a fresh interpreter, which also sees imports made at run
time that a static check cannot."""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import workbench.core

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_are_kept():
    lint_imports = (shutil.which("lint-imports")
                    or str(Path(sys.executable).with_name("lint-imports")))
    result = subprocess.run([lint_imports, "--no-cache"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout, result.stdout


def test_every_core_module_imports_without_qt():
    modules = [m.name for m in pkgutil.walk_packages(workbench.core.__path__, "workbench.core.")]
    assert "workbench.core.training.engine" in modules
    assert "workbench.core.data.five_crop_preview" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "qt = sorted(m for m in sys.modules if m.startswith(('PySide', 'PyQt', 'pyqtgraph', "
        "'shiboken')))\n"
        "print(','.join(qt))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_no_package_folder_holds_more_than_fifteen_modules():
    crowded = {}
    for folder in (ROOT / "workbench").rglob("*"):
        if folder.is_dir() and (folder / "__init__.py").exists():
            modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
            if len(modules) > 15:
                crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert not crowded, f"folders to split into rooms: {crowded}"
