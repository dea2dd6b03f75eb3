"""How late the UI thread runs while the window trains or previews a huge JPEG, and how soon
the window appears.

A 10 ms timer on the UI thread records how much later than 10 ms each tick fires: while a real
run trains through ``MainWindow`` (from its first event to its last), and while the preview
panel decodes, resizes and crops a 6000x4000 JPEG in the pool and draws the result under three
settings. Each measurement runs in a fresh offscreen process, as does each start of the app
(``--startup-report``: seconds from process start to the window shown). Targets: p99 lateness
<= 50 ms and max <= 100 ms; first window <= 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from workbench.bench.report import BenchRow, info_row, limit_row

HEARTBEAT_MS = 10
TARGET_P99_MS = 50.0
TARGET_MAX_MS = 100.0
TARGET_STARTUP_S = 2.0
STARTUP_SCRIPT = ("import workbench.gui.app as app; "
                  "raise SystemExit(app.main(['--startup-report']))")


class Heartbeat:
    """A precise 10 ms timer on the UI thread; ``lateness_ms`` holds how late each tick was."""

    def __init__(self) -> None:
        from PySide6.QtCore import Qt, QTimer

        self.lateness_ms: list[float] = []
        self._last = 0.0
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(HEARTBEAT_MS)
        self._timer.timeout.connect(self._on_tick)

    def start(self, _event: object = None) -> None:
        self._last = time.perf_counter()
        self._timer.start()

    def stop(self, _event: object = None) -> None:
        self._timer.stop()

    def _on_tick(self) -> None:
        now = time.perf_counter()
        self.lateness_ms.append(max(0.0, (now - self._last) * 1000.0 - HEARTBEAT_MS))
        self._last = now


def lateness_summary(lateness_ms: list[float]) -> dict[str, float]:
    """Tick count and p95/p99/max lateness in milliseconds."""
    values = np.asarray(lateness_ms, dtype=float)
    if values.size == 0:
        raise RuntimeError("the heartbeat never ticked")
    return {"ticks": int(values.size), "p95": float(np.percentile(values, 95)),
            "p99": float(np.percentile(values, 99)), "max": float(values.max())}


def _wait_until(app: Any, condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        app.processEvents()
        time.sleep(0.002)


def measure_training(root: Path, epochs: int) -> dict[str, Any]:
    """Heartbeat lateness from the first to the last event of a tiny run in the window."""
    from PySide6.QtWidgets import QApplication

    from workbench.core.data.synthetic_images import write_shape_dataset
    from workbench.core.runs.config import TrainConfig
    from workbench.gui.window.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    data = write_shape_dataset(root / "shapes", per_class=8, size=(40, 32), layout="train_val",
                               val_per_class=4)
    window = MainWindow()
    window.ask_before_closing_during_training = False
    window.show()
    scanned: list[object] = []
    window.dataset_panel.dataset_scanned.connect(scanned.append)
    window.open_folder(str(data))
    _wait_until(app, lambda: scanned, 60, "the dataset scan")
    config = TrainConfig(
        data_root=str(data), model="resnet18", weights="none", finetune="full",
        crop_mode="five_crop", resize_size=32, crop_size=28, batch_size=8, epochs=epochs,
        workers=0, output_dir=str(root / "runs"), device="cpu", amp=False, channels_last=False)
    window.apply_config(config)
    heartbeat = Heartbeat()
    # From the first event to the last: torch's one-time import before the run is not training.
    window.controller.run_started.connect(heartbeat.start)
    window.controller.run_ended.connect(heartbeat.stop)
    ended: list[Any] = []
    window.controller.run_ended.connect(ended.append)
    if not window.start_training():
        raise RuntimeError("the window did not start training")
    _wait_until(app, lambda: ended and not window.controller.is_running(), 600, "the run")
    window.close()
    if ended[0].status != "completed":
        raise RuntimeError(f"the run ended {ended[0].status}")
    return lateness_summary(heartbeat.lateness_ms)


def write_large_photo(path: Path, size: tuple[int, int]) -> Path:
    """A realistic JPEG: noisy gradient with shapes, quality 90 (about 20 MB at 6000x4000)."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(0)
    width, height = size
    gradient = np.linspace(30, 190, width).astype(np.uint8)[None, :, None]
    pixels = rng.integers(0, 64, (height, width, 3), dtype=np.uint8)
    pixels += gradient  # at most 190 + 63: no overflow
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    side = min(width, height) // 4
    for index in range(12):
        left = int(rng.integers(0, width - side))
        top = int(rng.integers(0, height - side))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        shape = draw.ellipse if index % 2 else draw.rectangle
        shape((left, top, left + side, top + side), fill=colour)
    image.save(path, quality=90)
    return path


def measure_preview(root: Path, size: tuple[int, int]) -> dict[str, Any]:
    """Heartbeat lateness while the preview panel shows a large JPEG under three settings."""
    from PySide6.QtWidgets import QApplication

    import workbench.core.data.five_crop_preview  # noqa: F401 - torch loads before measuring
    from workbench.core.runs.config import TrainConfig
    from workbench.gui.panels.augmentation_preview_panel import AugmentationPreviewPanel

    app = QApplication.instance() or QApplication(sys.argv[:1])
    photo = write_large_photo(root / "large.jpg", size)
    panel = AugmentationPreviewPanel()
    panel.resize(1300, 900)
    panel.show()
    ready: list[object] = []
    panel.preview_ready.connect(ready.append)
    heartbeat = Heartbeat()
    heartbeat.start()
    settings = [
        TrainConfig(crop_mode="five_crop", resize_size=512, crop_size=224),
        TrainConfig(crop_mode="ten_crop", resize_size=512, crop_size=224),
        TrainConfig(crop_mode="standard", resize_size=256, crop_size=224),
    ]
    for index, config in enumerate(settings):
        panel.set_config(config)
        if index == 0:
            panel.set_image(str(photo))
        _wait_until(app, lambda count=index + 1: len(ready) >= count, 120, "a preview")
    heartbeat.stop()
    panel.wait_for_preview(10_000)
    panel.close()
    summary = lateness_summary(heartbeat.lateness_ms)
    summary["jpeg_megabytes"] = round(photo.stat().st_size / 1e6, 1)
    return summary


def _fresh_process(args: list[str], root: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(root / "config"),
               WORKBENCH_CACHE_DIR=str(root / "cache"))
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=900, cwd=root)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed: {done.stderr.strip()[-2000:]}")
    return done


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def seconds_to_window(root: Path) -> float:
    """One start of the app in a fresh process: seconds from process start to window shown."""
    reports = _json_lines(_fresh_process(["-c", STARTUP_SCRIPT], root).stdout)
    if not reports or not reports[0].get("window_visible"):
        raise RuntimeError(f"the app did not report a visible window: {reports}")
    return float(reports[0]["seconds_to_window"])


def _lateness_rows(name: str, summary: dict[str, Any], setting: str) -> list[BenchRow]:
    details = dict(summary, setting=setting)
    return [
        info_row("ui", f"UI lateness p95 while {name}", summary["p95"], "ms", **details),
        limit_row("ui", f"UI lateness p99 while {name}", summary["p99"], "ms", TARGET_P99_MS,
                  **details),
        limit_row("ui", f"UI lateness max while {name}", summary["max"], "ms", TARGET_MAX_MS,
                  **details),
    ]


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """Lateness rows while training and while previewing, and the time to first window.

    ``device`` is unused: the window trains on the CPU here, the heavier case for the UI.
    """
    epochs, size, starts = (1, (1500, 1000), 1) if quick else (3, (6000, 4000), 3)
    module = ["-m", "workbench.bench.ui_latency_benchmark"]
    with tempfile.TemporaryDirectory(prefix="workbench-ui-bench-") as tmp:
        root = Path(tmp)
        training = _json_lines(_fresh_process(
            [*module, "--measure", "training", "--root", str(root), "--epochs", str(epochs)],
            root).stdout)[-1]
        preview = _json_lines(_fresh_process(
            [*module, "--measure", "preview", "--root", str(root), "--size",
             f"{size[0]}x{size[1]}"], root).stdout)[-1]
        startups = [seconds_to_window(root) for _ in range(starts)]
    rows = _lateness_rows("training", training, f"resnet18 five crops in the window, "
                                                f"{epochs} epoch(s), workers 0, offscreen")
    rows += _lateness_rows("previewing", preview, f"{size[0]}x{size[1]} JPEG "
                                                  f"({preview['jpeg_megabytes']} MB), 3 settings")
    rows.append(limit_row("ui", "time to first window", statistics.median(startups), "s",
                          TARGET_STARTUP_S, starts=startups,
                          statistic=f"median of {starts} fresh processes"))
    return rows


def main(argv: list[str] | None = None) -> None:
    """One measurement in this (fresh, offscreen) process; prints it as a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", choices=("training", "preview"), required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--size", default="6000x4000")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.measure == "training":
        summary = measure_training(root, args.epochs)
    else:
        width, height = (int(v) for v in args.size.split("x"))
        summary = measure_preview(root, (width, height))
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
