"""Known answers of reading an ONNX file back (what ``workbench predict`` says about a file) and
of the preprocessing an ONNX export carries, on files written by hand with onnx's helpers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import onnxruntime
import pytest
import torch
from onnx import TensorProto, helper

import workbench
from tests.core.models.hand_made_files import save_onnx_graph
from workbench.core.models.export_files import ExportError
from workbench.core.models.onnx_export import (
    UInt8Classifier,
    _preprocessing,
    is_onnx_file,
    load_onnx_export,
)
from workbench.core.runs.config import TrainConfig


def _onnx_file(path: Path, metadata: dict[str, str]) -> Path:
    """uint8 images [N, 1, 2, 2] -> float logits: the four pixels' sum and its negative."""
    graph = helper.make_graph(
        [helper.make_node("Cast", ["images"], ["x"], to=TensorProto.FLOAT),
         helper.make_node("Flatten", ["x"], ["flat"]),
         helper.make_node("ReduceSum", ["flat", "axes"], ["total"], keepdims=1),
         helper.make_node("Neg", ["total"], ["negative"]),
         helper.make_node("Concat", ["total", "negative"], ["logits"], axis=1)],
        "sum", [helper.make_tensor_value_info("images", TensorProto.UINT8, ["N", 1, 2, 2])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [1])])
    return save_onnx_graph(graph, metadata, path)


WORKBENCH = {"class_names": json.dumps(["bright", "dark"]),
             "preprocessing": json.dumps({"format": "workbench-onnx", "crop_size": 2})}


def test_a_workbench_onnx_file_classifies_uint8_crops(tmp_path: Path) -> None:
    exported = load_onnx_export(_onnx_file(tmp_path / "model.onnx", WORKBENCH))
    assert exported.class_names == ["bright", "dark"]
    assert exported.preprocessing == {"format": "workbench-onnx", "crop_size": 2}
    images = torch.tensor([[[[1, 2], [3, 4]]], [[[0, 0], [0, 5]]]], dtype=torch.uint8)
    logits = exported.module(images)
    assert isinstance(logits, torch.Tensor)
    assert logits.tolist() == [[10.0, -10.0], [5.0, -5.0]]
    # a non-contiguous batch (every other image) is run as the images it shows
    assert exported.module(images[::2]).tolist() == [[10.0, -10.0]]


@pytest.mark.parametrize(("metadata", "reason"), [
    ({}, " (its metadata has no readable class_names and preprocessing)"),
    ({"class_names": '["a"]'}, " (its metadata has no readable class_names and preprocessing)"),
    ({"class_names": "not json", "preprocessing": "{}"},
     " (its metadata has no readable class_names and preprocessing)"),
    ({"class_names": '["a"]', "preprocessing": '{"format": "other"}'}, ""),
    ({"class_names": '["a"]', "preprocessing": '["workbench-onnx"]'}, ""),
    ({"class_names": '["a"]', "preprocessing": '{"crop_size": 2}'}, ""),
])
def test_an_onnx_file_that_is_not_a_workbench_export_is_refused(
        tmp_path: Path, metadata: dict[str, str], reason: str) -> None:
    path = _onnx_file(tmp_path / "other.onnx", metadata)
    with pytest.raises(ExportError) as caught:
        load_onnx_export(path)
    assert str(caught.value) == f"'{path}' is ONNX but not a workbench export{reason}"


def test_a_missing_folder_or_damaged_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ExportError) as caught:
        load_onnx_export(tmp_path / "gone.onnx")
    assert str(caught.value) == f"ONNX model '{tmp_path / 'gone.onnx'}' is missing"
    (tmp_path / "folder.onnx").mkdir()
    with pytest.raises(ExportError) as caught:
        load_onnx_export(tmp_path / "folder.onnx")
    assert str(caught.value) == f"ONNX model '{tmp_path / 'folder.onnx'}' is a folder, not a file"
    damaged = tmp_path / "damaged.onnx"
    damaged.write_bytes(b"\x08\x07 not the rest of a model")
    with pytest.raises(ExportError) as caught:
        load_onnx_export(damaged)
    # onnxruntime's own first line of why
    with pytest.raises(Exception) as runtime:
        onnxruntime.InferenceSession(str(damaged), providers=["CPUExecutionProvider"])
    why = str(runtime.value).strip().splitlines()[0]
    assert why and str(caught.value) == f"'{damaged}' is not an ONNX model or is damaged ({why})"


def test_without_onnxruntime_the_file_says_what_to_install(tmp_path: Path,
                                                           monkeypatch) -> None:
    path = _onnx_file(tmp_path / "model.onnx", WORKBENCH)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime fails
    with pytest.raises(ExportError) as caught:
        load_onnx_export(path)
    assert str(caught.value) == (f"'{path}' is an ONNX model; running it needs onnxruntime: "
                                 "pip install 'workbench[onnx]' (or pip install onnxruntime)")


def test_an_onnx_file_is_known_by_its_name_or_its_first_byte(tmp_path: Path) -> None:
    assert is_onnx_file(tmp_path / "missing.ONNX")  # by name, read or not
    no_suffix = _onnx_file(tmp_path / "model.bin", WORKBENCH)
    assert no_suffix.read_bytes()[:1] == b"\x08" and is_onnx_file(no_suffix)
    (tmp_path / "model.pt").write_bytes(b"PK\x03\x04 a zip archive")
    assert not is_onnx_file(tmp_path / "model.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    assert not is_onnx_file(tmp_path / "empty.pt")
    assert not is_onnx_file(tmp_path / "missing.pt")


def test_the_graph_normalises_uint8_pixels_itself() -> None:
    wrapper = UInt8Classifier(torch.nn.Identity(), mean=[0.5, 0.25], std=[0.5, 0.25])
    assert wrapper.mean.shape == (1, 2, 1, 1) and wrapper.std.shape == (1, 2, 1, 1)
    images = torch.tensor([0, 255, 51, 255], dtype=torch.uint8).view(1, 2, 2, 1)
    # (pixel / 255 - mean) / std: channel 0 (0, 1) -> (-1, 1); channel 1 (0.2, 1) -> (-0.2, 3)
    assert torch.allclose(wrapper(images).flatten(), torch.tensor([-1.0, 1.0, -0.2, 3.0]))


def test_the_preprocessing_an_onnx_export_carries() -> None:
    config = TrainConfig(model="small_cnn", crop_mode="five_crop", resize_size=40,
                         crop_size=32, interpolation="bicubic")
    assert _preprocessing(config, [0.5], [0.25], 3, 17) == {
        "format": "workbench-onnx", "version": 1, "model": "small_cnn", "num_classes": 3,
        "in_channels": 1, "resize_size": 40, "interpolation": "bicubic", "crop_size": 32,
        "crop_mode": "five_crop", "input_layout": "NCHW", "input_dtype": "uint8",
        "mean": [0.5], "std": [0.25], "normalization": "applied inside the graph",
        "opset": 17, "workbench_version": workbench.__version__,
        "torch_version": torch.__version__}
