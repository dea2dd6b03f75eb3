"""Training throughput through the Qt worker against the headless engine, side by side.

The same config trains alternately headless (``engine.train`` in the main thread, as the CLI
runs it) and through ``TrainingController`` (a QThread, every event a queued Qt signal into the
UI thread, which also runs a 10 ms heartbeat), each in a fresh process as a user would run them:
torch's OpenMP thread teams are per calling thread, and mixing both in one process slows the
second by up to a quarter. Throughput is images per second of step time, taken from the step
events after the first epoch. Target: worker / headless >= 0.97.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from workbench.bench.report import BenchRow, ratio_row
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback, StepStats
from workbench.core.training.engine import train

TARGET = 0.97


class _StepRecorder(Callback):
    def __init__(self) -> None:
        self.steps: list[StepStats] = []

    def on_step(self, event: StepStats) -> None:
        self.steps.append(event)


def images_per_second(steps: list[StepStats], batch: int) -> float:
    later = [s for s in steps if s.epoch > 1]
    return batch * len(later) / sum(s.data_wait_s + s.compute_s for s in later)


def headless(config: TrainConfig) -> float:
    recorder = _StepRecorder()
    end = train(config, recorder)
    if end.status != "completed":
        raise SystemExit(f"headless run failed: {end.error}")
    return images_per_second(recorder.steps, config.batch_size)


def through_worker(config: TrainConfig) -> float:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.gui.workers.training_worker import TrainingController

    app = QApplication.instance() or QApplication(sys.argv[:1])
    steps: list[StepStats] = []
    heartbeat = QTimer()
    heartbeat.setInterval(10)
    heartbeat.timeout.connect(lambda: None)
    heartbeat.start()
    controller = TrainingController()
    controller.step_finished.connect(steps.append)
    controller.finished.connect(app.quit)
    controller.start(config)
    app.exec()
    heartbeat.stop()
    return images_per_second(steps, config.batch_size)


def _config(root: Path, epochs: int, device: str) -> TrainConfig:
    return TrainConfig(
        data_root=str(root / "data"), weights="none", finetune="full", crop_mode="five_crop",
        resize_size=64, crop_size=56, batch_size=8, epochs=epochs, workers=0,
        scheduler="none", output_dir=str(root / "runs"), cache_dir=str(root / "cache"),
        device=device,
    )


def _measure_in_fresh_process(mode: str, root: Path, epochs: int, device: str) -> float:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    result = subprocess.run(
        [sys.executable, "-m", "workbench.bench.loading.worker_benchmark", "--measure", mode,
         "--root", str(root), "--epochs", str(epochs), "--device", device],
        capture_output=True, text=True, env=env,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{mode} measurement failed: {result.stderr.strip()[-2000:]}")
    return float(result.stdout.strip().splitlines()[-1])


def run(quick: bool = False, device: str = "auto") -> list[BenchRow]:
    """One row: median images/s through the Qt worker against headless, alternating rounds."""
    rounds, epochs, per_class = (1, 2, 4) if quick else (5, 3, 16)
    with tempfile.TemporaryDirectory(prefix="workbench-worker-bench-") as tmp:
        root = Path(tmp)
        write_shape_dataset(root / "data", per_class=per_class, size=(96, 72),
                            layout="train_val", val_per_class=4)
        plain, worker = [], []
        for _ in range(rounds):  # alternate, so drift in machine load hits both alike
            plain.append(_measure_in_fresh_process("headless", root, epochs, device))
            worker.append(_measure_in_fresh_process("worker", root, epochs, device))
    return [ratio_row(
        "worker", "training through the Qt worker vs headless engine", statistics.median(worker),
        statistics.median(plain), "img/s", TARGET, headless=plain, worker=worker,
        setting=f"resnet18, {4 * per_class} PNG 96x72, resize 64, five crops of 56, batch 8, "
                f"{epochs} epochs, fresh process per side, {rounds} round(s)")]


def main(argv: list[str] | None = None) -> None:
    """Entry point of one measurement in a fresh process (the suite starts these)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", choices=("headless", "worker"), required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    measure = headless if args.measure == "headless" else through_worker
    print(measure(_config(Path(args.root), args.epochs, args.device)))


if __name__ == "__main__":
    main()
