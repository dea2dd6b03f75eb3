"""Every model family exports both ways, verified, with its class names and preprocessing.

Each family is built by torchvision's own class at a tiny width (the catalogue's networks
take minutes to export on a CPU; ``python -m workbench.bench.export_families`` exports those),
and all the files are checked by one ``FreshProcessVerifier``: one child interpreter instead
of one a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torchvision.models.convnext import CNBlockConfig, ConvNeXt
from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig
from torchvision.models.mobilenetv3 import InvertedResidualConfig, MobileNetV3
from torchvision.models.regnet import BlockParams, RegNet
from torchvision.models.shufflenetv2 import ShuffleNetV2
from torchvision.models.swin_transformer import SwinTransformer
from torchvision.models.vision_transformer import VisionTransformer

from workbench.core.models.export import (
    ExportError,
    ExportResult,
    export_torchscript,
    load_exported,
)
from workbench.core.models.export_files import FreshProcessVerifier
from workbench.core.models.onnx_export import export_onnx, load_onnx_export
from workbench.core.runs.config import TrainConfig

CLASSES = ["ant", "bee", "cicada"]
# ImageNet's statistics, written out here rather than read from the code under test.
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def _mobilenet_v3() -> nn.Module:
    block = partial(InvertedResidualConfig, width_mult=1.0)
    return MobileNetV3([block(8, 3, 8, 8, True, "RE", 2, 1),
                        block(8, 3, 16, 16, False, "HS", 2, 1)], last_channel=32,
                       num_classes=len(CLASSES))


def _efficientnet() -> nn.Module:
    return EfficientNet([MBConvConfig(1, 3, 1, 8, 8, 1), MBConvConfig(4, 3, 2, 8, 16, 1)],
                        dropout=0.2, num_classes=len(CLASSES))


def _efficientnet_v2() -> nn.Module:
    return EfficientNet([FusedMBConvConfig(1, 3, 1, 8, 8, 1),
                         FusedMBConvConfig(2, 3, 2, 8, 16, 1), MBConvConfig(2, 3, 2, 16, 16, 1)],
                        dropout=0.2, num_classes=len(CLASSES), last_channel=32)


def _regnet() -> nn.Module:
    params = BlockParams(depths=[1, 1], widths=[8, 16], group_widths=[8, 8],
                         bottleneck_multipliers=[1.0, 1.0], strides=[2, 2], se_ratio=0.25)
    return RegNet(params, stem_width=8, num_classes=len(CLASSES))


def _shufflenet_v2() -> nn.Module:
    return ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 64], num_classes=len(CLASSES))


def _convnext() -> nn.Module:
    return ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, None, 1)],
                    stochastic_depth_prob=0.0, num_classes=len(CLASSES))


def _swin() -> nn.Module:
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[1, 2],
                           window_size=[7, 7], num_classes=len(CLASSES))


def _vit() -> nn.Module:
    return VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2,
                             hidden_dim=16, mlp_dim=32, num_classes=len(CLASSES))


# family: (a catalogue model of the family, the tiny network, crop size); ResNet18 itself is
# exported both ways by test_export.py and test_onnx_export.py.
FAMILIES: dict[str, tuple[str, Callable[[], nn.Module], int]] = {
    "mobilenet_v3": ("mobilenet_v3_small", _mobilenet_v3, 32),
    "efficientnet": ("efficientnet_b0", _efficientnet, 32),
    "efficientnet_v2": ("efficientnet_v2_s", _efficientnet_v2, 32),
    "regnet": ("regnet_y_400mf", _regnet, 32),
    "shufflenet_v2": ("shufflenet_v2_x1_0", _shufflenet_v2, 32),
    "convnext": ("convnext_tiny", _convnext, 32),
    "swin": ("swin_t", _swin, 56),
    "vit": ("vit_b_16", _vit, 32),
}


@dataclass
class FamilyExport:
    model: nn.Module
    config: TrainConfig
    torchscript: ExportResult
    onnx: ExportResult


def _trained_looking(build: Callable[[], nn.Module]) -> nn.Module:
    """The network with random BatchNorm statistics, so that eval mode is not the identity,
    and random Linear layers of unit gain (ViT's head starts at zero, MobileNet's at 0.01),
    so that its logits differ from image to image by far more than the tolerance."""
    torch.manual_seed(0)
    model = build()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
        elif isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=module.in_features ** -0.5)
            if module.bias is not None:
                nn.init.uniform_(module.bias, -0.1, 0.1)
    return model.eval()


@pytest.fixture(scope="module")
def verifier() -> FreshProcessVerifier:
    with FreshProcessVerifier() as shared:
        yield shared


class _Exports(dict):
    """Each family exported both ways on first use (so ``-k`` runs export only theirs), all
    checked by the one verifier."""

    def __init__(self, folder: Path, verifier: FreshProcessVerifier) -> None:
        super().__init__()
        self.folder, self.verifier = folder, verifier

    def __missing__(self, family: str) -> FamilyExport:
        name, build, crop = FAMILIES[family]
        model = _trained_looking(build)
        # Bicubic, not the default, so that a file carrying the default would be caught.
        config = TrainConfig(model=name, weights="none", crop_mode="standard",
                             resize_size=crop + 8, crop_size=crop, interpolation="bicubic")
        self[family] = FamilyExport(
            model, config,
            export_torchscript(model, CLASSES, config, self.folder / f"{family}.pt",
                               verifier=self.verifier),
            export_onnx(model, CLASSES, config, self.folder / f"{family}.onnx",
                        verifier=self.verifier))
        return self[family]


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory, verifier: FreshProcessVerifier
            ) -> dict[str, FamilyExport]:
    return _Exports(tmp_path_factory.mktemp("families"), verifier)


def _expected_logits(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """The eager network on the images normalised here, by hand."""
    mean, std = torch.tensor(MEAN).view(1, 3, 1, 1), torch.tensor(STD).view(1, 3, 1, 1)
    with torch.no_grad():
        logits = model((images.float() / 255 - mean) / std)
    # A comparison within 1e-4 means something only if the logits are far larger.
    assert logits.abs().max() > 1e-2
    return logits


def _new_images(crop: int) -> torch.Tensor:
    """A dark, a middling and a bright image, each with noise of its own."""
    noise = torch.randint(-40, 41, (3, 3, crop, crop), generator=torch.Generator().manual_seed(7))
    return (torch.tensor([50, 128, 205]).view(3, 1, 1, 1) + noise).to(torch.uint8)


@pytest.mark.parametrize("family", FAMILIES)
def test_torchscript_export_of_each_family_is_scripted_verified_and_self_describing(
        family: str, exports: dict[str, FamilyExport]) -> None:
    done = exports[family]
    result = done.torchscript
    assert result.method == "script"
    assert result.verification.startswith("TorchScript, scripted; max |difference| from the "
                                          "trained model: ")
    assert 0.0 <= result.max_abs_diff <= 1e-4
    assert 0.0 <= result.subprocess_max_abs_diff <= 1e-4
    exported = load_exported(result.path)
    assert exported.class_names == CLASSES
    info = exported.preprocessing
    assert info["model"] == done.config.model and info["export_method"] == "script"
    assert (info["resize_size"], info["crop_size"], info["interpolation"]) == (
        done.config.resize_size, done.config.crop_size, "bicubic")
    assert info["mean"] == pytest.approx(MEAN) and info["std"] == pytest.approx(STD)
    images = _new_images(done.config.crop_size)
    with torch.no_grad():
        logits = exported.module(images)
    torch.testing.assert_close(logits, _expected_logits(done.model, images), atol=1e-4, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_onnx_export_of_each_family_is_verified_and_self_describing(
        family: str, exports: dict[str, FamilyExport]) -> None:
    done = exports[family]
    result = done.onnx
    assert result.verification.startswith("ONNX opset 18; max |difference| from the trained "
                                          "model: ")
    assert " with onnxruntime in a fresh process, within tolerance " in result.verification
    assert result.verification.endswith("; top class agrees on 3 of 3 images")
    assert 0.0 <= result.subprocess_max_abs_diff <= 1e-4
    exported = load_onnx_export(result.path)
    assert exported.class_names == CLASSES
    info = exported.preprocessing
    assert info["model"] == done.config.model and info["opset"] == 18
    assert (info["resize_size"], info["crop_size"], info["interpolation"]) == (
        done.config.resize_size, done.config.crop_size, "bicubic")
    assert info["mean"] == pytest.approx(MEAN) and info["std"] == pytest.approx(STD)
    images = _new_images(done.config.crop_size)
    logits = exported.module(images)
    np.testing.assert_allclose(logits.numpy(), _expected_logits(done.model, images).numpy(),
                               atol=1e-4, rtol=0)


def test_one_process_checked_every_file(exports: dict[str, FamilyExport],
                                        verifier: FreshProcessVerifier) -> None:
    for family in FAMILIES:
        assert exports[family].onnx.subprocess_max_abs_diff <= 1e-4
    assert verifier.checks == 2 * len(FAMILIES)
    assert verifier.processes_started == 1


def test_the_shared_process_refuses_a_file_that_computes_otherwise(
        flushing_denormals: nn.Module, tmp_path: Path) -> None:
    # This process flushes denormals and the child does not, so the file's logits differ
    # there: the shared check must see it as the one-file check does.
    config = TrainConfig(model="resnet18", weights="none", crop_mode="standard",
                         resize_size=8, crop_size=8)
    with FreshProcessVerifier() as verifier:
        with pytest.raises(ExportError, match="in a fresh Python process"):
            export_torchscript(flushing_denormals, CLASSES, config, tmp_path / "model.pt",
                               verifier=verifier)
    assert not (tmp_path / "model.pt").exists()


def test_a_check_that_kills_the_process_is_reported_and_the_next_starts_a_new_one(
        tmp_path: Path) -> None:
    fine = 'import json, sys; print(json.dumps({"max_abs_diff": float(sys.argv[1])}))'
    with FreshProcessVerifier() as verifier:
        assert verifier.report(fine, ["0.25"], str(tmp_path), "x")["max_abs_diff"] == 0.25
        with pytest.raises(ExportError, match=r"the file does not load \(the checking process "
                                              r"ended with exit code 3\):\nbroken here"):
            # As a crash in a library would: its last words on the process's own stderr.
            verifier.report("import os; os.write(2, b'broken here\\n'); os._exit(3)", [],
                            str(tmp_path), "the file does not load")
        with pytest.raises(ExportError, match=r"(?s)no such model \(exit code 1\):\n.*KeyError"):
            verifier.report("raise KeyError('model')", [], str(tmp_path), "no such model")
        assert verifier.report(fine, ["0.5"], str(tmp_path), "x")["max_abs_diff"] == 0.5
        assert verifier.processes_started == 2
