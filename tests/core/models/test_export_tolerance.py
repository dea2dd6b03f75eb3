"""Export verification that knows float rounding: the tolerance scales with the logits, the
verdict names it, and the predicted classes must agree.

A trained classifier's logits reach tens; float32 rounding in a deep graph grows with them,
so onnxruntime's mobilenet_v3_small at 64 px differs from the eager model by about 2e-4
(measured: 1.8e-4 at logits up to 66), which a fixed 1e-4 refused. The catalogue models
here are the two whose ONNX files the fixed 1e-4 refused at 64 px with trained-sized logits
(mobilenet_v3_small, the reported case, and resnet18); every catalogue model that trains at
64 px is exported both ways by ``python -m workbench.bench.export_families --crop 64
--trained-logits 40`` (docs/export.md has its table): an ONNX export of a catalogue network
takes 10 to 30 s on a 2-core CPU, too long to repeat for all of them in the suite. TorchScript
reproduces the eager model exactly (0.0 on every model measured), so only ONNX is exported.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import workbench.core.models.export as export_module
from workbench.bench.export_families import _set_batchnorm_statistics
from workbench.core.models.building import build_model
from workbench.core.models.export import export_torchscript
from workbench.core.models.export_files import (
    ExportError,
    FreshProcessVerifier,
    check_logits,
)
from workbench.core.models.onnx_export import export_onnx, load_onnx_export
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_catalog import MODEL_NAMES, SMALL_CNN, model_facts

CLASSES = ["ant", "bee", "cicada"]
CROP = 64
# The smallest catalogue model of each family that trains at 64 px (the bench exports these
# and the rest; the suite exports the two the fixed tolerance refused).
SMALLEST_OF_EACH_FAMILY = ("mobilenet_v3_small", "resnet18", "efficientnet_b0",
                           "regnet_y_400mf", "shufflenet_v2_x1_0", "convnext_tiny")
REFUSED_BEFORE = ("mobilenet_v3_small", "resnet18")
TRAINED_LOGIT = 60.0  # the largest |logit| the head is scaled to: a confident trained model
# ImageNet's statistics, written out here rather than read from the code under test.
MEAN = torch.tensor((0.485, 0.456, 0.406)).view(1, 3, 1, 1)
STD = torch.tensor((0.229, 0.224, 0.225)).view(1, 3, 1, 1)


def test_the_tolerance_is_a_share_of_the_largest_logit_with_a_floor_of_one() -> None:
    # Largest |logit| 30: tolerance 5e-4 x 30 = 1.5e-2.
    expected = {"uint8": torch.tensor([[30.0, -2.0, 1.0], [3.0, 20.0, -30.0]])}
    inside = check_logits(expected, 1.4e-2, {"uint8": [0, 1]})
    assert inside.passed and inside.tolerance == pytest.approx(1.5e-2)
    assert inside.tolerance_text == "tolerance 1.5e-02 (0.0005 x the largest |logit|, 30)"
    assert inside.classes_text == "top class agrees on 2 of 2 images"
    assert not check_logits(expected, 1.6e-2, {"uint8": [0, 1]}).passed
    assert not check_logits(expected, float("nan"), {"uint8": [0, 1]}).passed
    # Logits below 1 in size: the tolerance stays 5e-4.
    small = {"uint8": torch.tensor([[0.2, -0.1, 0.05]])}
    assert check_logits(small, 4.9e-4, {"uint8": [0]}).tolerance == pytest.approx(5e-4)
    assert not check_logits(small, 5.1e-4, {"uint8": [0]}).passed


def test_another_top_class_is_refused_unless_the_two_top_logits_tie() -> None:
    expected = {"uint8": torch.tensor([[2.0, 1.0, 0.0], [1.0, 1.00005, 0.0]])}
    # Image 0 flips from class 0 to 1 although every logit is within the tolerance.
    flipped = check_logits(expected, 5e-5, {"uint8": [1, 1]})
    assert not flipped.passed and flipped.agreeing == 1 and flipped.images == 2
    assert "predicts other classes" in flipped.failure(Path("m.onnx"), "here")
    assert "top class agrees on 1 of 2 images" in flipped.failure(Path("m.onnx"), "here")
    # Image 1's top two logits are 5e-5 apart, within 5e-4: a flip there is rounding.
    assert check_logits(expected, 5e-5, {"uint8": [0, 0]}).passed


def test_every_catalogue_model_either_trains_at_64_px_and_is_exported_here_or_refuses_it() -> None:
    for name in MODEL_NAMES:
        if name == SMALL_CNN:
            continue
        problems = TrainConfig(model=name, weights="none", resize_size=CROP + 8,
                               crop_size=CROP).validate()
        trains = not any("crop_size" in problem for problem in problems)
        family = model_facts(name).family
        assert trains == (family not in ("swin", "vit")), (name, problems)
        if trains:
            assert any(model_facts(small).family == family
                       for small in SMALLEST_OF_EACH_FAMILY), name


@pytest.fixture(scope="module")
def verifier() -> FreshProcessVerifier:
    with FreshProcessVerifier() as shared:
        yield shared


def _trained_sized(name: str, images: torch.Tensor) -> tuple[torch.nn.Module, TrainConfig]:
    """The catalogue model (random weights) with BatchNorm statistics of the images exports
    are checked with and its head scaled so that its largest |logit| on ``images`` is
    ``TRAINED_LOGIT``."""
    config = TrainConfig(model=name, weights="none", finetune="full", crop_mode="standard",
                         resize_size=CROP + 8, crop_size=CROP)
    torch.manual_seed(0)
    model = build_model(config, len(CLASSES))
    _set_batchnorm_statistics(model, config)
    head = [layer for layer in model.modules() if isinstance(layer, torch.nn.Linear)][-1]
    with torch.no_grad():
        largest = float(model((images.float() / 255 - MEAN) / STD).abs().max())
        head.weight.mul_(TRAINED_LOGIT / largest)
        head.bias.mul_(TRAINED_LOGIT / largest)
    return model.eval(), config


def _images() -> torch.Tensor:
    """Four images of the test's own: dark, middling, bright, and noise over the range."""
    generator = torch.Generator().manual_seed(11)
    noise = torch.randint(-40, 41, (4, 3, CROP, CROP), generator=generator)
    base = torch.tensor([50, 128, 205, 128]).view(4, 1, 1, 1)
    images = (base + noise).clamp(0, 255)
    images[3] = torch.randint(0, 256, (3, CROP, CROP), generator=generator)
    return images.to(torch.uint8)


@pytest.mark.slow
@pytest.mark.parametrize("name", REFUSED_BEFORE)
def test_a_catalogue_model_at_64_px_with_trained_sized_logits_exports_to_onnx(
        name: str, verifier: FreshProcessVerifier, tmp_path: Path) -> None:
    images = _images()
    model, config = _trained_sized(name, images)
    with torch.no_grad():
        eager = model((images.float() / 255 - MEAN) / STD)
    result = export_onnx(model, CLASSES, config, tmp_path / "model.onnx", verifier=verifier)
    check = result.check
    assert check is not None and check.passed
    assert check.largest_logit > 10  # far past the reach of the old fixed 1e-4
    assert check.tolerance == pytest.approx(5e-4 * check.largest_logit)
    assert check.max_abs_diff <= check.tolerance
    # The verdict names the figure it used.
    assert f"within tolerance {check.tolerance:.1e} (0.0005 x the largest |logit|, " \
        in result.verification
    assert result.verification.endswith(
        f"top class agrees on {check.images} of {check.images} images")
    # On images of the test's own, the file agrees with the eager model as promised.
    logits = load_onnx_export(result.path).module(images)
    assert float((logits - eager).abs().max()) <= 5e-4 * TRAINED_LOGIT
    assert torch.equal(logits.argmax(1), eager.argmax(1))


def test_a_file_that_computes_otherwise_is_still_refused_with_the_figures_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The eager logits the file is held against are shifted by 1 (as a wrong normalisation
    # would shift them): refused at any logit scale, naming the difference and the tolerance.
    real = export_module._eager_outputs

    def shifted(*args: object, **kwargs: object) -> dict[str, torch.Tensor]:
        return {name: logits + 1.0 for name, logits in real(*args, **kwargs).items()}

    monkeypatch.setattr(export_module, "_eager_outputs", shifted)
    config = TrainConfig(model="small_cnn", weights="none", resize_size=32, crop_size=28)
    torch.manual_seed(0)
    model = build_model(config, len(CLASSES)).eval()
    with pytest.raises(ExportError, match=r"max abs logit difference 1 > tolerance "
                                          r"\d\.\de-0\d \(0\.0005 x the largest \|logit\|"):
        export_torchscript(model, CLASSES, config, tmp_path / "model.pt")
    assert list(tmp_path.iterdir()) == []
