"""The ONNX exporter by known answer: which images verify the file (seeded, so the figures of
the check are the ones this test computes itself), what the result and the file say, which
fresh process checks it, and the exact refusals.

Each export is of a small CNN (3 classes, 28 px) and checks its file in a fresh process: a few
seconds a test.
"""

from __future__ import annotations

import json
import time

import onnx
import pytest
import torch

from workbench.core.data.transforms import normalization_for
from workbench.core.models.building import build_model
from workbench.core.models.export import ExportError
from workbench.core.models.export_files import FreshProcessVerifier
from workbench.core.models.onnx_export import OPSET, UInt8Classifier, export_onnx
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
