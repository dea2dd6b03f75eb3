"""build_model, fine-tune modes, backbone/head split and weight loading, on real tiny models."""

from __future__ import annotations

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
    imagenet_weights_path,
    set_train_mode,
)
from workbench.core.models.heads import split_backbone_head
from workbench.core.runs.config import TrainConfig


class ArbitraryObject:
    """Something a safe (weights_only) load must refuse."""

    def __init__(self) -> None:
        self.payload = [1, 2, 3]


def _config(**changes: object) -> TrainConfig:
    base = TrainConfig(model="resnet18", weights="none", finetune="last_layer")
    return base.replace(**changes)


def _collect() -> tuple[list[tuple[str, str]], object]:
    messages: list[tuple[str, str]] = []
    return messages, lambda level, text: messages.append((level, text))


def _bn_stats(model: nn.Module) -> list[torch.Tensor]:
    return [
        buffer.clone()
        for module in model.modules() if isinstance(module, nn.BatchNorm2d)
        for buffer in (module.running_mean, module.running_var)
    ]


@pytest.fixture()
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty torch hub folder, and the weights' URL on a port of 127.0.0.1 where nothing
    listens (port 9), so the download is refused as it is offline."""
    # Same effect as torch.hub.set_dir, undone by monkeypatch after the test.
    monkeypatch.setattr(torch.hub, "_hub_dir", str(tmp_path / "hub"))
    file_name = building.imagenet_weights_url().rsplit("/", 1)[1]
    monkeypatch.setattr(building, "imagenet_weights_url",
                        lambda _model="resnet18": f"http://127.0.0.1:9/{file_name}")
    return tmp_path / "hub"


def test_build_both_models_with_head_sized_to_classes() -> None:
    resnet = build_model(_config(), num_classes=5).eval()
    assert isinstance(resnet, torchvision.models.ResNet)
    assert resnet.fc.out_features == 5
    assert resnet(torch.rand(2, 3, 64, 64)).shape == (2, 5)

    cnn = build_model(_config(model="small_cnn"), num_classes=7).eval()
    assert isinstance(cnn, SmallCNN)
    for size in (16, 28, 45):
        x = torch.rand(3, 1, size, size)
        assert cnn(x).shape == (3, 7)
        assert cnn.features(x).shape == (3, 128)


def test_last_layer_trains_only_the_head_and_freezes_batchnorm_stats() -> None:
    model = build_model(_config(finetune="last_layer"), num_classes=3)
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"fc.weight", "fc.bias"}
    params = apply_finetune_mode(model, "last_layer")
    assert {id(p) for p in params} == {id(model.fc.weight), id(model.fc.bias)}

    before = _bn_stats(model)
    set_train_mode(model, "last_layer")
    assert model.fc.training and not model.layer1.training and not model.bn1.training
    loss = model(torch.rand(4, 3, 32, 32)).sum()
    loss.backward()
    for old, new in zip(before, _bn_stats(model), strict=True):
        assert torch.equal(old, new)
    assert model.fc.weight.grad is not None
    assert model.conv1.weight.grad is None


def test_last_layer_turns_backbone_dropout_off_and_full_mode_on() -> None:
    model = build_model(_config(model="small_cnn", finetune="last_layer"), num_classes=4)
    x = torch.rand(8, 1, 28, 28)
    set_train_mode(model, "last_layer")
    assert torch.equal(model(x), model(x))  # no dropout, no batch statistics in the backbone
    set_train_mode(model, "full")
    assert all(module.training for module in model.modules())
    assert not torch.equal(model(x), model(x))  # dropout is active again


def test_full_trains_everything_and_updates_batchnorm_stats() -> None:
    model = build_model(_config(model="small_cnn", finetune="full"), num_classes=3)
    params = apply_finetune_mode(model, "full")
    assert len(params) == len(list(model.parameters()))
    assert all(p.requires_grad for p in model.parameters())
    before = _bn_stats(model)
    set_train_mode(model, "full")
    model(torch.rand(4, 1, 28, 28)).sum().backward()
    assert not torch.equal(before[0], _bn_stats(model)[0])
    assert all(p.grad is not None for p in model.parameters())


def test_unknown_finetune_mode_is_refused() -> None:
    model = SmallCNN(3)
    with pytest.raises(ValueError, match="finetune"):
        apply_finetune_mode(model, "half")
    with pytest.raises(ValueError, match="finetune"):
        set_train_mode(model, "half")


@pytest.mark.parametrize(
    ("model_name", "shape", "features"),
    [("resnet18", (3, 3, 48, 48), 512), ("small_cnn", (3, 1, 28, 28), 128)],
)
def test_split_backbone_head_equals_model_and_shares_weights(
    model_name: str, shape: tuple[int, ...], features: int
) -> None:
    model = build_model(_config(model=model_name), num_classes=6).eval()
    backbone, head = split_backbone_head(model)
    x = torch.rand(shape)
    with torch.no_grad():
        feats = backbone(x)
        assert feats.shape == (shape[0], features)
        torch.testing.assert_close(head(feats), model(x), rtol=0, atol=1e-6)
    model_params = {id(p) for p in model.parameters()}
    assert {id(p) for p in backbone.parameters()} <= model_params
    assert head is model.fc
    with torch.no_grad():  # a change through the model shows in the backbone: nothing was copied
        next(model.parameters()).add_(1.0)
        torch.testing.assert_close(head(backbone(x)), model(x), rtol=1e-5, atol=1e-5)


def test_weights_file_with_1000_classes_gets_a_fresh_3_class_head(tmp_path: Path) -> None:
    source = torchvision.models.resnet18(weights=None)
    path = tmp_path / "imagenet_like.pth"
    torch.save(source.state_dict(), path)
    messages, report = _collect()

    model = build_model(_config(weights="file", weights_file=str(path)), 3, report=report)

    assert model.fc.out_features == 3
    for key, value in source.state_dict().items():
        if not key.startswith("fc."):
            assert torch.equal(model.state_dict()[key], value), key
    skipped = [text for level, text in messages if "fc.weight" in text]
    assert skipped and "1000 classes" in skipped[0] and "has 3" in skipped[0]
    assert "head starts fresh" in skipped[0]
    assert not [text for level, text in messages if level == "warning"]


def test_weights_file_accepts_wrapped_and_prefixed_state_dicts(tmp_path: Path) -> None:
    source = SmallCNN(4)
    wrapped = {"state_dict": {f"module.{k}": v for k, v in source.state_dict().items()}}
    path = tmp_path / "wrapped.pt"
    torch.save(wrapped, path)
    messages, report = _collect()
    config = _config(model="small_cnn", weights="file", weights_file=str(path))

    model = build_model(config, 4, report=report)

    for key, value in source.state_dict().items():  # same head size, so fc is loaded too
        assert torch.equal(model.state_dict()[key], value), key
    assert not [text for level, text in messages if level == "warning"]


def test_partial_weights_file_reports_missing_and_unexpected_keys(tmp_path: Path) -> None:
    state = torchvision.models.resnet18(weights=None).state_dict()
    partial = {k: v for k, v in state.items() if not k.startswith("layer4.")}
    partial["extra.weight"] = torch.zeros(2)
    path = tmp_path / "partial.pt"
    torch.save(partial, path)
    messages, report = _collect()

    build_model(_config(weights="file", weights_file=str(path)), 3, report=report)

    warnings = [text for level, text in messages if level == "warning"]
    assert any("layer4.0.conv1.weight" in text and "random start" in text for text in warnings)
    assert any("extra.weight" in text for text in warnings)


def test_garbage_weights_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "garbage.pth"
    path.write_bytes(b"this is not a checkpoint" * 50)
    with pytest.raises(WeightsError, match="garbage.pth") as info:
        build_model(_config(weights="file", weights_file=str(path)), 3)
    assert "corrupt" in str(info.value)


def test_pickle_with_arbitrary_objects_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "unsafe.pt"
    torch.save({"model": ArbitraryObject()}, path)
    with pytest.raises(WeightsError, match="unsafe.pt") as info:
        build_model(_config(weights="file", weights_file=str(path)), 3)
    assert "weights_only" in str(info.value)


@pytest.mark.parametrize(
    ("content", "reason"),
    [([1, 2, 3], "not a state dict"), ({"a": 1}, "no named tensors")],
)
def test_weights_file_that_is_not_a_state_dict(
    tmp_path: Path, content: object, reason: str
) -> None:
    path = tmp_path / "odd.pt"
    torch.save(content, path)
    with pytest.raises(WeightsError, match=reason) as info:
        build_model(_config(weights="file", weights_file=str(path)), 3)
    assert str(path) in str(info.value)


def test_weights_of_another_model_match_nothing(tmp_path: Path) -> None:
    path = tmp_path / "small_cnn.pt"
    torch.save(SmallCNN(3).state_dict(), path)
    with pytest.raises(WeightsError, match="matches no layer") as info:
        build_model(_config(weights="file", weights_file=str(path)), 3)
    assert str(path) in str(info.value)


def test_missing_weights_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.pt"
    with pytest.raises(WeightsError, match="does not exist"):
        build_model(_config(weights="file", weights_file=str(path)), 3)


def test_imagenet_weights_offline_names_cache_folder_and_file(offline_hub: Path) -> None:
    expected = offline_hub / "checkpoints" / "resnet18-f37072fd.pth"
    assert imagenet_weights_path() == expected
    with pytest.raises(WeightsError) as info:
        build_model(_config(weights="imagenet"), 3)
    message = str(info.value)
    assert str(offline_hub / "checkpoints") in message
    assert "resnet18-f37072fd.pth" in message
    assert "'none'" in message and "'file'" in message
    assert not expected.exists() and list(expected.parent.iterdir()) == []


def test_imagenet_weights_already_in_cache_load_offline(offline_hub: Path) -> None:
    source = torchvision.models.resnet18(weights=None)
    imagenet_weights_path().parent.mkdir(parents=True)
    torch.save(source.state_dict(), imagenet_weights_path())
    messages, report = _collect()

    model = build_model(_config(weights="imagenet"), 11, report=report)

    assert model.fc.out_features == 11
    torch.testing.assert_close(model.layer4[1].conv2.weight, source.layer4[1].conv2.weight)
    assert any(str(imagenet_weights_path()) in text for _, text in messages)


def test_corrupt_cached_imagenet_file_says_what_to_do(offline_hub: Path) -> None:
    imagenet_weights_path().parent.mkdir(parents=True)
    imagenet_weights_path().write_bytes(b"\x00" * 100)
    with pytest.raises(WeightsError, match="delete it"):
        build_model(_config(weights="imagenet"), 3)


def test_small_cnn_has_no_imagenet_weights() -> None:
    with pytest.raises(WeightsError, match="small_cnn"):
        build_model(_config(model="small_cnn", weights="imagenet"), 3)
