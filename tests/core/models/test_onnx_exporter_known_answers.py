"""The ONNX exporter by known answer: which images verify the file (seeded, so the figures of
the check are the ones this test computes itself), what the result and the file say, which
fresh process checks it, and the exact refusals.

Each export is of a small CNN (3 classes, 28 px) and checks its file in a fresh process: a few
seconds a test.
"""

from __future__ import annotations

import json
import sys
import time

import onnx
import pytest
import torch

from workbench.core.data.transforms import normalization_for
from workbench.core.models.building import build_model
from workbench.core.models.export import ExportError
from workbench.core.models.export_files import FreshProcessVerifier
from workbench.core.models.onnx_export import (
    OPSET,
    UInt8Classifier,
    _fresh_process_diff,
    export_onnx,
)
from workbench.core.runs.config import TrainConfig

CONFIG = TrainConfig(model="small_cnn", weights="none", resize_size=32, crop_size=28)
CLASSES = ["cat", "dog", "fox"]


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(CONFIG, len(CLASSES)).eval()


def _verification_logits(model: torch.nn.Module) -> torch.Tensor:
    """What the export is checked against: 3 images of uint8 noise drawn from a generator
    seeded with 0, over the full range 0..255, through the model with its preprocessing."""
    mean, std = normalization_for(CONFIG)
    images = torch.randint(0, 256, (3, 1, 28, 28), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return UInt8Classifier(model, mean, std).eval()(images)


def test_the_result_and_the_file_say_what_was_exported_and_checked(tmp_path):
    model = _model()
    target = tmp_path / "model.onnx"
    before = time.perf_counter()
    with FreshProcessVerifier() as verifier:
        result = export_onnx(model, CLASSES, CONFIG, target, verifier=verifier)
        assert verifier.checks == 1  # the shared process given checked the file
    took = time.perf_counter() - before

    assert (result.path, result.max_abs_diff, result.class_names, result.input_size) == (
        str(target), None, CLASSES, 28)
    assert 0 < result.seconds <= took
    assert (result.method, result.note) == (
        f"onnx opset {OPSET}", "checked with onnxruntime in a fresh Python process")
    # The check's figures are those of the seeded verification images.
    expected = _verification_logits(model)
    assert result.check.largest_logit == pytest.approx(float(expected.abs().max()), rel=1e-6)
    assert result.check.tolerance == pytest.approx(5e-4 * max(1.0, result.check.largest_logit))
    assert result.check.max_abs_diff == result.subprocess_max_abs_diff <= result.check.tolerance
    # The file: the opset it says, the classes and the preprocessing a reader needs.
    written = onnx.load(str(target))
    assert [entry.version for entry in written.opset_import if entry.domain == ""] == [OPSET]
    # What a user's own onnxruntime code feeds and reads: uint8 'images' of any batch size,
    # 'logits' out.
    (given,), (out,) = written.graph.input, written.graph.output
    assert (given.name, out.name) == ("images", "logits")
    assert given.type.tensor_type.shape.dim[0].dim_param == "batch"
    metadata = {entry.key: entry.value for entry in written.metadata_props}
    assert json.loads(metadata["class_names"]) == CLASSES
    preprocessing = json.loads(metadata["preprocessing"])
    assert (preprocessing["num_classes"], preprocessing["in_channels"],
            preprocessing["crop_size"], preprocessing["opset"]) == (3, 1, 28, OPSET)


def test_a_second_export_of_the_same_model_gets_the_same_figures(tmp_path):
    model = _model()
    first = export_onnx(model, CLASSES, CONFIG, tmp_path / "a.onnx")
    second = export_onnx(model, CLASSES, CONFIG, tmp_path / "b.onnx")
    assert second.subprocess_max_abs_diff == first.subprocess_max_abs_diff
    assert second.check.largest_logit == first.check.largest_logit


def test_more_or_fewer_class_names_than_outputs_are_refused_before_exporting(tmp_path):
    target = tmp_path / "model.onnx"
    with pytest.raises(ExportError) as info:
        export_onnx(_model(), ["cat", "dog"], CONFIG, target)
    assert str(info.value) == "the model has 3 outputs but 2 class names were given"
    # Four outputs (not the 3 verification images) against three names.
    with pytest.raises(ExportError) as info:
        export_onnx(build_model(CONFIG, 4).eval(), CLASSES, CONFIG, target)
    assert str(info.value) == "the model has 4 outputs but 3 class names were given"
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_computes_otherwise_is_refused_naming_where_it_was_checked(
        tmp_path, flushing_denormals):
    target = tmp_path / "model.onnx"
    with pytest.raises(ExportError) as info:
        export_onnx(flushing_denormals, ["a", "b", "c"], CONFIG, target)
    said = str(info.value)
    assert said.startswith(f"export to '{target}' differs from the trained model in "
                           "onnxruntime in a fresh Python process: max abs logit difference ")
    assert said.endswith("; the file was not written")


def test_missing_onnx_packages_are_named_with_the_install_command(tmp_path, monkeypatch):
    # A module whose entry in sys.modules is None cannot be imported: as if not installed.
    monkeypatch.setitem(sys.modules, "onnxscript", None)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ExportError) as info:
        export_onnx(_model(), CLASSES, CONFIG, tmp_path / "model.onnx")
    assert str(info.value) == ("ONNX export needs onnxscript, onnxruntime: pip install "
                               "'workbench[onnx]' (or pip install onnx onnxscript onnxruntime)")
    assert list(tmp_path.iterdir()) == []


class _DataDependent(torch.nn.Module):
    """Runs eagerly, but branches on a pixel's value, which an exported graph cannot."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        pooled = images.mean(dim=(2, 3)).repeat(1, 3)
        if pooled.sum() > 0:
            return pooled
        return -pooled


def test_an_exporter_failure_is_named_with_its_kind_and_first_line(tmp_path):
    with pytest.raises(ExportError) as info:
        export_onnx(_DataDependent(), CLASSES, CONFIG, tmp_path / "model.onnx")
    cause = info.value.__cause__
    first_line = str(cause).strip().splitlines()[0]
    assert first_line and "\n" not in first_line
    assert str(info.value) == f"torch.onnx.export failed: {type(cause).__name__}: {first_line}"
    assert list(tmp_path.iterdir()) == []


def test_an_exporter_failure_without_a_message_still_names_its_kind(tmp_path, monkeypatch):
    def fails(*args, **kwargs):
        raise RuntimeError("")

    monkeypatch.setattr(torch.onnx, "export", fails)  # what torch's exporter answers
    with pytest.raises(ExportError) as info:
        export_onnx(_model(), CLASSES, CONFIG, tmp_path / "model.onnx")
    assert str(info.value) == "torch.onnx.export failed: RuntimeError: "
    assert list(tmp_path.iterdir()) == []


def test_the_fresh_process_check_names_a_file_it_cannot_run_and_other_classes(tmp_path):
    images = torch.zeros((1, 1, 28, 28), dtype=torch.uint8)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not an onnx file")
    with pytest.raises(ExportError) as info:
        _fresh_process_diff(garbage, images, torch.zeros((1, 3)), CLASSES)
    assert str(info.value).startswith(
        "onnxruntime cannot run the export in a fresh process (exit code 1):\n")
    # A good file whose metadata names other classes than the model's.
    model = _model()
    result = export_onnx(model, CLASSES, CONFIG, tmp_path / "model.onnx")
    expected = _verification_logits(model)[:1]
    with pytest.raises(ExportError) as info:
        _fresh_process_diff(tmp_path / "model.onnx", images, expected, ["a", "b", "c"])
    assert str(info.value) == ("the ONNX file's metadata names other classes: "
                               "['cat', 'dog', 'fox']")
    assert result.class_names == CLASSES
