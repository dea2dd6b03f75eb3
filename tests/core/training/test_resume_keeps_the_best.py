"""A stopped run resumed into epochs that do worse keeps the best model it had: the same
best_model.pt (bytes and epoch), the same best accuracy in what the run reports and saves.

The later epochs are made worse for certain: before the resume the two validation folders
swap names, so every image the model gets right is now counted wrong.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from tests.core.training.grey_noise_folders import write_dark_and_light
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback
from workbench.core.runs.run_folder import read_metrics
from workbench.core.runs.run_index import read_run_summary
from workbench.core.training.engine import train


class _StopAfterEpoch(Callback):
    def __init__(self, control: RunControl, epoch: int) -> None:
        self.control, self.epoch = control, epoch

    def on_epoch_end(self, event):
        if event.epoch == self.epoch:
            self.control.request_stop_after_epoch()


def test_a_resumed_run_whose_later_epochs_are_worse_keeps_its_best_model(tmp_path) -> None:
    data = write_dark_and_light(tmp_path / "data")
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=28, crop_size=28, train_hflip=False, batch_size=8,
        epochs=5, optimizer="sgd", lr=0.05, momentum=0.9, scheduler="none", workers=0,
        cache_images=False, output_dir=str(tmp_path / "runs"), seed=0, device="cpu")
    control = RunControl()
    stopped = train(config, _StopAfterEpoch(control, 3), control)
    assert stopped.epochs_completed == 3
    best_file = Path(stopped.best_model_path)
    best_bytes, best_epoch = best_file.read_bytes(), stopped.best_epoch
    best_accuracy = stopped.best_val_accuracy
    assert best_accuracy == 1.0  # it learned, so the swapped folders below score less
    assert torch.load(best_file, weights_only=True)["epoch"] == best_epoch

    validation = data / "val"
    os.rename(validation / "dark", validation / "swap")
    os.rename(validation / "light", validation / "dark")
    os.rename(validation / "swap", validation / "light")
    resumed = train(config.replace(resume=stopped.last_checkpoint_path))

    assert resumed.status == "completed" and resumed.epochs_completed == 5
    later = [event for event in read_metrics(resumed.run_dir)
             if event["event"] == "EpochEnd" and event["epoch"] > 3]
    assert [event["epoch"] for event in later] == [4, 5]
    assert all(event["val_accuracy"] < best_accuracy for event in later)  # worse, as meant
    assert all(not event["is_best"] and event["best_epoch"] == best_epoch and
               event["best_val_accuracy"] == best_accuracy for event in later)
    # The best model file is the one written before the stop, byte for byte.
    assert resumed.best_model_path == str(best_file)
    assert best_file.read_bytes() == best_bytes
    # What the run reports and saves still names that epoch and its accuracy.
    assert (resumed.best_epoch, resumed.best_val_accuracy) == (best_epoch, best_accuracy)
    last = load_checkpoint(resumed.last_checkpoint_path)
    assert (last["epoch"], last["best_epoch"], last["best_val_accuracy"]) == (
        5, best_epoch, best_accuracy)
    summary = read_run_summary(resumed.run_dir)
    assert summary.best_val_accuracy == best_accuracy
