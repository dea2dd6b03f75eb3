"""Training throughput through the Qt worker against the headless engine, side by side.

    QT_QPA_PLATFORM=offscreen python -m workbench.bench.worker_benchmark [--rounds 2]

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

from workbench.core.config import TrainConfig
from workbench.core.engine import train
from workbench.core.events import Callback, StepStats
from workbench.core.synthetic_images import write_shape_dataset


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

    from workbench.gui.training_worker import TrainingController

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


def _config(root: Path, epochs: int) -> TrainConfig:
    return TrainConfig(
        data_root=str(root / "data"), weights="none", finetune="full", crop_mode="five_crop",
        resize_size=64, crop_size=56, batch_size=8, epochs=epochs, workers=0,
        scheduler="none", output_dir=str(root / "runs"), cache_dir=str(root / "cache"),
    )


def _measure_in_fresh_process(mode: str, root: Path, epochs: int) -> float:
    result = subprocess.run(
        [sys.executable, "-m", "workbench.bench.worker_benchmark", "--measure", mode,
         "--root", str(root), "--epochs", str(epochs)],
        capture_output=True, text=True, check=True,
    )
    return float(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--measure", choices=("headless", "worker"), help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if args.measure:
        measure = headless if args.measure == "headless" else through_worker
        print(measure(_config(Path(args.root), args.epochs)))
        return
    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as tmp:
        root = Path(tmp)
        write_shape_dataset(root / "data", per_class=16, size=(96, 72), layout="train_val",
                            val_per_class=4)
        plain, worker = [], []
        for _ in range(args.rounds):  # alternate, so drift in machine load hits both alike
            plain.append(_measure_in_fresh_process("headless", root, args.epochs))
            worker.append(_measure_in_fresh_process("worker", root, args.epochs))
    print(f"headless engine, images/s: {' '.join(f'{v:.1f}' for v in plain)}")
    print(f"through Qt worker, images/s: {' '.join(f'{v:.1f}' for v in worker)}")
    ratio = statistics.median(worker) / statistics.median(plain)
    print(f"ratio worker / headless (median, >= 0.97): {ratio:.3f}x")


if __name__ == "__main__":
    main()
