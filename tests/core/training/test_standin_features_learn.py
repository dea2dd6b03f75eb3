"""Each family fine-tunes from a weights file of features pretrained elsewhere, and those
features are what it learns from.

ImageNet weights cannot be downloaded here, so each test first pretrains a tiny stand-in of
its family (nothing is shipped): the network from random weights on tiles of dark stripes on a light
ground in four orientations (0, 45, 90 and 135 degrees, random tints, 1.5 to 3 stripes a
tile), its backbone (every tensor but the family's head) saved as a plain state dict. The
test then runs what ``workbench train --model M --weights file --weights-file F`` runs: the
family's defaults for a weights file (``last_layer``: the backbone stays frozen, only a new
head trains, with the family's fine-tuning recipe), on a task the stand-in never saw: axis-
aligned against diagonal stripes, other tints and phases. Only features that tell stripe
orientations apart solve it with a linear head; the same run from a file of the family's
random weights, the control, shows what the architecture alone gives.

Measured on the 2-core machine (stand-ins pretrained with seed 0, fine-tuned with seeds 0-4,
best val accuracy on 32 tiles, chance 0.5): ResNet-18 0.84-1.00 from the stand-in against
0.50-0.75 from its random weights; MobileNetV3-Small 0.72-0.91 against 0.50-0.56;
ConvNeXt-Tiny 0.75-0.97 against 0.44-0.63. The test runs seed 0 and asks for at least
``FLOOR`` and ``MARGIN`` over the control. With the file's tensors not put into the model
(the loader's ``load_state_dict`` left out) all three fail (0.56, 0.50 and 0.56). About 21 s
for the three, most of it ConvNeXt's 30 pretraining steps.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from workbench.core.models.heads import head_state_prefix
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.model_defaults import apply_model_defaults, settings_for_weights
from workbench.core.training.engine import train

ANGLES = (0, 45, 90, 135)  # the stand-in's four classes, in degrees
TILE = 32  # the smallest crop every family takes (ConvNeXt downsamples 32 times)
IMAGENET_MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
IMAGENET_STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def stripes(angle: float, rng: random.Random, size: int = TILE) -> np.ndarray:
    """An HxWx3 uint8 tile of dark stripes on a light ground at ``angle`` degrees."""
    cycles, phase = rng.uniform(1.5, 3.0), rng.uniform(0.0, 2 * math.pi)
    y, x = np.mgrid[0:size, 0:size] / size
    theta = math.radians(angle)
    dark = np.sin(2 * math.pi * cycles * (x * math.cos(theta) + y * math.sin(theta)) + phase) > 0
    ink = np.array([rng.randint(0, 90) for _ in range(3)])
    ground = np.array([rng.randint(160, 255) for _ in range(3)])
    return np.where(dark[..., None], ink, ground).astype(np.uint8)


def stripe_batch(count: int, rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` tiles of random orientations, normalised as training feeds a torchvision
    model, and their orientation classes."""
    labels = [rng.randrange(len(ANGLES)) for _ in range(count)]
    tiles = np.stack([stripes(ANGLES[label], rng) for label in labels])
    images = torch.from_numpy(tiles).permute(0, 3, 1, 2).float() / 255
    return (images - IMAGENET_MEAN) / IMAGENET_STD, torch.tensor(labels)


def pretrain_standin(model: str, steps: int, lr: float, batch: int = 16
                     ) -> tuple[torch.nn.Module, float]:
    """``model`` from random weights trained on stripe orientations with AdamW; its BatchNorm
    statistics (where it has any) averaged over 8 more batches, as a pretrained network's are
    its own images'. Returns the network and its accuracy on 256 new tiles."""
    torch.manual_seed(0)
    rng = random.Random(0)
    network = torchvision.models.get_model(model, weights=None, num_classes=len(ANGLES))
    optimiser = torch.optim.AdamW(network.parameters(), lr)
    network.train()
    for _ in range(steps):
        images, labels = stripe_batch(batch, rng)
        loss = torch.nn.functional.cross_entropy(network(images), labels)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    norms = [m for m in network.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for norm in norms:
            norm.reset_running_stats()
            norm.momentum = None  # a plain average of the batches below
        for _ in range(8 if norms else 0):
            network(stripe_batch(batch, rng)[0])
        network.eval()
        images, labels = stripe_batch(256, rng)
        accuracy = (network(images).argmax(1) == labels).float().mean().item()
    return network, accuracy


def save_backbone(network: torch.nn.Module, path: Path) -> Path:
    """Every tensor but the head's, as the plain state dict a user gives as weights 'file'."""
    head = head_state_prefix(network)
    torch.save({k: v for k, v in network.state_dict().items() if not k.startswith(head)}, path)
    return path


def write_orientation_folder(root: Path, train_per_class: int, val_per_class: int) -> Path:
    """``root/{train,val}/{axis,diagonal}/``: stripes at 0 or 90 degrees against 45 or 135,
    drawn with another seed than the stand-in's tiles. A horizontal flip (the recipe's
    augmentation) keeps each tile in its class."""
    rng = random.Random(1)
    for split, count in (("train", train_per_class), ("val", val_per_class)):
        for name, angles in (("axis", (0, 90)), ("diagonal", (45, 135))):
            folder = root / split / name
            folder.mkdir(parents=True)
            for index in range(count):
                Image.fromarray(stripes(angles[index % 2], rng)).save(folder / f"{index:03d}.png")
    return root


class Recorder(Callback):
    def __init__(self) -> None:
        self.epochs: list = []
        self.messages: list[str] = []

    def on_epoch_end(self, event) -> None:
        self.epochs.append(event)

    def on_message(self, event) -> None:
        self.messages.append(event.text)


def fine_tune_from_file(model: str, data: Path, weights_file: Path, output: Path, epochs: int,
                        seed: int, **set_too) -> tuple[TrainConfig, Recorder, object]:
    """The run ``workbench train --model M --weights file --weights-file F`` starts, at the
    tile size, with ``set_too`` set as a user sets a field."""
    given = dict(model=model, data_root=str(data), output_dir=str(output), device="cpu",
                 weights="file", weights_file=str(weights_file), epochs=epochs,
                 resize_size=TILE, crop_size=TILE, seed=seed, workers=0, **set_too)
    config = apply_model_defaults(TrainConfig(**given), explicit=given)
    config, _notes = settings_for_weights(config, explicit=given)
    recorder = Recorder()
    return config, recorder, train(config, recorder)


# model, pretraining steps and lr, fine-tuning epochs, what the user sets besides.
FAMILIES = [
    pytest.param("resnet18", 30, 2e-3, 3, {}, id="resnet18"),
    pytest.param("mobilenet_v3_small", 30, 2e-3, 3, {}, id="mobilenet_v3_small"),
    # ConvNeXt's recipe (AdamW at lr 1e-4 after a warm-up) moves a new head too slowly for a
    # suite-sized run (0.56 after 8 epochs of 96 tiles a class); its lr is set to 1e-3 as a
    # user sets it, the rest of the recipe stays.
    pytest.param("convnext_tiny", 30, 2e-3, 4, {"lr": 1e-3}, id="convnext_tiny"),
]
TRAIN_PER_CLASS, VAL_PER_CLASS = 24, 16
FLOOR = 0.7  # of the stand-in's run; chance is 0.5
MARGIN = 0.15  # the least the stand-in's features add over the control's


@pytest.mark.slow
@pytest.mark.parametrize(("model", "steps", "lr", "epochs", "set_too"), FAMILIES)
def test_a_family_fine_tunes_from_features_pretrained_elsewhere(
        tmp_path: Path, model: str, steps: int, lr: float, epochs: int, set_too: dict) -> None:
    network, source_accuracy = pretrain_standin(model, steps, lr)
    assert source_accuracy >= 0.8, f"the stand-in did not learn its own task: {source_accuracy}"
    standin = save_backbone(network, tmp_path / f"standin_{model}.pt")
    control = save_backbone(torchvision.models.get_model(model, weights=None,
                                                         num_classes=len(ANGLES)),
                            tmp_path / f"random_{model}.pt")
    data = write_orientation_folder(tmp_path / "stripes", TRAIN_PER_CLASS, VAL_PER_CLASS)

    config, recorder, end = fine_tune_from_file(model, data, standin, tmp_path / "runs",
                                                epochs, seed=0, **set_too)
    assert config.finetune == "last_layer"  # what a weights file fine-tunes by default
    assert end.status == "completed", end.error
    head = head_state_prefix(network)
    backbone_tensors = sum(not key.startswith(head) for key in network.state_dict())
    assert f"Loaded {backbone_tensors} tensors from '{standin}'" in recorder.messages, \
        recorder.messages
    accuracies = [epoch.val_accuracy for epoch in recorder.epochs]
    assert end.best_val_accuracy >= FLOOR, accuracies
    assert min(epoch.val_loss for epoch in recorder.epochs) < math.log(2), \
        [epoch.val_loss for epoch in recorder.epochs]

    _config, control_recorder, control_end = fine_tune_from_file(
        model, data, control, tmp_path / "control_runs", epochs, seed=0, **set_too)
    assert control_end.status == "completed", control_end.error
    # The features, not the head or the recipe, solve the task.
    assert end.best_val_accuracy >= control_end.best_val_accuracy + MARGIN, \
        (accuracies, [epoch.val_accuracy for epoch in control_recorder.epochs])
