"""The wheel carries the app's own files: ``resources/`` (icon, stylesheet, the menu entry's
template) stays at the top of the repository and is copied into the built package as
``workbench/resources/``, where ``workbench.gui.resources`` finds it in an installed copy.
Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
APP_FILES = ("workbench.svg", "workbench.png", "style.qss", "workbench.desktop")
"""What the running app reads; the screenshots in resources/ are the docs', not the app's."""


class BuildPyWithResources(build_py):
    """build_py, then ``resources/<APP_FILES>`` into ``<build>/workbench/resources/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout and reads resources/ there
        target = Path(self.build_lib) / "workbench" / "resources"
        target.mkdir(parents=True, exist_ok=True)
        for name in APP_FILES:
            shutil.copy2(ROOT / "resources" / name, target / name)


setup(cmdclass={"build_py": BuildPyWithResources})
