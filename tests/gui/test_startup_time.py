"""The window appears within 2 s of process start, before torch is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

STARTUP_LIMIT_S = 2.0
ATTEMPTS = 3  # a busy CI machine can slow one start; the best of three is the app's own cost

SCRIPT = ("import workbench.gui.app as app; "
          "raise SystemExit(app.main(['--startup-report']))")


def start_once(tmp_path: Path) -> tuple[dict, dict]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               WORKBENCH_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 2, done.stdout + done.stderr
    return lines[0], lines[1]


def test_window_shows_within_two_seconds_without_torch(tmp_path):
    reports = []
    for _ in range(ATTEMPTS):
        shown, devices = start_once(tmp_path)
        reports.append(shown)
        assert shown["window_visible"] is True
        assert shown["torch_loaded"] is False  # torch loads after the window is up
        assert devices["device_choice"].startswith("Training will use")
        if shown["seconds_to_window"] <= STARTUP_LIMIT_S:
            break
    times = [r["seconds_to_window"] for r in reports]
    print(f"\nseconds from process start to window shown: {times}; devices detected after "
          f"{devices['seconds_to_devices']} s")
    assert min(times) <= STARTUP_LIMIT_S
