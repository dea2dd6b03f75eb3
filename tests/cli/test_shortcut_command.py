"""``workbench shortcut`` writes a menu entry that desktop-file-validate accepts, starting this
installation's launcher with Workbench's icon, and ``--remove`` takes it away."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig

import pytest
from PySide6.QtGui import QImage

from workbench.cli import main

pytestmark = pytest.mark.skipif(sys.platform in ("win32", "darwin"),
                                reason="the freedesktop menu entry is Linux's")


@pytest.fixture
def user_home(tmp_path, monkeypatch):
    """A home folder, a data folder and an installation whose scripts folder has a space."""
    scripts = tmp_path / "my apps" / "bin"
    scripts.mkdir(parents=True)
    gui = scripts / "workbench-gui"
    gui.write_text("#!/bin/sh\n")
    gui.chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    real_get_path = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path",
                        lambda name, *a, **k: str(scripts) if name == "scripts"
                        else real_get_path(name, *a, **k))
    return tmp_path


def test_the_menu_entry_validates_and_starts_this_installation(user_home, capsys):
    assert main(["shortcut"]) == 0
    entry = user_home / "data" / "applications" / "workbench.desktop"
    assert capsys.readouterr().out == f"added the menu entry {entry}\n"
    lines = entry.read_text().splitlines()
    icon = user_home / "data" / "icons" / "hicolor" / "scalable" / "apps" / "workbench.svg"
    assert f'Exec="{user_home}/my apps/bin/workbench-gui"' in lines
    assert f"Icon={icon}" in lines
    assert icon.is_file() and not QImage(str(icon)).isNull()
    png = user_home / "data" / "icons" / "hicolor" / "256x256" / "apps" / "workbench.png"
    assert QImage(str(png)).width() == 256
    validator = shutil.which("desktop-file-validate")
    assert validator, "desktop-file-validate is missing: apt-get install desktop-file-utils"
    checked = subprocess.run([validator, str(entry)], capture_output=True, text=True)
    assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")

    assert main(["shortcut", "--remove"]) == 0
    assert capsys.readouterr().out == f"removed {entry}\n"
    assert not entry.exists() and not icon.exists() and not png.exists()
