"""A real tiny finished run, shared by the Results and Runs tests of a module."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from workbench.core.data.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback, EpochEnd, RunEnd, RunStart
from workbench.core.training.engine import train


@dataclass
class FinishedRun(Callback):
    """A run's events as the window would have received them."""

    start: RunStart | None = None
    epochs: list[EpochEnd] = field(default_factory=list)
    end: RunEnd | None = None

    def on_run_start(self, event):
        self.start = event

    def on_epoch_end(self, event):
        self.epochs.append(event)

    def on_run_end(self, event):
        self.end = event


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> FinishedRun:
    """Two epochs of the small CNN on four shape classes (3 val images each), on the CPU."""
    root = tmp_path_factory.mktemp("results-run")
    data = write_shape_dataset(root / "shapes", per_class=8, size=(32, 32), layout="train_val",
                               val_per_class=3)
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", crop_mode="five_crop",
        resize_size=32, crop_size=28, batch_size=8, epochs=2, workers=0, lr=0.05,
        output_dir=str(root / "runs"), device="cpu", amp=False, cache_images=False,
        finetune="full",
    )
    run = FinishedRun()
    train(config, run)
    assert run.end is not None and run.end.status == "completed", run.end
    return run
