"""BatchNorm statistics recomputed before every validation (random or pretrained weights):
which networks qualify, what the recomputation sets, and that it leaves the rest of the model
as it was."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import torch
import torchvision
from torch import nn

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.batch_norm_statistics import recompute_batch_norm_statistics
from workbench.core.training.engine import train


def _net(momentum: float | None = 0.1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4, momentum=momentum),
                         nn.Flatten(), nn.Linear(4 * 2 * 2, 2))


def _identity(inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return inputs, labels


def test_the_running_averages_become_the_mean_over_the_batches_and_the_rest_is_kept() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(*_net(0.01), nn.BatchNorm1d(2))
    net.train()
    net[4].eval()  # a frozen layer: it keeps its averages and its mode
    net[4].running_mean.fill_(7.0)
    weights = {name: value.clone() for name, value in net.state_dict().items()
               if "running" not in name and "num_batches" not in name}
    batches = [(torch.randn(8, 3, 2, 2) * 3 + 5, torch.zeros(8, dtype=torch.long))
               for _ in range(3)]
    conv_outputs = torch.cat([net[0](images) for images, _ in batches])

    used = recompute_batch_norm_statistics(net, iter(batches), _identity, contextlib.nullcontext)

    assert used == 3
    bn = net[1]
    # Equal batches: the average of the batch means is the mean of all their pixels.
    expected_mean = conv_outputs.mean(dim=(0, 2, 3))
    assert torch.allclose(bn.running_mean, expected_mean, atol=1e-5)
    # Each batch's unbiased variance, averaged (as the layer's own update computes it).
    per_batch = torch.stack([net[0](images).var(dim=(0, 2, 3), unbiased=True)
                             for images, _ in batches])
    assert torch.allclose(bn.running_var, per_batch.mean(0), atol=1e-4)
    assert bn.momentum == 0.01 and bn.training and not net[4].training
    assert torch.all(net[4].running_mean == 7.0) and net[4].num_batches_tracked.item() == 0
    assert all(torch.equal(value, net.state_dict()[name]) for name, value in weights.items())


def test_max_images_and_single_images_limit_what_is_averaged() -> None:
    net = _net()
    one_image = (torch.randn(1, 3, 2, 2), torch.zeros(1, dtype=torch.long))
    batches = [one_image] + [(torch.randn(4, 3, 2, 2), torch.zeros(4, dtype=torch.long))] * 5
    # 8 images: two batches of four; the single image before them is not one of them.
    assert recompute_batch_norm_statistics(net, iter(batches), _identity,
                                           contextlib.nullcontext, max_images=8) == 2
    assert net[1].num_batches_tracked.item() == 2
    # A batch that passes the count is the last one: 9 images take a third batch.
    assert recompute_batch_norm_statistics(net, iter(batches[1:]), _identity,
                                           contextlib.nullcontext, max_images=9) == 3


def test_no_batches_leave_the_averages_as_they_were() -> None:
    net = _net()
    net[1].running_mean.fill_(3.0)
    net[1].running_var.fill_(2.0)
    assert recompute_batch_norm_statistics(net, iter([]), _identity,
                                           contextlib.nullcontext) == 0
    assert torch.all(net[1].running_mean == 3.0) and torch.all(net[1].running_var == 2.0)


class _Messages(Callback):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_message(self, event) -> None:
        self.texts.append(event.text)


@pytest.mark.parametrize(("model", "weights", "finetune", "said"), [
    ("resnet18", "none", "full", "random weights"),
    # A file's averages are its source images', not this folder's.
    ("resnet18", "file", "full", "the weights file"),
    ("resnet18", "file", "last_layer", None),  # a frozen backbone's averages do not move
    ("small_cnn", "none", "full", None),  # same accuracy without it, a shorter first epoch
])
def test_a_run_recomputes_for_a_torchvision_model_whose_batch_norm_trains(
        tmp_path: Path, model: str, weights: str, finetune: str, said: str | None) -> None:
    data = write_shape_dataset(tmp_path / "data", per_class=6, size=(20, 20))
    weights_file = ""
    if weights == "file":
        weights_file = str(tmp_path / "resnet18.pt")
        torch.save(torchvision.models.resnet18(num_classes=4).state_dict(), weights_file)
    config = TrainConfig(model=model, weights=weights, weights_file=weights_file,
                         finetune=finetune, data_root=str(data), device="cpu", epochs=2,
                         batch_size=8, resize_size=16, crop_size=16, workers=0,
                         output_dir=str(tmp_path / "runs"))
    messages = _Messages()

    end = train(config, messages)

    assert end.status == "completed", end.error
    lines = [text for text in messages.texts if "BatchNorm statistics recomputed" in text]
    assert lines == ([f"Epoch 1: BatchNorm statistics recomputed on 3 training batches before "
                      "validation; this repeats before every validation, because running "
                      f"averages keep part of their start ({said}) and lag weights that are "
                      "still changing."] if said else [])


def test_every_validation_gets_statistics_for_the_weights_it_validates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also once the running averages have forgotten their start: they still lag the weights.
    19 steps an epoch at momentum 0.1 leave 0.25% of the start after the third epoch, where
    the rule before (recompute while more than 1% is left) stopped; on the real digit scans
    recomputing every epoch validated 4 points higher (docs/speed.md)."""
    from workbench.core.training import session

    data = write_shape_dataset(tmp_path / "data", per_class=12, size=(20, 20))
    recomputed: list[int] = []  # the batches each recomputation averaged over
    real = session.recompute_batch_norm_statistics

    def counting(*args, **kwargs) -> int:
        recomputed.append(real(*args, **kwargs))
        return recomputed[-1]

    monkeypatch.setattr(session, "recompute_batch_norm_statistics", counting)
    config = TrainConfig(model="resnet18", weights="none", finetune="full",
                         data_root=str(data), device="cpu", epochs=3, batch_size=2,
                         resize_size=16, crop_size=16, workers=0,
                         output_dir=str(tmp_path / "runs"))

    end = train(config, _Messages())

    assert end.status == "completed", end.error
    # Before each of the three validations, every training batch (fewer than MAX_IMAGES).
    assert len(recomputed) == 3 and len(set(recomputed)) == 1 and recomputed[0] >= 15, recomputed


def test_mobilenet_from_a_file_of_other_images_validates_above_chance(tmp_path: Path) -> None:
    """A weights file whose running averages are not this folder's (here: a MobileNetV3 saved
    before it saw any image) fine-tuned in full: with MobileNetV3's momentum of 0.01 a small
    folder's steps barely move them, and validation gave every image one output (loss ln 2,
    accuracy 0.5) until they were recomputed for weights files too."""
    import math
    import random

    from tests.conftest import TILE_COLOURS, draw_colour_tile

    rng = random.Random(0)
    for split, count in (("train", 48), ("val", 12)):
        for label in range(2):
            folder = tmp_path / "tiles" / split / f"colour{label}"
            folder.mkdir(parents=True)
            for index in range(count):
                wrong = split == "train" and index < 2  # a few mislabelled, as real folders
                colour = TILE_COLOURS[(label + 1) % 2 if wrong else label]
                draw_colour_tile(colour, 64, rng).save(folder / f"{index:03d}.png")
    torch.manual_seed(0)
    weights_file = tmp_path / "mobilenet.pt"
    torch.save(torchvision.models.mobilenet_v3_small(num_classes=5).state_dict(), weights_file)
    config = TrainConfig(model="mobilenet_v3_small", weights="file",
                         weights_file=str(weights_file), finetune="full",
                         data_root=str(tmp_path / "tiles"), device="cpu", epochs=4,
                         batch_size=32, resize_size=64, crop_size=64, workers=0,
                         optimizer="adamw", lr=2e-3, weight_decay=1e-4,
                         scheduler="warmup_cosine", output_dir=str(tmp_path / "runs"))
    epochs: list = []

    class Recorder(_Messages):
        def on_epoch_end(self, event) -> None:
            epochs.append(event)

    end = train(config, Recorder())

    assert end.status == "completed", end.error
    val_losses = [epoch.val_loss for epoch in epochs]
    assert all(abs(loss - math.log(2)) > 1e-3 for loss in val_losses), val_losses
    assert max(epoch.val_accuracy for epoch in epochs) >= 0.85, \
        [epoch.val_accuracy for epoch in epochs]
