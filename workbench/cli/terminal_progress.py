"""Engine events on a terminal: a progress bar per epoch, one summary line per epoch, and at the
end what limited the run's speed."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import TextIO

from workbench.core.data.decode_failures import read_failure_log, read_warning_log
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import (
    Callback,
    EpochEnd,
    Message,
    Progress,
    RunEnd,
    RunStart,
    StepStats,
)
from workbench.core.runs.run_folder import DECODE_FAILURES
from workbench.core.training.bottleneck import UNKNOWN, BottleneckMonitor
from workbench.core.units import GIB


def _format_bytes(value: int | None) -> str:
    return "n/a" if value is None else f"{value / GIB:.2f} GiB"


class TerminalProgress(Callback):
    """Redraws one status line in place on a terminal; prints plain lines to a pipe or file.

    Args:
        stream: where to write; stderr by default.
        min_interval_s: the least time between redraws of the progress line.
        config: the run's settings, so the closing bottleneck advice can name them.
    """

    def __init__(self, stream: TextIO | None = None, min_interval_s: float = 0.2,
                 config: TrainConfig | None = None) -> None:
        self.stream = stream or sys.stderr
        self.bottleneck = BottleneckMonitor(config, window=500)  # the run as it ends
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.min_interval_s = min_interval_s
        self._last_draw = 0.0
        self._last_percent = -1
        self._line_open = False
        self._last_progress_step = -1

    def _print(self, text: str) -> None:
        if self._line_open:
            self.stream.write("\n")
            self._line_open = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def on_run_start(self, event: RunStart) -> None:
        memory = f", {_format_bytes(event.memory_total)}" if event.memory_total else ""
        self._print(f"device: {event.device} ({event.device_name}{memory}), "
                    f"precision {event.precision}")
        self.bottleneck.clear()
        self.bottleneck.device = event.device
        self.bottleneck.images_on_device = event.images_on_device
        self._print(f"data: {event.dataset_summary}")
        cache = ", frozen-backbone features cached" if event.feature_cache else ""
        self._print(f"run folder: {event.run_dir}; {event.steps_per_epoch} steps/epoch, "
                    f"{event.crops_per_sample} crop(s) per image{cache}")

    def on_step(self, event: StepStats) -> None:
        self.bottleneck.add(event)
        percent = int(100 * event.step / max(event.steps_in_epoch, 1))
        now = time.monotonic()
        if self.interactive:
            if now - self._last_draw < self.min_interval_s and event.step < event.steps_in_epoch:
                return
            self._last_draw = now
            bar = "#" * (percent // 5) + "." * (20 - percent // 5)
            self.stream.write(
                f"\repoch {event.epoch} [{bar}] {event.step}/{event.steps_in_epoch} "
                f"loss {event.loss_smoothed:.4f} acc {event.accuracy_smoothed:.3f} "
                f"{event.images_per_second:.0f} img/s, waiting for data "
                f"{100 * event.data_wait_fraction:.0f}%   "
            )
            self.stream.flush()
            self._line_open = True
        elif percent // 25 != self._last_percent // 25 or event.step == 1:
            self._last_percent = percent
            self._print(f"epoch {event.epoch} step {event.step}/{event.steps_in_epoch} "
                        f"loss {event.loss_smoothed:.4f} {event.images_per_second:.0f} img/s")

    def on_epoch_end(self, event: EpochEnd) -> None:
        best = " (best)" if event.is_best else ""
        self._print(
            f"epoch {event.epoch}/{event.epochs}: train loss {event.train_loss:.4f} "
            f"acc {event.train_accuracy:.3f} | val loss {_num(event.val_loss)} "
            f"acc {event.val_accuracy:.3f}{best} | {event.epoch_seconds:.1f} s, "
            f"{event.images_per_second:.0f} img/s over the whole epoch"
        )

    def on_message(self, event: Message) -> None:
        prefix = "" if event.level == "info" else f"{event.level}: "
        self._print(prefix + event.text)

    def on_progress(self, event: Progress) -> None:
        if self.interactive:
            self.stream.write(f"\r{event.describe()}   ")
            self.stream.flush()
            self._line_open = True
            return
        # A pipe gets a line a quarter (every 10 MB when the size is unknown).
        step = event.done // 10_000_000 if event.fraction is None else int(4 * event.fraction)
        if step != self._last_progress_step:
            self._last_progress_step = step
            self._print(event.describe())

    def on_run_end(self, event: RunEnd) -> None:
        # Before its first epoch a run has no best epoch to speak of.
        best = (f"; best val accuracy {event.best_val_accuracy:.3f} (epoch {event.best_epoch})"
                if event.best_epoch else "")
        self._print(f"run {event.status} after {event.epochs_completed} epoch(s) in "
                    f"{event.seconds:.1f} s{best}")
        if event.best_model_path:
            self._print(f"best model: {event.best_model_path}")
        if event.last_checkpoint_path:
            self._print(f"last checkpoint: {event.last_checkpoint_path}")
        self._print_decode_log(event.run_dir)
        diagnosis = self.bottleneck.diagnosis()
        if diagnosis.kind != UNKNOWN:
            self._print(f"bottleneck: {diagnosis.sentence}")


    def _print_decode_log(self, run_dir: str) -> None:
        """Say where the images that failed (or decoded with warnings) are listed."""
        log = Path(run_dir) / DECODE_FAILURES if run_dir else None
        if log is None or not log.is_file():
            return
        try:
            failed, warned = len(read_failure_log(str(log))), len(read_warning_log(str(log)))
        except OSError:
            return
        counts = [f"{failed} image(s) could not be decoded"] if failed else []
        counts += [f"{warned} decoded with warnings"] if warned else []
        if counts:
            self._print(f"{' and '.join(counts)}; one line each in {log}")


def _num(value: float) -> str:
    return f"{value:.4f}" if math.isfinite(value) else "n/a"
