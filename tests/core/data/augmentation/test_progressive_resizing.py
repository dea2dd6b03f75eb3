"""Progressive resizing: each epoch's training batches reach the model at that epoch's size
(worked out by hand), validation always at the full crop, a resumed run at the sizes of the
epochs it trains, and the resized pixels are those of torchvision's antialiased Resize."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as TF

from workbench.core.data.augmentation.progressive_resizing import (
    resize_prepared_batch,
    training_sizes,
)
from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.building import SmallCNN
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train


def test_sizes_grow_in_equal_steps_to_the_crop_by_three_quarters_of_the_run() -> None:
    # 28 px from 0.5 over 8 epochs: the ramp spans ceil(0.75 * 8) = 6 epochs, 14 + 14 * e / 5
    # (14, 16.8, 19.6, 22.4, 25.2, 28) rounded to even pixels, then the crop.
    assert training_sizes(28, 0.5, 8) == [14, 16, 20, 22, 26, 28, 28, 28]
    # 224 px: multiples of 32 (112 rounds up to 128), 224 from epoch 6 of 8.
    assert training_sizes(224, 0.5, 8) == [128, 128, 160, 192, 192, 224, 224, 224]
    assert training_sizes(28, 1.0, 3) == [28, 28, 28]  # off
    # From 8 px over a ramp of 3 epochs (8, 20, 32), never below the model's smallest 16 px.
    assert training_sizes(32, 0.25, 3, smallest=16) == [16, 20, 32]


def test_resized_batches_are_torchvisions_antialiased_resize_of_the_crops() -> None:
    images = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(0))
    labels = torch.arange(4)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    prepare = BatchPreparer(mean, std, "cpu", channels_last=True)

    resized, same_labels = resize_prepared_batch(prepare, 20, channels_last=True)(images, labels)

    expected = v2.Normalize(mean, std)(TF.resize(images.float() / 255, [20, 20],
                                                 antialias=True))
    assert resized.shape == (4, 3, 20, 20)
    assert torch.allclose(resized, expected, atol=1e-5)
    assert resized.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(same_labels, labels)


class _Epochs(Callback):
    def __init__(self, seen: list[tuple[bool, int]]) -> None:
        self.seen = seen
        self.by_epoch: dict[int, list[tuple[bool, int]]] = {}

    def on_epoch_end(self, event) -> None:
        self.by_epoch[event.epoch] = list(self.seen)
        self.seen.clear()


def _train_recording(config: TrainConfig) -> tuple[object, dict[int, list[tuple[bool, int]]]]:
    """Run ``config``; for each epoch, the (training?, side) of every batch small_cnn saw.
    A training step is a forward with gradients: the BatchNorm statistics recomputed before
    validation (training mode, no gradients, at the crop) are not one."""
    seen: list[tuple[bool, int]] = []

    def record(module: torch.nn.Module, args: tuple) -> None:
        if isinstance(module, SmallCNN) and (torch.is_grad_enabled() or not module.training):
            seen.append((module.training, args[0].shape[-1]))

    epochs = _Epochs(seen)
    handle = torch.nn.modules.module.register_module_forward_pre_hook(record)
    try:
        end = train(config, epochs)
    finally:
        handle.remove()
    assert end.status == "completed", end.error
    return end, epochs.by_epoch


@pytest.fixture()
def config(tmp_path: Path) -> TrainConfig:
    data = write_shape_dataset(tmp_path / "data", per_class=10, size=(28, 28))
    return TrainConfig(model="small_cnn", weights="none", finetune="full", data_root=str(data),
                       output_dir=str(tmp_path / "runs"), device="cpu", epochs=4, batch_size=8,
                       resize_size=28, crop_size=28, workers=0, progressive_resize_start=0.5)


@pytest.mark.parametrize("on_device", [True, False], ids=["images-on-device", "loader"])
def test_each_epoch_trains_at_its_size_and_validates_at_the_crop(config: TrainConfig,
                                                                 on_device: bool) -> None:
    # 4 epochs from 14 px: a ramp of ceil(3) = 3 epochs, 14, 21 -> 20 (even), 28, then 28.
    _, by_epoch = _train_recording(config.replace(images_on_device=on_device))

    for epoch, size in zip((1, 2, 3, 4), (14, 20, 28, 28), strict=True):
        training = {side for is_training, side in by_epoch[epoch] if is_training}
        validation = {side for is_training, side in by_epoch[epoch] if not is_training}
        assert (training, validation) == ({size}, {28}), (epoch, by_epoch[epoch])


def test_a_resumed_run_trains_at_the_sizes_of_its_epochs(config: TrainConfig) -> None:
    first, _ = _train_recording(config.replace(epochs=1))

    _, by_epoch = _train_recording(config.replace(resume=first.last_checkpoint_path))

    assert sorted(by_epoch) == [2, 3, 4]
    assert [{side for is_training, side in by_epoch[epoch] if is_training}
            for epoch in (2, 3, 4)] == [{20}, {28}, {28}]


def test_the_log_says_the_sizes(config: TrainConfig) -> None:
    said: list[str] = []

    class Messages(Callback):
        def on_message(self, event) -> None:
            said.append(event.text)

    train(config.replace(epochs=2), Messages())

    assert ("Progressive resizing: training crops grow from 14 px in epoch 1 to 28 px from "
            "epoch 2 (epoch by epoch: 14, 28 px); validation, prediction and exports use 28 px."
            ) in said


@pytest.mark.parametrize(("changes", "problem"), [
    ({"progressive_resize_start": 1.5}, "must be more than 0 and at most 1, where 1 is off"),
    ({"progressive_resize_start": 0.0}, "must be more than 0 and at most 1, where 1 is off"),
    ({"finetune": "last_layer", "model": "resnet18", "weights": "imagenet"},
     "applies only when the backbone trains (finetune 'full' or 'head_then_full')"),
    ({"model": "vit_b_16", "resize_size": 256, "crop_size": 224},
     "vit_b_16 takes no crop smaller than 224 px, so its training crops cannot start smaller"),
    ({"model": "resnet18", "progressive_resize_start": 0.2},
     "starts the training crops at 6 px, smaller than resnet18 takes (8 px); raise it to at "
     "least 0.29 or set it to 1"),
])
def test_settings_it_cannot_train_are_named(config: TrainConfig, changes: dict,
                                            problem: str) -> None:
    problems = config.replace(**changes).validate(check_paths=False)
    label = "Progressive resizing, first size (progressive_resize_start): "
    assert any(text.startswith(label) and problem in text for text in problems), problems
