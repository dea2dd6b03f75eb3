"""Early stopping: the watched validation figure, its patience, and a real run that stops."""

from __future__ import annotations

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.early_stopping import EarlyStopping
from workbench.core.training.engine import train


class Messages(Callback):
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.epochs: list[int] = []

    def on_message(self, event) -> None:
        self.texts.append(event.text)

    def on_epoch_end(self, event) -> None:
        self.epochs.append(event.epoch)


def test_patience_counts_epochs_since_the_best_value():
    loss = EarlyStopping("val_loss", patience=2)
    assert [loss.update(e, v, 0.0) for e, v in enumerate([1.0, 0.8, 0.9, 0.7, 0.75, 0.71], 1)] \
        == [False, False, False, False, False, True]
    assert (loss.best, loss.best_epoch) == (0.7, 4)
    accuracy = EarlyStopping("val_accuracy", patience=1)
    assert [accuracy.update(e, 0.0, v) for e, v in enumerate([0.5, 0.6, 0.6], 1)] \
        == [False, False, True]
    with pytest.raises(ValueError, match="val_loss or val_accuracy"):
        EarlyStopping("train_loss", 2)



@pytest.mark.parametrize(("monitor", "best"), [("val_accuracy", 0.83), ("val_loss", 0.52)])
def test_the_best_epoch_is_the_peak_in_the_middle_higher_or_lower_as_watched(monitor, best):
    # Epoch 2 is the best by both figures; neither the first nor the last is.
    watcher = EarlyStopping(monitor, patience=5)
    for epoch, (loss, accuracy) in enumerate(zip([0.95, 0.52, 0.58], [0.61, 0.83, 0.79],
                                                 strict=True), 1):
        watcher.update(epoch, loss, accuracy)
    assert (watcher.best, watcher.best_epoch, watcher.epochs_without_improvement) == (best, 2, 1)

def test_a_run_that_stops_improving_ends_early_and_says_why(tmp_path):
    data = write_shape_dataset(tmp_path / "data", per_class=8, size=(32, 32),
                               layout="train_val", val_per_class=2)
    # A frozen backbone (its BatchNorm statistics too) and an lr this small change nothing,
    # so the validation loss never improves on epoch 1's.
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                         finetune="last_layer", crop_mode="five_crop", resize_size=32, crop_size=28,
                         batch_size=8, epochs=6, lr=1e-12, scheduler="none", workers=0,
                         device="cpu", output_dir=str(tmp_path / "runs"),
                         cache_dir=str(tmp_path / "cache"), early_stopping="val_loss",
                         early_stopping_patience=2)
    watcher = Messages()
    end = train(config, watcher)

    assert end.status == "completed"
    assert end.epochs_completed == 3 and watcher.epochs == [1, 2, 3]
    assert any("Early stopping: the validation loss has not improved for 2 epoch(s)" in text
               for text in watcher.texts)
    assert end.best_model_path  # the best model is kept


class StopAfterEpoch(Messages):
    """Asks the run to stop (as the window's Stop does) once epoch ``epoch`` has ended."""

    def __init__(self, control, epoch: int) -> None:
        super().__init__()
        self.control, self.epoch = control, epoch

    def on_epoch_end(self, event) -> None:
        super().on_epoch_end(event)
        if event.epoch == self.epoch:
            self.control.request_cancel()


def _never_improving(data, tmp_path, name: str) -> TrainConfig:
    """A run whose validation loss never beats epoch 1's (see the test above)."""
    return TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                       finetune="last_layer", crop_mode="standard", resize_size=32, crop_size=28,
                       batch_size=16, epochs=6, lr=1e-12, scheduler="none", workers=0,
                       device="cpu", output_dir=str(tmp_path / name), run_name=name,
                       cache_dir=str(tmp_path / "cache"), early_stopping="val_loss",
                       early_stopping_patience=3, max_steps_per_epoch=1)


def test_a_stopped_and_resumed_run_stops_at_the_epoch_an_uninterrupted_one_does(tmp_path):
    from workbench.core.models.checkpoint_format import load_checkpoint
    from workbench.core.runs.control import RunControl

    data = write_shape_dataset(tmp_path / "data", per_class=4, size=(32, 32),
                               layout="train_val", val_per_class=2)
    uninterrupted = Messages()
    end = train(_never_improving(data, tmp_path, "whole"), uninterrupted)
    assert end.status == "completed" and uninterrupted.epochs == [1, 2, 3, 4]

    control = RunControl()
    first = StopAfterEpoch(control, epoch=2)
    stopped = train(_never_improving(data, tmp_path, "parts"), first, control)
    assert stopped.status == "cancelled" and stopped.epochs_completed == 2
    saved = load_checkpoint(stopped.last_checkpoint_path)["early_stopping"]
    assert saved == {"monitor": "val_loss", "best": saved["best"], "best_epoch": 1,
                     "epochs_without_improvement": 1}

    resumed = Messages()
    config = _never_improving(data, tmp_path, "parts").replace(
        resume=stopped.last_checkpoint_path)
    end = train(config, resumed)
    assert end.status == "completed"
    assert resumed.epochs == [3, 4]  # as uninterrupted: epoch 1 best, three without improving
    assert any("Early stopping: the validation loss has not improved for 3 epoch(s) "
               "(best" in text and "at epoch 1)" in text for text in resumed.texts)


def test_a_checkpoint_without_early_stopping_state_still_resumes(tmp_path):
    import torch

    from workbench.core.models.checkpoint_format import load_checkpoint
    from workbench.core.runs.control import RunControl

    data = write_shape_dataset(tmp_path / "data", per_class=4, size=(32, 32),
                               layout="train_val", val_per_class=2)
    control = RunControl()
    stopped = train(_never_improving(data, tmp_path, "old"), StopAfterEpoch(control, 1),
                    control)
    # As an older Workbench wrote it: no early-stopping state, no best val loss.
    state = load_checkpoint(stopped.last_checkpoint_path)
    del state["early_stopping"], state["best_val_loss"]
    torch.save(state, stopped.last_checkpoint_path)

    resumed = Messages()
    config = _never_improving(data, tmp_path, "old").replace(
        resume=stopped.last_checkpoint_path, epochs=3)
    end = train(config, resumed)
    assert end.status == "completed" and resumed.epochs == [2, 3]
    assert any("holds no early-stopping state" in text for text in resumed.texts)
