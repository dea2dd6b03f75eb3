"""The window appears before torch is imported, and device detection follows once it is up.

How soon it appears is measured by ``workbench bench --only ui`` (time to first window).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = ("import workbench.gui.app as app; "
          "raise SystemExit(app.main(['--startup-report']))")


def test_window_shows_before_torch_is_imported_then_reports_the_device(tmp_path: Path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               WORKBENCH_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 2, done.stdout + done.stderr
    shown, devices = lines
    assert shown["window_visible"] is True
    assert shown["torch_loaded"] is False  # torch loads after the window is up
    assert shown["automatic_garbage_collection"] is False  # the UI thread collects instead
    assert devices["device_choice"].startswith("Training will use")
    assert devices["seconds_to_devices"] >= shown["seconds_to_window"]
