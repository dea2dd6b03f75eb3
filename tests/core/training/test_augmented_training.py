"""Real tiny runs with the training augmentations: every one on, through the loader and
through the images kept on the device; label smoothing and mixing change the training loss
and leave the validation loss alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train

ALL_ON = {
    "color_jitter_brightness": 0.4, "color_jitter_contrast": 0.4,
    "color_jitter_saturation": 0.4, "color_jitter_hue": 0.1, "rotation_degrees": 15.0,
    "auto_augment": "rand_augment", "mixup_alpha": 0.2, "cutmix_alpha": 1.0,
    "label_smoothing": 0.1,
}


class Recorder(Callback):
    def __init__(self) -> None:
        self.epochs = []
        self.messages: list[str] = []
        self.start = None

    def on_run_start(self, event) -> None:
        self.start = event

    def on_epoch_end(self, event) -> None:
        self.epochs.append(event)

    def on_message(self, event) -> None:
        self.messages.append(event.text)


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    return write_shape_dataset(tmp_path_factory.mktemp("shapes"), per_class=8, size=(32, 32),
                               layout="train_val", val_per_class=2, image_format="PNG")


def _config(data: Path, output: Path, **changes) -> TrainConfig:
    return TrainConfig(
        data_root=str(data), model="resnet18", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=32, batch_size=8, epochs=1,
        optimizer="sgd", lr=0.01, scheduler="none", workers=0, output_dir=str(output),
        cache_images=False, seed=3, amp=False,
    ).replace(**changes)


@pytest.mark.parametrize("on_device", [False, True], ids=["loader", "on_device"])
def test_a_run_with_every_augmentation_finishes(shapes, tmp_path, on_device) -> None:
    recorder = Recorder()
    config = _config(shapes, tmp_path, images_on_device=on_device, epochs=2, **ALL_ON)
    end = train(config, recorder)

    assert end.status == "completed" and end.epochs_completed == 2
    assert recorder.start.images_on_device is on_device
    assert all(0.0 <= epoch.train_accuracy <= 1.0 for epoch in recorder.epochs)


@pytest.mark.parametrize("on_device", [False, True], ids=["loader", "on_device"])
def test_label_smoothing_and_mixing_reach_the_training_loss_only(shapes, tmp_path,
                                                                 on_device) -> None:
    def first_epoch(name: str, **changes):
        recorder = Recorder()
        # An lr so small that the weights do not move: the validation loss is then that of
        # the same model in every run, and must not depend on the training loss's settings.
        config = _config(shapes, tmp_path / name, images_on_device=on_device,
                         model="small_cnn", crop_size=28, lr=1e-12, **changes)
        assert train(config, recorder).status == "completed"
        return recorder.epochs[0]

    plain = first_epoch("plain")
    again = first_epoch("again")
    assert (again.train_loss, again.val_loss) == (plain.train_loss, plain.val_loss)
    changed = {}
    for name, changes in (("smoothing", {"label_smoothing": 0.3}),
                          ("mixup", {"mixup_alpha": 0.4}), ("cutmix", {"cutmix_alpha": 1.0}),
                          ("mixup_smoothing", {"mixup_alpha": 0.4, "label_smoothing": 0.3})):
        changed[name] = first_epoch(name, **changes)
        assert changed[name].train_loss != plain.train_loss, name  # the repeat was equal
        if name == "smoothing":  # mixed pixels move the batch-norm statistics; smoothing not
            assert changed[name].val_loss == pytest.approx(plain.val_loss, abs=1e-6)
    # The same seed mixes the same images with the same shares: only smoothing differs, and
    # it must reach the loss of mixed targets too.
    assert changed["mixup_smoothing"].train_loss != changed["mixup"].train_loss
