"""TorchScript export: verified files, their metadata, prediction from them, and bad inputs."""

from __future__ import annotations

import math
import os
import stat
import zipfile
from pathlib import Path

import pytest
import torch
from torch import nn

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.transforms import normalization_for
from workbench.core.models import export as export_module
from workbench.core.models.building import build_model
from workbench.core.models.export import (
    ExportError,
    ExportResult,
    PreprocessingClassifier,
    export_model_file,
    export_torchscript,
    load_exported,
)
from workbench.core.models.prediction import predict_images
from workbench.core.runs.atomic_io import atomic_torch_save
from workbench.core.runs.config import TrainConfig

CLASSES = ["circle", "square", "triangle"]
SMALL_CNN = TrainConfig(model="small_cnn", weights="none", crop_mode="standard",
                        resize_size=32, crop_size=28)
RESNET = TrainConfig(model="resnet18", weights="none", crop_mode="five_crop",
                     resize_size=40, crop_size=32)


def _model(config: TrainConfig) -> nn.Module:
    torch.manual_seed(0)
    return build_model(config, len(CLASSES))


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = write_shape_dataset(tmp_path_factory.mktemp("shapes"), classes=CLASSES, per_class=2,
                               size=(64, 48))
    return sorted(str(path) for path in root.glob("*/*.png"))


@pytest.fixture(scope="module")
def small_cnn_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExportResult, nn.Module]:
    """Exported the way the GUI does it: from the best-model file a run wrote."""
    model = _model(SMALL_CNN)
    folder = tmp_path_factory.mktemp("export")
    atomic_torch_save({
        "format": "workbench-model", "version": 1, "model": model.state_dict(),
        "class_names": CLASSES, "config": SMALL_CNN.to_dict(), "epoch": 4, "val_accuracy": 0.9,
    }, folder / "best.pt")
    return export_model_file(folder / "best.pt", folder / "digits.pt"), model


@pytest.fixture(scope="module")
def resnet_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExportResult, nn.Module]:
    model = _model(RESNET).train()  # export must not depend on (or change) the caller's mode
    path = tmp_path_factory.mktemp("export") / "shapes.pt"
    return export_torchscript(model, CLASSES, RESNET, path), model


@pytest.mark.parametrize("fixture", ["small_cnn_export", "resnet_export"])
def test_export_is_verified_here_and_in_a_fresh_process(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    result, _ = request.getfixturevalue(fixture)
    assert Path(result.path).is_file()
    assert result.method == "script" and result.note == ""
    assert result.verification.startswith("TorchScript, scripted; max |difference| from the ")
    assert 0.0 <= result.max_abs_diff <= 1e-4
    assert 0.0 <= result.subprocess_max_abs_diff <= 1e-4
    assert result.class_names == CLASSES and result.input_size == (28 if "small" in fixture else 32)
    with zipfile.ZipFile(result.path) as archive:
        names = archive.namelist()
    assert any(name.endswith("extra/class_names.json") for name in names)
    assert any(name.endswith("extra/preprocessing.json") for name in names)
    leftovers = [p.name for p in Path(result.path).parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_caller_model_is_left_as_it_was(resnet_export: tuple[ExportResult, nn.Module]) -> None:
    _, model = resnet_export
    assert model.training
    assert model.fc.weight.requires_grad


def test_export_metadata_describes_the_preprocessing(
    resnet_export: tuple[ExportResult, nn.Module]
) -> None:
    result, _ = resnet_export
    exported = load_exported(result.path)
    prep = exported.preprocessing
    mean, std = normalization_for(RESNET)
    assert exported.class_names == CLASSES
    assert prep["mean"] == list(mean) and prep["std"] == list(std)
    assert (prep["resize_size"], prep["crop_size"], prep["crop_mode"]) == (40, 32, "five_crop")
    assert prep["in_channels"] == 3 and prep["model"] == "resnet18"
    assert prep["input_dtypes"] == ["uint8", "float32"]
    assert prep["torch_version"] == torch.__version__


def test_exported_module_normalises_uint8_and_float_input_like_training(
    small_cnn_export: tuple[ExportResult, nn.Module]
) -> None:
    result, model = small_cnn_export
    module = load_exported(result.path).module
    images = torch.randint(0, 256, (3, 1, 28, 28), dtype=torch.uint8)
    mean, std = normalization_for(SMALL_CNN)
    normalised = (images.float() / 255 - mean[0]) / std[0]
    with torch.no_grad():
        want = model.eval()(normalised)
        torch.testing.assert_close(module(images), want, rtol=0, atol=1e-4)
        torch.testing.assert_close(module(images.float() / 255), want, rtol=0, atol=1e-4)
        assert module(images[0]).shape == (1, 3)  # a single [C,H,W] image is accepted
        with pytest.raises(torch.jit.Error, match="channel"):
            module(torch.zeros(1, 3, 28, 28, dtype=torch.uint8))


def test_predict_images_gives_probabilities_with_class_names(
    resnet_export: tuple[ExportResult, nn.Module], images: list[str]
) -> None:
    result, _ = resnet_export
    predictions = predict_images(result.path, images, topk=3)
    assert [p.path for p in predictions] == images
    for prediction in predictions:
        assert prediction.error == ""
        names = [name for name, _ in prediction.top]
        probabilities = [p for _, p in prediction.top]
        assert sorted(names) == sorted(CLASSES)
        assert math.isclose(sum(probabilities), 1.0, abs_tol=1e-5)
        assert probabilities == sorted(probabilities, reverse=True)


def test_predict_images_reports_a_bad_image_and_goes_on(
    small_cnn_export: tuple[ExportResult, nn.Module], images: list[str], tmp_path: Path
) -> None:
    result, _ = small_cnn_export
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png at all")
    paths = [images[0], str(broken), images[1], str(tmp_path / "absent.png")]

    predictions = predict_images(result.path, paths, topk=2)

    assert [p.path for p in predictions] == paths
    assert predictions[1].top == [] and "cannot read image" in predictions[1].error
    assert predictions[3].top == [] and predictions[3].error
    for good in (predictions[0], predictions[2]):
        assert good.error == "" and len(good.top) == 2
        assert {name for name, _ in good.top} <= set(CLASSES)


def test_a_mismatch_after_reloading_fails_the_export_and_keeps_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = export_module._eager_outputs

    def shifted(*args: object, **kwargs: object) -> dict[str, torch.Tensor]:
        return {name: out + 1.0 for name, out in real(*args, **kwargs).items()}

    monkeypatch.setattr(export_module, "_eager_outputs", shifted)
    target = tmp_path / "model.pt"
    with pytest.raises(ExportError, match=r"difference 1 > tolerance ") as info:
        export_torchscript(_model(SMALL_CNN), CLASSES, SMALL_CNN, target)
    assert str(target) in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_class_names_must_match_the_model_outputs(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="3 outputs but 2 class names"):
        export_torchscript(_model(SMALL_CNN), CLASSES[:2], SMALL_CNN, tmp_path / "m.pt")


class _NotScriptable(nn.Module):
    """A model TorchScript cannot compile (variadic forward), so export falls back to tracing."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(1, len(CLASSES))

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.fc(inputs[0].mean(dim=(2, 3)))


def test_unscriptable_model_is_traced_and_reported(tmp_path: Path) -> None:
    config = SMALL_CNN.replace(crop_size=16, resize_size=16)
    # A trace bakes the input checks in as constants, and torch says so.
    with pytest.warns(torch.jit.TracerWarning):
        result = export_torchscript(_NotScriptable(), CLASSES, config, tmp_path / "traced.pt")
    assert result.method == "trace"
    assert "torch.jit.script failed" in result.note
    assert result.verification.startswith("TorchScript, traced (torch.jit.script failed (")
    assert "uint8 input only" in result.verification
    assert result.max_abs_diff <= 1e-4 and result.subprocess_max_abs_diff <= 1e-4
    assert load_exported(result.path).preprocessing["input_dtypes"] == ["uint8"]


@pytest.mark.parametrize("content", [None, b"", b"PK\x03\x04 truncated zip"])
def test_export_model_file_of_a_missing_or_corrupt_file(tmp_path: Path, content: bytes | None
                                                        ) -> None:
    source = tmp_path / "best.pt"
    if content is not None:
        source.write_bytes(content)
    with pytest.raises(ExportError, match="cannot export") as info:
        export_model_file(source, tmp_path / "out.pt")
    assert str(source) in str(info.value)
    assert not (tmp_path / "out.pt").exists()


@pytest.mark.filterwarnings(r"ignore:`torch\.jit\.\w+` is deprecated:FutureWarning")
def test_load_exported_refuses_missing_foreign_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="missing"):
        load_exported(tmp_path / "absent.pt")
    foreign = tmp_path / "foreign.pt"
    scripted = torch.jit.script(PreprocessingClassifier(nn.Identity(), [0.5], [0.5]))
    scripted.save(str(foreign))
    with pytest.raises(ExportError, match="not a workbench export"):
        load_exported(foreign)
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"\x00" * 64)
    with pytest.raises(ExportError, match="not a TorchScript file"):
        load_exported(corrupt)
    with pytest.raises(ExportError, match="not a TorchScript file"):
        predict_images(corrupt, [])


def test_a_model_that_computes_otherwise_in_a_fresh_process_fails_the_export(
    tmp_path: Path, flushing_denormals: nn.Module,
) -> None:
    # A real mismatch: this process flushes denormals, a fresh one does not, so the eager
    # model and the file reloaded here agree (zeros) and only the fresh process differs.
    target = tmp_path / "model.pt"
    with pytest.raises(ExportError, match="in a fresh Python process") as info:
        export_torchscript(flushing_denormals, CLASSES, SMALL_CNN, target)
    assert str(target) in str(info.value)
    assert not target.exists()


@pytest.mark.skipif(os.name != "posix", reason="umask is POSIX")
def test_the_export_file_follows_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        result = export_torchscript(_model(SMALL_CNN), CLASSES, SMALL_CNN, tmp_path / "m.pt")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(Path(result.path).stat().st_mode) == 0o644
