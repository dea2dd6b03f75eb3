"""What a resumed run restores and keeps, by known answer: its best epoch, accuracy, loss and
best-model file (said in the message that names the kept result), where it says it resumed
from, the checkpoint it holds when cancelled before its first new epoch, each new epoch's
event, and one run folder whose views show every epoch, the re-run one included. And the
first epoch to reach the best accuracy stays the best when later epochs only equal it.

Real tiny runs (a small CNN on 16 dark and light noise images, about a second each).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from PIL import Image

from tests.core.training.grey_noise_folders import write_dark_and_light
from workbench.core.models.building import SmallCNN
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback
from workbench.core.runs.predictions_file import read_predictions
from workbench.core.runs.run_folder import read_metrics
from workbench.core.runs.run_index import read_run_summary, run_curves
from workbench.core.training.engine import train


def _swap_validation_classes(data: Path) -> None:
    """Every image the model gets right is counted wrong from now on."""
    validation = data / "val"
    os.rename(validation / "dark", validation / "swap")
    os.rename(validation / "light", validation / "dark")
    os.rename(validation / "swap", validation / "light")


class _Record(Callback):
    """Every message and epoch end; asks to stop after ``stop_after`` or cancel at the first
    step of the run."""

    def __init__(self, control: RunControl | None = None, stop_after: int = 0,
                 cancel: bool = False) -> None:
        self.control, self.stop_after, self.cancel = control, stop_after, cancel
        self.texts: list[str] = []
        self.levels: dict[str, str] = {}
        self.epochs: list = []

    def on_message(self, event):
        self.texts.append(event.text)
        self.levels[event.text] = event.level

    def on_step(self, event):
        if self.cancel:
            self.control.request_cancel()

    def on_epoch_end(self, event):
        self.epochs.append(event)
        if event.epoch == self.stop_after:
            self.control.request_stop_after_epoch()


def _config(tmp_path: Path, data: Path, epochs: int) -> TrainConfig:
    return TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=28, crop_size=28, train_hflip=False, batch_size=8,
        epochs=epochs, optimizer="sgd", lr=0.05, momentum=0.9, scheduler="none", workers=0,
        cache_images=False, output_dir=str(tmp_path / "runs"), seed=0, device="cpu")


@pytest.fixture
def stopped(tmp_path):
    """A 5-epoch run stopped after epoch 3 with every validation image right."""
    data = write_dark_and_light(tmp_path / "data")
    config = _config(tmp_path, data, epochs=5)
    control = RunControl()
    first = _Record(control, stop_after=3)
    end = train(config, first, control)
    assert end.epochs_completed == 3 and end.best_val_accuracy == 1.0
    best = next(e for e in first.epochs if e.epoch == end.best_epoch)
    return config, data, end, best


def test_a_resumed_run_keeps_its_best_epoch_accuracy_loss_and_file(stopped):
    config, data, end, best = stopped
    run_dir = Path(end.run_dir)
    dataset = json.loads((run_dir / "config.json").read_text())["dataset"]
    assert dataset["train_images"] == 16 and dataset["val_images"] == 8
    # The best epoch's predictions: every validation image, each right.
    predictions = (run_dir / "predictions.csv").read_bytes()
    rows = read_predictions(run_dir)
    assert sorted((Path(r.path).name, r.true_class) for r in rows) == sorted(
        (f"{i}.png", name) for name in ("dark", "light") for i in range(4))
    assert all(r.predicted_class == r.true_class for r in rows)
    # The best model's feature findings, beside them, name the data folder they looked at.
    assert json.loads((run_dir / "feature_health.json").read_text())["root"] == str(data)
    _swap_validation_classes(data)
    control = RunControl()
    resumed = _Record(control, stop_after=4)
    checkpoint = end.last_checkpoint_path
    again = train(config.replace(resume=checkpoint), resumed, control)

    assert resumed.levels[f"Resuming from {checkpoint} after epoch 3."] == "info"
    # Stopped after epoch 4 of 5: the kept result is the best from before the resume, with
    # the loss it had, and its file.
    assert (f"Kept epoch {end.best_epoch} as the run's result (val accuracy 100.0%, val loss "
            f"{best.val_loss:.4f}), the best model: {run_dir / 'best_model.pt'}."
            in resumed.texts)
    (epoch,) = resumed.epochs
    assert (epoch.epoch, epoch.epochs, epoch.is_best, epoch.best_epoch,
            epoch.best_val_accuracy) == (4, 5, False, end.best_epoch, 1.0)
    assert epoch.val_accuracy < 1.0 and epoch.checkpoint_path == str(run_dir / "last.pt")
    assert epoch.images_per_second * epoch.epoch_seconds == pytest.approx(16)
    assert epoch.train_loss >= 0 and 0 <= epoch.train_accuracy <= 1
    assert epoch.val_loss > best.val_loss  # every image now counted wrong
    assert sum(map(sum, epoch.confusion)) == 8 and len(epoch.per_class_accuracy) == 2
    assert (again.status, again.epochs_completed, again.best_epoch, again.best_val_accuracy,
            again.best_model_path, again.last_checkpoint_path, again.run_dir) == (
        "completed", 4, end.best_epoch, 1.0, str(run_dir / "best_model.pt"),
        str(run_dir / "last.pt"), str(run_dir))
    last = load_checkpoint(again.last_checkpoint_path)
    assert (last["epoch"], last["best_epoch"], last["best_val_accuracy"]) == (4, end.best_epoch,
                                                                             1.0)
    assert last["best_val_loss"] == pytest.approx(best.val_loss, rel=1e-6)
    best_file = torch.load(run_dir / "best_model.pt", weights_only=True)
    assert (best_file["epoch"], best_file["val_accuracy"]) == (end.best_epoch, 1.0)
    # The worse epochs left the best epoch's predictions as they were.
    assert (run_dir / "predictions.csv").read_bytes() == predictions

    # One run folder: its views show epochs 1 to 4 and both attempts.
    events = read_metrics(run_dir)
    assert [e["event"] for e in events].count("RunStart") == 2
    curves = run_curves(run_dir)
    assert curves.epochs == (1, 2, 3, 4)
    assert curves.val_accuracy[3] == pytest.approx(epoch.val_accuracy)
    summary = read_run_summary(run_dir)
    assert (summary.epochs_completed, summary.epochs, summary.best_val_accuracy) == (4, 5, 1.0)
    config_json = json.loads((run_dir / "config.json").read_text())
    assert config_json["config"]["resume"] == checkpoint
    # Rewritten by the resumed attempt: its data and what ran.
    assert config_json["dataset"] == dataset
    assert config_json["ran"] == {"device": "cpu", "precision": "float32",
                                  "memory_format": "contiguous", "pin_memory": False}


def test_a_resume_without_its_best_model_file_names_none_and_a_cancel_keeps_the_checkpoint(
        stopped):
    config, data, end, _best = stopped
    run_dir = Path(end.run_dir)
    (run_dir / "best_model.pt").unlink()
    _swap_validation_classes(data)
    control = RunControl()
    resumed = _Record(control, cancel=True)
    # Early stopping on now, off in the run resumed: its patience counts afresh, a warning.
    again = train(config.replace(resume=end.last_checkpoint_path,
                                 early_stopping="val_accuracy"), resumed, control)
    warning = ("Early stopping: the checkpoint holds no early-stopping state (early stopping "
               "was off, or an older Workbench wrote it): its patience counts from the "
               "resumed epoch.")
    assert resumed.levels.get(warning) == "warning"
    # Cancelled in its first step: nothing new, the checkpoint resumed from still holds
    # epoch 3 and the best stays the one it names.
    assert resumed.epochs == []
    assert (again.status, again.epochs_completed, again.best_epoch, again.best_val_accuracy,
            again.best_model_path, again.last_checkpoint_path) == (
        "cancelled", 3, end.best_epoch, 1.0, "", str(run_dir / "last.pt"))
    assert resumed.levels[f"Stopped on request; {run_dir / 'last.pt'} holds epoch 3."] == "info"
    assert 0 < again.seconds < 60
    assert load_checkpoint(run_dir / "last.pt")["epoch"] == 3


def test_a_resume_with_another_learning_rate_says_it_keeps_the_checkpoints(stopped):
    config, _data, end, _best = stopped
    checkpoint = end.last_checkpoint_path
    control = RunControl()
    resumed = _Record(control, stop_after=4)
    # Trained at lr 0.05, momentum 0.9, weight decay 1e-4; resumed asking for others.
    train(config.replace(resume=checkpoint, lr=0.01, weight_decay=0.001, momentum=0.9),
          resumed, control)
    said = (f"Resuming from {checkpoint} after epoch 3. It goes on with the checkpoint's "
            "learning rate 0.05 (the settings say 0.01) and weight decay 0.0001 (the settings "
            "say 0.001): a resumed run keeps the optimiser and schedule it saved; to train with "
            "the new values, start a new run.")
    assert resumed.levels[said] == "warning"
    (epoch,) = resumed.epochs
    assert epoch.lr == pytest.approx(0.05)  # what the message says it trained at


def test_a_scheduled_run_resumed_with_its_own_settings_says_nothing_of_them(tmp_path):
    # A schedule has moved the optimiser's lr by the time it is saved (warm-up: epoch 1 at
    # half the lr, epoch 2 at the full one); only its base counts.
    data = write_dark_and_light(tmp_path / "data")
    config = _config(tmp_path, data, epochs=3).replace(scheduler="warmup_cosine")
    control = RunControl()
    end = train(config, _Record(control, stop_after=1), control)
    control = RunControl()
    resumed = _Record(control, cancel=True)
    train(config.replace(resume=end.last_checkpoint_path), resumed, control)
    said = f"Resuming from {end.last_checkpoint_path} after epoch 1."
    assert resumed.levels[said] == "info"


def test_a_cosine_run_resumed_with_more_epochs_follows_the_longer_schedule(tmp_path):
    # `train --epochs 4 --resume last.pt` after a finished 2-epoch cosine run at lr 0.05: the
    # schedule spans 4 epochs, so epochs 3 and 4 train at 0.05 * 0.5 (1 + cos(pi e / 4)) for
    # e = 2, 3 (torch's CosineAnnealingLR trained epoch 3 at 0 and then climbed).
    data = write_dark_and_light(tmp_path / "data")
    config = _config(tmp_path, data, epochs=2).replace(scheduler="cosine")
    first = _Record()
    end = train(config, first)
    assert [epoch.lr for epoch in first.epochs] == pytest.approx([0.05, 0.025])
    resumed = _Record()
    train(config.replace(epochs=4, resume=end.last_checkpoint_path), resumed)
    assert [epoch.lr for epoch in resumed.epochs] == pytest.approx([0.025, 0.0073223], abs=1e-7)


def test_a_checkpoint_saved_with_torchs_cosine_schedule_still_resumes(tmp_path):
    """Checkpoints written before cosine was computed from the epoch hold CosineAnnealingLR's
    state; they resume where they were, on the same curve."""
    data = write_dark_and_light(tmp_path / "data")
    config = _config(tmp_path, data, epochs=4).replace(scheduler="cosine")
    control = RunControl()
    end = train(config, _Record(control, stop_after=2), control)
    checkpoint = Path(end.last_checkpoint_path)
    state = torch.load(checkpoint, weights_only=True)
    state["scheduler"] = {"T_max": 4, "eta_min": 0.0, "base_lrs": [0.05], "last_epoch": 2,
                          "_step_count": 3, "_is_initial": False,
                          "_get_lr_called_within_step": False, "_last_lr": [0.025]}
    torch.save(state, checkpoint)
    resumed = _Record()
    again = train(config.replace(resume=str(checkpoint)), resumed)
    assert again.status == "completed", again.error
    assert resumed.levels[f"Resuming from {checkpoint} after epoch 2."] == "info"
    assert [epoch.lr for epoch in resumed.epochs] == pytest.approx([0.025, 0.0073223],
                                                                   abs=1e-7)


def test_a_run_cancelled_before_its_first_epoch_ends_with_nothing_kept(tmp_path):
    data = write_dark_and_light(tmp_path / "data")
    control = RunControl()
    record = _Record(control, cancel=True)
    end = train(_config(tmp_path, data, epochs=2), record, control)
    assert (end.status, end.epochs_completed, end.best_epoch, end.best_val_accuracy,
            end.best_model_path, end.last_checkpoint_path) == ("cancelled", 0, 0, 0.0, "", "")
    assert record.levels["Stopped on request; no epoch had finished, so nothing was saved."] == (
        "info")
    assert 0 < end.seconds < 60


def test_the_first_epoch_to_reach_the_best_accuracy_stays_the_best(tmp_path):
    data = write_dark_and_light(tmp_path / "data")
    record = _Record()
    end = train(_config(tmp_path, data, epochs=4), record)
    accuracies = [e.val_accuracy for e in record.epochs]
    first_best = accuracies.index(max(accuracies)) + 1
    assert accuracies.count(max(accuracies)) >= 2  # later epochs equal it
    assert end.best_epoch == first_best
    assert [e.is_best for e in record.epochs] == [
        e.val_accuracy > max(accuracies[:i], default=-1) for i, e in enumerate(record.epochs)]
    assert torch.load(Path(end.run_dir) / "best_model.pt", weights_only=True)["epoch"] == (
        first_best)


def test_a_checkpoint_of_other_classes_is_refused_naming_both(stopped, tmp_path):
    config, _data, end, _best = stopped
    other = tmp_path / "other"
    for split in ("train", "val"):
        for name in ("cat", "dog"):
            folder = other / split / name
            folder.mkdir(parents=True)
            for index in range(2):
                Image.new("L", (32, 32), 40 * index).save(folder / f"{index}.png")
    refused = train(config.replace(data_root=str(other), resume=end.last_checkpoint_path))
    assert refused.status == "failed"
    assert (f"{end.last_checkpoint_path}: the checkpoint was trained on classes "
            f"['dark', 'light'], but {other} has ['cat', 'dog']") in refused.error
    # Weights of another network (one layer fewer) are refused naming the file.
    state = load_checkpoint(end.last_checkpoint_path)
    state["model"].popitem()
    other_network = tmp_path / "other_network.pt"
    torch.save(state, other_network)
    refused = train(config.replace(resume=str(other_network)))
    assert refused.status == "failed"
    assert f"{other_network}: does not fit this model/optimizer (" in refused.error


class _Block(_Record):
    """Puts a folder (with a file in it) where the run will write ``name``, so that the write
    fails as on a full or read-only disk."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def on_run_start(self, event):
        blocker = Path(event.run_dir) / self.name
        blocker.mkdir(exist_ok=True)
        (blocker / "keep").write_text("")


def test_a_failed_save_says_which_checkpoint_still_holds_the_run(tmp_path):
    data = write_dark_and_light(tmp_path / "data")
    config = _config(tmp_path, data, epochs=4)
    failed = train(config, _Block("last.pt"))
    assert failed.status == "failed" and failed.epochs_completed == 0
    assert "; no earlier epoch had been saved. Free some space" in failed.error

    first = train(config.replace(epochs=1, run_name="first"))
    kept = Path(first.run_dir) / "kept.pt"  # resumed from a copy, so last.pt can be blocked
    kept.write_bytes(Path(first.last_checkpoint_path).read_bytes())
    (Path(first.run_dir) / "last.pt").unlink()
    failed = train(config.replace(resume=str(kept)), _Block("last.pt"))
    assert failed.status == "failed"
    assert f"; '{kept}' still holds epoch 1. Free some space" in failed.error


def test_predictions_that_cannot_be_written_are_a_warning_and_the_run_goes_on(tmp_path):
    data = write_dark_and_light(tmp_path / "data")
    record = _Block("predictions.csv")
    end = train(_config(tmp_path, data, epochs=1), record)
    assert end.status == "completed" and end.best_epoch == 1
    (problem,) = [t for t in record.texts if "could not be written" in t]
    assert problem.startswith(f"{Path(end.run_dir) / 'predictions.csv'} could not be written: ")
    assert record.levels[problem] == "warning"


@pytest.mark.parametrize("head_epochs, next_stage", [
    (2, "; the next epoch trains the head only"),
    (1, "; the next epoch trains the whole network")])
def test_a_head_then_full_resume_says_which_stage_comes_next(tmp_path, head_epochs, next_stage):
    data = write_dark_and_light(tmp_path / "data")
    weights = tmp_path / "small_cnn.pt"
    torch.save(SmallCNN(2, in_channels=1).state_dict(), weights)
    config = _config(tmp_path, data, epochs=3).replace(
        weights="file", weights_file=str(weights), finetune="head_then_full",
        head_epochs=head_epochs, backbone_lr_factor=0.1)
    control = RunControl()
    first = train(config, _Record(control, stop_after=1), control)
    assert first.epochs_completed == 1, first.error
    control = RunControl()
    resumed = _Record(control, cancel=True)
    train(config.replace(resume=first.last_checkpoint_path), resumed, control)
    assert resumed.levels[
        f"Resuming from {first.last_checkpoint_path} after epoch 1{next_stage}."] == "info"


def test_an_epoch_none_of_whose_validation_images_decode_counts_as_0_and_is_kept(tmp_path):
    data = write_dark_and_light(tmp_path / "data")
    for image in (data / "val").rglob("*.png"):
        image.write_bytes(image.read_bytes()[:60])  # a PNG header, then nothing
    record = _Record()
    end = train(_config(tmp_path, data, epochs=1).replace(max_failed_images=100), record)
    assert end.status == "completed", end.error
    (epoch,) = record.epochs
    assert epoch.val_accuracy == 0.0 and epoch.is_best  # not NaN: 0.0 beats "no epoch yet"
    assert (end.best_epoch, end.best_val_accuracy) == (1, 0.0)
    assert Path(end.best_model_path).is_file()


def test_a_view_that_fails_on_the_run_end_leaves_the_run_as_it_ended(tmp_path):
    class _FailAtEnd(_Record):
        def __init__(self) -> None:
            super().__init__()
            self.ends: list = []

        def on_run_end(self, event):
            self.ends.append(event)
            raise RuntimeError("a view could not show the end")

    data = write_dark_and_light(tmp_path / "data")
    record = _FailAtEnd()
    end = train(_config(tmp_path, data, epochs=1), record)
    # on_run_end is called once however the run ends; the run stays completed.
    assert [e.status for e in record.ends] == ["completed"] and end is record.ends[0]


def test_a_resume_from_an_earlier_checkpoint_shows_the_rerun_epoch_once(tmp_path):
    class _KeepEpochOne(_Record):
        def on_epoch_end(self, event):
            super().on_epoch_end(event)
            if event.epoch == 1:  # last.pt holds epoch 1 when its end is reported
                last = Path(event.checkpoint_path)
                (last.parent / "epoch1.pt").write_bytes(last.read_bytes())

    data = write_dark_and_light(tmp_path / "data")
    config = _config(tmp_path, data, epochs=2)
    first = train(config, _KeepEpochOne())
    assert first.epochs_completed == 2
    _swap_validation_classes(data)
    record = _Record()
    again = train(config.replace(resume=str(Path(first.run_dir) / "epoch1.pt")), record)
    (rerun,) = record.epochs
    assert (again.run_dir, rerun.epoch) == (first.run_dir, 2)
    # The run's views: epochs 1 and 2 once each, epoch 2 as it was re-run.
    curves = run_curves(first.run_dir)
    assert curves.epochs == (1, 2)
    assert curves.val_accuracy[1] == pytest.approx(rerun.val_accuracy)
    assert curves.val_loss[1] == pytest.approx(rerun.val_loss)
    assert read_run_summary(first.run_dir).epochs_completed == 2
