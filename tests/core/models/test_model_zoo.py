"""Every model of the catalogue, built and trained for real: its head found wherever its family
keeps it, fine-tuned a step in each mode, its frozen backbone's cached features equal to what
its own head is fed, and a weights file of its architecture loaded (a state dict saved from
torchvision's own constructor stands in for ImageNet weights, which cannot be downloaded here),
and its Grad-CAM map drawn from the layer its family has one at.

Crops are the smallest each architecture takes (32 px; 224 for ViT and Swin, which then get one
image: they have no BatchNorm that needs two, and ViT's steps take seconds each on a CPU).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import torch
import torchvision
from torch import nn

from workbench.core.models import building
from workbench.core.models.building import (
    SmallCNN,
    WeightsError,
    apply_finetune_mode,
    build_model,
    set_train_mode,
)
from workbench.core.models.grad_cam import class_activation_map
from workbench.core.models.heads import classifier_head, split_backbone_head
from workbench.core.runs.config import MODELS, TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.model_catalog import SMALL_CNN, model_facts
from workbench.core.training.feature_cache import extract_features

CLASSES = 3


def smallest_crop(model: str) -> int:
    if model == SMALL_CNN:
        return 28
    return max(model_facts(model).min_size, 32)


def constructor_state_dict(model: str) -> dict[str, torch.Tensor]:
    """What a pretrained file of ``model`` holds: its constructor's 1000-class network, with
    BatchNorm statistics of real activations (a fresh MobileNet's or EfficientNet's are not:
    in eval mode its features shrink to 1e-10, too small for any comparison to notice)."""
    torch.manual_seed(1)
    network = SmallCNN(10) if model == SMALL_CNN else torchvision.models.get_model(model)
    batch_norms = [m for m in network.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if batch_norms:
        for batch_norm in batch_norms:
            batch_norm.momentum = None  # the first batch's statistics, exactly
        # 8 images of 64 px: at the test's 32 px the last stages see 1x1 maps, and 4 images'
        # statistics leave channels of near-zero variance that blow up small float differences.
        channels = 1 if model == SMALL_CNN else 3
        with torch.no_grad():
            network.train()(torch.rand(8, channels, 64, 64,
                                       generator=torch.Generator().manual_seed(3)))
    return network.state_dict()


def batch_for(model: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(images, labels) at the model's smallest crop: 2 of them, 1 at 224 px."""
    channels = 1 if model == SMALL_CNN else 3
    crop = smallest_crop(model)
    count = 1 if crop >= 224 else 2
    images = torch.rand(count, channels, crop, crop, generator=torch.Generator().manual_seed(0))
    return images, torch.arange(count) % CLASSES


def penultimate_features(model: nn.Module, images: torch.Tensor
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """(what the model's own head is fed for ``images``, the logits)."""
    seen: list[torch.Tensor] = []
    handle = classifier_head(model).register_forward_hook(
        lambda _module, inputs, _output: seen.append(inputs[0].detach()))
    try:
        with torch.no_grad():
            logits = model(images)
    finally:
        handle.remove()
    return seen[0], logits


def train_step(model: nn.Module, finetune: str, images: torch.Tensor,
               labels: torch.Tensor) -> float:
    params = apply_finetune_mode(model, finetune)
    set_train_mode(model, finetune)
    optimiser = torch.optim.SGD(params, lr=0.01)
    loss = nn.functional.cross_entropy(model(images), labels)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
    return float(loss.detach())


@pytest.mark.parametrize("name", MODELS)
def test_every_model_loads_its_weights_trains_and_caches_its_features(
        name: str, tmp_path: Path) -> None:
    weights_file = tmp_path / f"{name}.pth"
    source = constructor_state_dict(name)
    torch.save(source, weights_file)
    messages: list[tuple[str, str]] = []
    config = TrainConfig(model=name, weights="file", weights_file=str(weights_file),
                         finetune="last_layer")

    model = build_model(config, CLASSES, report=lambda *message: messages.append(message))

    # The file's backbone is loaded; its 1000-class head is skipped for a fresh 3-class one.
    head = classifier_head(model)
    assert head.out_features == CLASSES
    own = model.state_dict()
    head_storage = {head.weight.data_ptr(), head.bias.data_ptr()}
    head_keys = {key for key in own if own[key].data_ptr() in head_storage}
    assert len(head_keys) == 2
    for key, value in source.items():
        if key not in head_keys:
            assert torch.equal(own[key], value), key
    assert any("head starts fresh" in text for _, text in messages), messages
    assert not [text for level, text in messages if level == "warning"]

    images, labels = batch_for(name)
    backbone_before = {key: value.clone() for key, value in own.items() if key not in head_keys}
    head_before = [param.detach().clone() for param in head.parameters()]
    assert torch.isfinite(torch.tensor(train_step(model, "last_layer", images, labels)))
    assert not all(map(torch.equal, head.parameters(), head_before))  # the head learned ...
    for key, value in model.state_dict().items():  # ... and nothing else moved
        if key in backbone_before and value.is_floating_point():
            assert torch.equal(value, backbone_before[key]), key
    # The frozen backbone's cached features are what the head is fed, and the head turns them
    # into the logits (checked before full fine-tuning: one step of a random network at a
    # batch of 2 leaves BatchNorm statistics that overflow in eval mode).
    model.eval()
    backbone, cache_head = split_backbone_head(model)
    cached = extract_features(backbone, [(images, labels)],
                              lambda inputs, labels: (inputs, labels), 1,
                              lambda: contextlib.nullcontext(), RunControl(), "cpu")
    assert cached is not None
    features = cached.features[:, 0]
    penultimate, logits = penultimate_features(model, images)
    torch.testing.assert_close(features, penultimate.flatten(1))
    with torch.no_grad():
        torch.testing.assert_close(cache_head(features), logits)
    # Training the head on those features is training the model: in last-layer training mode
    # its frozen part (dropout beside MobileNet's head too) feeds the head the same.
    set_train_mode(model, "last_layer")
    torch.testing.assert_close(penultimate_features(model, images)[0].flatten(1), features)

    # Grad-CAM reads feature maps with a grid (ViT's tokens laid back on theirs, the image
    # resized to its square): the map covers the whole image and varies over it.
    photo = torch.rand(1, images.shape[1], 64, 96, generator=torch.Generator().manual_seed(2))
    cam, _, _ = class_activation_map(model, photo)
    assert tuple(cam.shape) == (64, 96)
    assert float(cam.max()) == 1.0 and float(cam.std()) > 0.01

    assert torch.isfinite(torch.tensor(train_step(model, "full", images, labels)))
    moved = [key for key, value in model.state_dict().items()
             if key in backbone_before and not torch.equal(value, backbone_before[key])]
    assert len(moved) > len(backbone_before) // 4


def test_an_unknown_model_name_lists_the_choices() -> None:
    config = TrainConfig(model="resnet19", data_root=".", weights="none")
    problems = config.validate(check_paths=False)
    assert any("Model (model): 'resnet19' is not one of" in p and "convnext_tiny" in p
               and "small_cnn" in p for p in problems), problems
    with pytest.raises(ValueError, match="unknown model 'resnet19'; choose one of") as info:
        build_model(config, CLASSES)
    assert "vit_b_16" in str(info.value) and "mobilenet_v3_small" in str(info.value)


def test_another_architectures_weights_file_names_the_mismatched_layers(
        tmp_path: Path) -> None:
    path = tmp_path / "mobilenet_v3_small.pth"
    torch.save(torchvision.models.mobilenet_v3_small(weights=None).state_dict(), path)
    config = TrainConfig(model="mobilenet_v3_large", weights="file", weights_file=str(path))

    with pytest.raises(WeightsError, match="saved from another architecture") as info:
        build_model(config, CLASSES)

    message = str(info.value)
    assert str(path) in message
    # The first block that differs, by layer name, with both shapes; every tensor of a layer
    # counts once (a BatchNorm has four).
    assert "features.2.block.0.0 (file (72, 16, 1, 1), model (64, 16, 1, 1))" in message
    assert "56 layer(s) have other shapes than in this MobileNetV3" in message


@pytest.fixture()
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty torch hub folder; downloads go to a port of 127.0.0.1 where nothing listens."""
    monkeypatch.setattr(torch.hub, "_hub_dir", str(tmp_path / "hub"))
    real_url = building.imagenet_weights_url
    monkeypatch.setattr(building, "imagenet_weights_url",
                        lambda model="resnet18": "http://127.0.0.1:9/"
                                                 + real_url(model).rsplit("/", 1)[1])
    return tmp_path / "hub"


def test_imagenet_weights_of_each_model_load_from_its_own_file(offline_hub: Path) -> None:
    expected = offline_hub / "checkpoints" / "mobilenet_v3_small-047dcff4.pth"
    assert building.imagenet_weights_path("mobilenet_v3_small") == expected
    expected.parent.mkdir(parents=True)
    source = constructor_state_dict("mobilenet_v3_small")
    torch.save(source, expected)
    messages: list[tuple[str, str]] = []

    model = build_model(TrainConfig(model="mobilenet_v3_small", weights="imagenet"), CLASSES,
                        report=lambda *message: messages.append(message))

    assert classifier_head(model).out_features == CLASSES
    torch.testing.assert_close(model.features[5].block[0][0].weight,
                               source["features.5.block.0.0.weight"])
    assert any(str(expected) in text for _, text in messages)


def test_imagenet_weights_offline_name_the_models_file_and_folder(offline_hub: Path) -> None:
    with pytest.raises(WeightsError) as info:
        build_model(TrainConfig(model="efficientnet_b0", weights="imagenet"), CLASSES)
    message = str(info.value)
    assert "ImageNet weights for efficientnet_b0 are not on this computer" in message
    assert "'efficientnet_b0_rwightman-7f5810bc.pth'" in message
    assert str(offline_hub / "checkpoints") in message
    assert "'none'" in message and "'file'" in message
