"""The one-cycle schedule: the lr of every step of a real run, against the closed form, and a
resumed run that goes on where the schedule stood."""

from __future__ import annotations

import math

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train

LR = 0.01
EPOCHS = 3
STEPS = 4  # 16 training images at batch 4


class _Lrs(Callback):
    def __init__(self, control: RunControl | None = None) -> None:
        self.steps: list[float] = []
        self.epochs: list[float] = []
        self.control = control

    def on_step(self, event) -> None:
        self.steps.append(event.lr)

    def on_epoch_end(self, event) -> None:
        self.epochs.append(event.lr)
        if self.control is not None:
            self.control.request_stop_after_epoch()


def _cosine(first: float, last: float, progress: float) -> float:
    return last + (first - last) * (1 + math.cos(math.pi * progress)) / 2


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> TrainConfig:
    root = tmp_path_factory.mktemp("one_cycle")
    data = write_shape_dataset(root / "data", classes=("circle", "square"), per_class=8,
                               size=(32, 32), layout="train_val", val_per_class=2)
    return TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=28, crop_size=28, batch_size=4, epochs=EPOCHS,
        optimizer="sgd", lr=LR, momentum=0.9, scheduler="onecycle", workers=0,
        cache_images=False, images_on_device=False, device="cpu", seed=3,
        output_dir=str(root / "runs"))


def test_every_step_climbs_a_quarter_of_the_run_then_falls_towards_zero(config):
    lrs = _Lrs()
    end = train(config, lrs)
    assert end.status == "completed", end.error

    total = EPOCHS * STEPS  # 12 steps: 3 climbing (a quarter), 9 falling
    expected = [_cosine(LR / 25, LR, step / 3) for step in range(3)] + \
        [_cosine(LR, LR / 1e5, (step - 3) / 9) for step in range(3, total)]
    assert lrs.steps == pytest.approx(expected, rel=1e-9)
    assert lrs.steps[0] == pytest.approx(LR / 25) and max(lrs.steps) == pytest.approx(LR)
    # Each epoch says the lr its last step trained at.
    assert lrs.epochs == pytest.approx([expected[STEPS * e - 1] for e in (1, 2, 3)], rel=1e-9)


def test_a_resumed_run_goes_on_from_the_step_it_stopped_at(config, tmp_path):
    control = RunControl()
    first_lrs = _Lrs(control)
    first = train(config.replace(output_dir=str(tmp_path / "first")), first_lrs, control)
    assert first.epochs_completed == 1
    resumed_lrs = _Lrs()
    resumed = train(config.replace(resume=first.last_checkpoint_path), resumed_lrs)
    assert resumed.status == "completed", resumed.error

    straight = _Lrs()
    train(config.replace(output_dir=str(tmp_path / "straight")), straight)
    assert first_lrs.steps + resumed_lrs.steps == pytest.approx(straight.steps, rel=1e-9)
