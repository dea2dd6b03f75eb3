"""Known answers of the INT8 and float16 files made from a float32 ONNX file.

The float32 file is written by hand (uint8 images -> Cast -> one 4x4 Conv with two output
channels -> logits), so the quantization's ranges are known: the input's range is the
calibration crops' largest value over 255 levels, each output channel's weights get their own
scale (per channel) of |weight| / 127.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.core.models.hand_made_files import save_onnx_graph
from workbench.core.models.export_files import ExportError
from workbench.core.models.export_variants import (
    CALIBRATION_BATCH,
    convert_float16,
    quantize_int8,
)

WEIGHTS = np.stack([np.full((1, 4, 4), 0.01, np.float32), np.full((1, 4, 4), -0.02, np.float32)])
METADATA = {"class_names": json.dumps(["a", "b"]),
            "preprocessing": json.dumps({"format": "workbench-onnx", "crop_size": 4})}


def _float32_file(path: Path, metadata: dict[str, str] = METADATA) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Cast", ["images"], ["x"], to=TensorProto.FLOAT),
         helper.make_node("Conv", ["x", "W"], ["c"]),
         helper.make_node("Flatten", ["c"], ["logits"])],
        "classifier",
        [helper.make_tensor_value_info("images", TensorProto.UINT8, ["N", 1, 4, 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(WEIGHTS, "W")])
    return save_onnx_graph(graph, metadata, path)


def _initializers(path: Path) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}


def _metadata(path: Path) -> dict[str, str]:
    return {p.key: p.value for p in onnx.load(str(path)).metadata_props}


def _logits(path: Path, images: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"images": images})[0]


@pytest.fixture
def int8_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """One quantization for each test (a module-wide one would be reached by its first test
    only), run in its own folder as the working folder, to see that nothing is left there."""
    monkeypatch.chdir(tmp_path)
    source = _float32_file(tmp_path / "float32.onnx")
    # 40 crops: two full batches of 16 and one of 8. The first crop holds the largest pixel
    # (one 255, the rest 0); the last crop the largest sum (every pixel 200); the others 100.
    crops = np.full((40, 1, 4, 4), 100, np.uint8)
    crops[0] = 0
    crops[0, 0, 0, 0] = 255
    crops[39] = 200
    quantize_int8(source, tmp_path / "model_int8.onnx", crops)
    return source, tmp_path / "model_int8.onnx"


def test_int8_is_calibrated_on_every_crop_from_the_first_to_the_last_partial_batch(
        int8_file: tuple[Path, Path]) -> None:
    assert CALIBRATION_BATCH == 16
    values = _initializers(int8_file[1])
    # uint8 activations from 0: the input's scale is its largest calibration value (the first
    # crop's 255) / 255
    assert values["x_scale"] == pytest.approx(255 / 255)
    assert values["x_zero_point"].dtype == np.uint8 and values["x_zero_point"] == 0
    # the Conv's outputs: the last crop's 16 x 200 x (0.01, -0.02) = 32 and -64 at the extremes
    assert values["c_scale"] == pytest.approx((32 + 64) / 255)


def test_int8_weights_are_int8_with_one_scale_per_output_channel(
        int8_file: tuple[Path, Path]) -> None:
    values = _initializers(int8_file[1])
    assert values["W_scale"] == pytest.approx([0.01 / 127, 0.02 / 127])
    assert values["W_zero_point"].dtype == np.int8 and values["W_zero_point"].tolist() == [0, 0]
    assert values["W_quantized"].dtype == np.int8
    assert np.unique(values["W_quantized"][0]).tolist() == [127]
    assert np.unique(values["W_quantized"][1]).tolist() == [-127]
    # QDQ: quantize / dequantize pairs around the float operators, no QLinearConv
    ops = [node.op_type for node in onnx.load(str(int8_file[1])).graph.node]
    assert "Conv" in ops and "QLinearConv" not in ops and "QuantizeLinear" in ops


def test_int8_keeps_the_metadata_and_says_its_variant_and_calibration(
        int8_file: tuple[Path, Path]) -> None:
    metadata = _metadata(int8_file[1])
    assert metadata["class_names"] == METADATA["class_names"]
    assert json.loads(metadata["preprocessing"]) == {
        "format": "workbench-onnx", "crop_size": 4, "variant": "int8",
        "calibration_images": 40}
    assert sorted(metadata) == ["class_names", "preprocessing"]
    # nothing else in the folder, which was the working folder too
    assert sorted(p.name for p in int8_file[1].parent.iterdir()) == ["float32.onnx",
                                                                    "model_int8.onnx"]
    # a crop of 200s: 16 x 200 x 0.01 = 32 and -64, within a step of each output's scale
    logits = _logits(int8_file[1], np.full((1, 1, 4, 4), 200, np.uint8))
    assert logits[0] == pytest.approx([32.0, -64.0], abs=0.5)


def test_float16_halves_the_weights_and_keeps_uint8_in_and_float32_logits_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # nothing is written to or read from the working folder
    source = _float32_file(tmp_path / "float32.onnx")
    convert_float16(source, tmp_path / "model_fp16.onnx")
    model = onnx.load(str(tmp_path / "model_fp16.onnx"))
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.UINT8
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert [i.data_type for i in model.graph.initializer] == [TensorProto.FLOAT16]
    metadata = _metadata(tmp_path / "model_fp16.onnx")
    assert metadata["class_names"] == METADATA["class_names"]
    assert json.loads(metadata["preprocessing"]) == {"format": "workbench-onnx",
                                                     "crop_size": 4, "variant": "float16"}
    logits = _logits(tmp_path / "model_fp16.onnx", np.full((1, 1, 4, 4), 200, np.uint8))
    assert logits.dtype == np.float32 and logits[0] == pytest.approx([32.0, -64.0], rel=1e-3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["float32.onnx", "model_fp16.onnx"]


def test_no_calibration_crops_is_refused(tmp_path: Path) -> None:
    source = _float32_file(tmp_path / "float32.onnx")
    with pytest.raises(ExportError) as caught:
        quantize_int8(source, tmp_path / "model_int8.onnx", np.zeros((0, 1, 4, 4), np.uint8))
    assert str(caught.value) == "INT8 export needs calibration images; none could be read"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["float32.onnx"]


def test_a_file_that_is_not_onnx_fails_to_convert_and_leaves_the_target_alone(
        tmp_path: Path) -> None:
    source = tmp_path / "float32.onnx"
    source.write_bytes(b"not a model")
    (tmp_path / "out.onnx").write_bytes(b"earlier")
    with pytest.raises(ExportError) as caught:
        quantize_int8(source, tmp_path / "out.onnx", np.zeros((2, 1, 4, 4), np.uint8))
    # the error's type and the first line of its message
    assert str(caught.value).startswith(f"INT8 quantization of '{source}' failed: DecodeError: "
                                        "Error parsing message")
    assert "\n" not in str(caught.value)
    with pytest.raises(ExportError) as caught:
        convert_float16(source, tmp_path / "out.onnx")
    assert str(caught.value).startswith(f"float16 conversion of '{source}' failed: DecodeError: "
                                        "Error parsing message")
    assert "\n" not in str(caught.value)
    assert (tmp_path / "out.onnx").read_bytes() == b"earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["float32.onnx", "out.onnx"]


def test_a_file_without_preprocessing_gets_one_that_names_the_variant(tmp_path: Path,
                                                                     monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = _float32_file(tmp_path / "float32.onnx", {"class_names": '["a", "b"]'})
    convert_float16(source, tmp_path / "model_fp16.onnx")
    assert _metadata(tmp_path / "model_fp16.onnx") == {
        "class_names": '["a", "b"]', "preprocessing": '{"variant": "float16"}'}
