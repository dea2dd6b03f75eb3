"""How late the UI thread runs while the window trains, exports, explains or previews, and
how soon the window appears.

A 10 ms timer on the UI thread records how much later than 10 ms each tick fires: while a real
run trains through ``MainWindow`` (from its first event to its last); while the results panel
exports a trained ResNet18 to TorchScript and to ONNX (from the click to the verified file,
checked in a fresh process); while the Grad-CAM view explains five images one after the other
(a 3000x2000 JPEG among them); and while the preview panel decodes, resizes and crops a
6000x4000 JPEG in the pool and draws the result under three settings. Each measurement runs in
a fresh offscreen process, as does each start of the app (``--startup-report``: seconds from
process start to the window shown). Targets: p99 lateness <= 16 ms (one frame at 60 Hz) and
max <= 50 ms; first window <= 2 s.

``--stall-traces FILE`` (with ``--measure``) writes every thread's Python stack to FILE
whenever the heartbeat is more than ``STALL_TRACE_MS`` late, from faulthandler's own thread,
which needs no GIL: the stack of whatever holds the UI thread up.
"""

from __future__ import annotations

import argparse
import faulthandler
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

import workbench
from workbench.bench.report import BenchRow, info_row, limit_row

HEARTBEAT_MS = 10
TARGET_P99_MS = 16.0
TARGET_MAX_MS = 50.0
STALL_TRACE_MS = 40
TARGET_STARTUP_S = 2.0
STARTUP_SCRIPT = ("import workbench.gui.app as app; "
                  "raise SystemExit(app.main(['--startup-report']))")


class Heartbeat:
    """A precise 10 ms timer on the UI thread; ``lateness_ms`` holds how late each tick was."""

    def __init__(self, stall_traces: Any = None) -> None:
        from PySide6.QtCore import Qt, QTimer

        self.lateness_ms: list[float] = []
        self._stall_traces = stall_traces  # an open file, or None
        self._last = 0.0
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(HEARTBEAT_MS)
        self._timer.timeout.connect(self._on_tick)

    def start(self, _event: object = None) -> None:
        self._last = time.perf_counter()
        self._timer.start()
        self._arm_stall_trace()

    def stop(self, _event: object = None) -> None:
        self._timer.stop()
        if self._stall_traces is not None:
            faulthandler.cancel_dump_traceback_later()

    def _on_tick(self) -> None:
        now = time.perf_counter()
        self.lateness_ms.append(max(0.0, (now - self._last) * 1000.0 - HEARTBEAT_MS))
        self._last = now
        self._arm_stall_trace()

    def _arm_stall_trace(self) -> None:
        """Dump every stack unless the next tick comes first (re-armed on every tick)."""
        if self._stall_traces is not None:
            faulthandler.dump_traceback_later((HEARTBEAT_MS + STALL_TRACE_MS) / 1000,
                                              repeat=True, file=self._stall_traces)


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


def measure_training(root: Path, epochs: int, stall_traces: Any = None) -> dict[str, Any]:
    """Heartbeat lateness from the first to the last event of a tiny run in the window."""
    from PySide6.QtWidgets import QApplication

    from workbench.core.data.generated.synthetic_images import write_shape_dataset
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
    heartbeat = Heartbeat(stall_traces)
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


def measure_preview(root: Path, size: tuple[int, int], stall_traces: Any = None
                    ) -> dict[str, Any]:
    """Heartbeat lateness while the preview panel shows a large JPEG under three settings."""
    from PySide6.QtWidgets import QApplication

    import workbench.core.data.five_crop_preview  # noqa: F401 - torch loads before measuring
    from workbench.core.runs.config import TrainConfig
    from workbench.gui.panels.preview.augmentation_preview_panel import AugmentationPreviewPanel

    app = QApplication.instance() or QApplication(sys.argv[:1])
    photo = write_large_photo(root / "large.jpg", size)
    panel = AugmentationPreviewPanel()
    panel.resize(1300, 900)
    panel.show()
    ready: list[object] = []
    panel.preview_ready.connect(ready.append)
    heartbeat = Heartbeat(stall_traces)
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


def train_model_to_explain(root: Path) -> dict[str, Any]:
    """A best_model.pt of ResNet18 (one epoch on shapes, 56 px crops) and images to explain:
    four validation images and a 3000x2000 JPEG."""
    from workbench.core.data.generated.synthetic_images import write_shape_dataset
    from workbench.core.runs.config import TrainConfig
    from workbench.core.runs.events import Callback
    from workbench.core.training.engine import train

    data = write_shape_dataset(root / "explain-shapes", per_class=8, size=(80, 64),
                               layout="train_val", val_per_class=2)
    config = TrainConfig(
        data_root=str(data), model="resnet18", weights="none", finetune="full",
        crop_mode="standard", resize_size=64, crop_size=56, batch_size=8, epochs=1,
        workers=0, output_dir=str(root / "explain-runs"), device="cpu", amp=False,
        channels_last=False)
    ends: list[Any] = []

    class Ends(Callback):
        def on_run_end(self, event: Any) -> None:
            ends.append(event)

    train(config, Ends())
    if not ends or ends[0].status != "completed" or not ends[0].best_model_path:
        raise RuntimeError(f"the model to export did not train: {ends}")
    images = sorted(str(p) for p in (data / "val").rglob("*.png"))[:4]
    images.append(str(write_large_photo(root / "explain.jpg", (3000, 2000))))
    return {"model_file": ends[0].best_model_path, "images": images}


def measure_export(root: Path, model_file: str, export_format: str,
                   stall_traces: Any = None) -> dict[str, Any]:
    """Heartbeat lateness from clicking export to the verified file, in the results panel."""
    from PySide6.QtWidgets import QApplication

    import workbench.core.models.export  # noqa: F401 - torch loads before measuring
    from workbench.gui.panels.results_panel import ResultsPanel

    app = QApplication.instance() or QApplication(sys.argv[:1])
    panel = ResultsPanel()
    panel.resize(900, 650)
    panel.show()
    outcome: list[Any] = []
    panel.export_finished.connect(outcome.append)
    panel.export_failed.connect(outcome.append)
    suffix = ".onnx" if export_format == "onnx" else ".pt"
    heartbeat = Heartbeat(stall_traces)
    heartbeat.start()
    started = time.perf_counter()
    panel.export_to(str(root / f"exported{suffix}"), model_file, export_format)
    _wait_until(app, lambda: outcome and not panel.is_exporting(), 600, "the export")
    seconds = time.perf_counter() - started
    heartbeat.stop()
    panel.close()
    if isinstance(outcome[0], str):
        raise RuntimeError(f"the {export_format} export failed: {outcome[0]}")
    return dict(lateness_summary(heartbeat.lateness_ms), seconds=round(seconds, 1))


def measure_grad_cam(root: Path, model_file: str, images: list[str],
                     stall_traces: Any = None) -> dict[str, Any]:
    """Heartbeat lateness while the Grad-CAM view explains ``images``, one after the other."""
    from PySide6.QtWidgets import QApplication

    import workbench.core.models.grad_cam  # noqa: F401 - torch loads before measuring
    from workbench.gui.panels.results.grad_cam_view import GradCamView

    app = QApplication.instance() or QApplication(sys.argv[:1])
    view = GradCamView()
    view.resize(420, 420)
    view.show()
    shown: list[Any] = []
    view.shown.connect(shown.append)
    view.errored.connect(shown.append)
    heartbeat = Heartbeat(stall_traces)
    heartbeat.start()
    for count, image in enumerate(images, start=1):
        view.show_for(model_file, image)
        _wait_until(app, lambda count=count: len(shown) >= count, 120, "a Grad-CAM")
    heartbeat.stop()
    view.close()
    failed = [item for item in shown if isinstance(item, str)]
    if failed:
        raise RuntimeError(f"Grad-CAM failed: {failed[0]}")
    return dict(lateness_summary(heartbeat.lateness_ms), images=len(images))


def _fresh_process(args: list[str], root: Path) -> subprocess.CompletedProcess[str]:
    # The child measures this workbench, wherever it was imported from (it runs in ``root``).
    source = str(Path(workbench.__file__).resolve().parents[1])
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(root / "config"),
               WORKBENCH_CACHE_DIR=str(root / "cache"), PYTHONPATH=os.pathsep.join(
                   [source, *filter(None, [os.environ.get("PYTHONPATH")])]))
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


def _measure(args: list[str], root: Path) -> dict[str, Any]:
    """One ``--measure`` in a fresh offscreen process; its JSON line."""
    module = ["-m", "workbench.bench.ui_latency_benchmark", "--root", str(root)]
    return _json_lines(_fresh_process([*module, *args], root).stdout)[-1]


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """Lateness rows while training, exporting, explaining and previewing, and the time to
    the first window.

    ``device`` is unused: the window trains on the CPU here, the heavier case for the UI.
    """
    epochs, size, starts = (1, (1500, 1000), 1) if quick else (3, (6000, 4000), 3)
    with tempfile.TemporaryDirectory(prefix="workbench-ui-bench-") as tmp:
        root = Path(tmp)
        training = _measure(["--measure", "training", "--epochs", str(epochs)], root)
        model = _measure(["--measure", "model"], root)
        exports = {fmt: _measure(["--measure", f"export-{fmt}", "--model-file",
                                  model["model_file"]], root)
                   for fmt in ("torchscript", "onnx")}
        grad_cam = _measure(["--measure", "grad-cam", "--model-file", model["model_file"],
                             "--images", *model["images"]], root)
        preview = _measure(["--measure", "preview", "--size", f"{size[0]}x{size[1]}"], root)
        startups = [seconds_to_window(root) for _ in range(starts)]
    rows = _lateness_rows("training", training, f"resnet18 five crops in the window, "
                                                f"{epochs} epoch(s), workers 0, offscreen")
    for fmt, name in (("torchscript", "TorchScript"), ("onnx", "ONNX")):
        rows += _lateness_rows(f"exporting {name}", exports[fmt],
                               f"resnet18 from the results panel, click to verified file "
                               f"({exports[fmt]['seconds']} s)")
    rows += _lateness_rows("running Grad-CAM", grad_cam,
                           "resnet18, five images one after the other (one 3000x2000 JPEG)")
    rows += _lateness_rows("previewing", preview, f"{size[0]}x{size[1]} JPEG "
                                                  f"({preview['jpeg_megabytes']} MB), 3 settings")
    rows.append(limit_row("ui", "time to first window", statistics.median(startups), "s",
                          TARGET_STARTUP_S, starts=startups,
                          statistic=f"median of {starts} fresh processes"))
    return rows


MEASUREMENTS = ("training", "model", "export-torchscript", "export-onnx", "grad-cam", "preview")


def measure(args: argparse.Namespace, stall_traces: Any) -> dict[str, Any]:
    """The measurement ``args.measure`` asks for."""
    root = Path(args.root)
    if args.measure == "training":
        return measure_training(root, args.epochs, stall_traces)
    if args.measure == "model":
        return train_model_to_explain(root)
    if args.measure.startswith("export-"):
        return measure_export(root, args.model_file, args.measure.removeprefix("export-"),
                              stall_traces)
    if args.measure == "grad-cam":
        return measure_grad_cam(root, args.model_file, args.images, stall_traces)
    width, height = (int(v) for v in args.size.split("x"))
    return measure_preview(root, (width, height), stall_traces)


def main(argv: list[str] | None = None) -> None:
    """One measurement in this (fresh, offscreen) process; prints it as a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", choices=MEASUREMENTS, required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--size", default="6000x4000")
    parser.add_argument("--model-file", default="")
    parser.add_argument("--images", nargs="*", default=[])
    parser.add_argument("--stall-traces", type=Path,
                        help="write every thread's stack here at each stall")
    args = parser.parse_args(argv)
    if args.stall_traces is None:
        summary = measure(args, None)
    else:
        with open(args.stall_traces, "w") as traces:
            summary = measure(args, traces)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
