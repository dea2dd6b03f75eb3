"""ONNX export of a trained model file: same logits as eager in a fresh onnxruntime process."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest
import torch

from workbench.core.data.transforms import normalization_for
from workbench.core.models.building import build_model
from workbench.core.models.checkpoint_format import model_file_data, write_workbench_file
from workbench.core.models.export import ExportError, PreprocessingClassifier
from workbench.core.models.onnx_export import export_model_file_onnx, export_onnx
from workbench.core.runs.config import TrainConfig

# A fresh interpreter with onnxruntime only: other batch sizes than the export's, metadata.
CHECK = """
import json, sys
import numpy as np
import onnxruntime as ort
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
out = {}
for n in (1, 5):
    images = np.load(sys.argv[2])[:n]
    out[n] = session.run(None, {"images": images})[0].tolist()
meta = session.get_modelmeta().custom_metadata_map
print(json.dumps({"logits": out, "classes": json.loads(meta["class_names"]),
                  "pre": json.loads(meta["preprocessing"])}))
"""


def test_onnx_export_matches_the_eager_model_in_a_fresh_process(tmp_path):
    torch.manual_seed(0)
    config = TrainConfig(model="small_cnn", weights="none", resize_size=32, crop_size=28)
    model = build_model(config, 3).eval()
    with torch.no_grad():  # trained-looking BatchNorm statistics, so eval mode matters
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    model_file = tmp_path / "best_model.pt"
    write_workbench_file(model_file_data(model, ["cat", "dog", "fox"], config, 1, 0.9),
                         model_file)

    result = export_model_file_onnx(model_file, tmp_path / "out" / "model.onnx")

    assert result.subprocess_max_abs_diff <= 1e-4 and result.method == "onnx opset 18"
    assert result.max_abs_diff is None  # not run in this process: no figure claims it was
    check = result.check
    assert result.verification == ("ONNX opset 18; max |difference| from the trained model: "
                                   f"{result.subprocess_max_abs_diff:.2e} with onnxruntime in "
                                   f"a fresh process, within tolerance {check.tolerance:.1e} "
                                   "(0.0005 x the largest |logit|, "
                                   f"{max(1.0, check.largest_logit):.3g}); top class agrees "
                                   "on 3 of 3 images")
    images = torch.randint(0, 256, (5, 1, 28, 28), dtype=torch.uint8)
    np.save(tmp_path / "images.npy", images.numpy())
    done = subprocess.run([sys.executable, "-c", CHECK, result.path, str(tmp_path / "images.npy")],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    mean, std = normalization_for(config)
    with torch.no_grad():
        eager = PreprocessingClassifier(model, mean, std).eval()(images)
    for n in ("1", "5"):
        assert np.abs(np.array(report["logits"][n]) - eager[: int(n)].numpy()).max() <= 1e-4
    assert report["classes"] == ["cat", "dog", "fox"]
    assert report["pre"]["crop_size"] == 28 and report["pre"]["opset"] == 18


def test_a_file_that_is_not_a_model_is_refused_and_nothing_written(tmp_path):
    bogus = tmp_path / "best_model.pt"
    bogus.write_bytes(b"not a checkpoint")
    with pytest.raises(ExportError, match="cannot export"):
        export_model_file_onnx(bogus, tmp_path / "model.onnx")
    assert not (tmp_path / "model.onnx").exists()


def test_an_onnx_file_that_computes_otherwise_in_a_fresh_process_is_not_written(
        tmp_path, flushing_denormals):
    # A real mismatch: this process flushes denormals, onnxruntime in a fresh process does
    # not, so only a check that compares the fresh output with the eager one can see it.
    config = TrainConfig(model="small_cnn", weights="none", resize_size=32, crop_size=28)
    target = tmp_path / "model.onnx"
    with pytest.raises(ExportError, match="differs from the trained model") as info:
        export_onnx(flushing_denormals, ["a", "b", "c"], config, target)
    assert str(target) in str(info.value)
    assert not target.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="umask is POSIX")
def test_the_onnx_file_follows_the_umask(tmp_path):
    config = TrainConfig(model="small_cnn", weights="none", resize_size=32, crop_size=28)
    model = build_model(config, 3).eval()
    previous = os.umask(0o022)
    try:
        result = export_onnx(model, ["a", "b", "c"], config, tmp_path / "model.onnx")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(result.path).st_mode) == 0o644
