"""Every deployable format of one small trained model: written, measured here, reported."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from tests.test_cli import run_cli
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.health.health_check import check_health
from workbench.core.models.checkpoint_format import load_model_file
from workbench.core.models.deployment import (
    FLOAT16_TOLERANCE,
    INT8_MAX_DROP,
    REPORT_FILE,
    _verdict,
    export_and_measure,
)
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train


@pytest.fixture(scope="module")
def best_model(tmp_path_factory) -> Path:
    """small_cnn trained for real on four shape classes (60 validation images)."""
    root = tmp_path_factory.mktemp("deploy")
    data = write_shape_dataset(root / "data", per_class=40, size=(32, 32), layout="train_val",
                               val_per_class=15)
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=28, crop_size=28, train_hflip=False,
        crop_scale_min=0.7, batch_size=16, epochs=4, optimizer="adamw", lr=0.003,
        weight_decay=0.0, scheduler="cosine",
        workers=0, device="cpu", output_dir=str(root / "runs"))
    end = train(config, Callback())
    assert end.status == "completed", end.error
    return Path(end.best_model_path)


def test_each_format_is_measured_against_float32_and_reported(best_model, tmp_path):
    results = {name: export_and_measure(best_model, tmp_path / file, name)
               for name, file in (("onnx", "model.onnx"), ("onnx-int8", "model_int8.onnx"),
                                  ("onnx-fp16", "model_fp16.onnx"),
                                  ("torchscript", "model_torchscript.pt"))}
    float32 = (tmp_path / "model.onnx").stat().st_size
    for name, result in results.items():
        figures = result.figures
        assert Path(result.path).stat().st_size == figures.size_bytes, name
        assert figures.images == 60 and "60 validation images" in result.evaluation, name
        assert figures.latency_ms_median > 0 and figures.latency_ms_p95 >= \
            figures.latency_ms_median and figures.images_per_second > 0, name
        # Accuracy is counted against the labels, agreement against the float32 predictions.
        assert 0.0 <= figures.val_accuracy <= 1.0 and figures.float32_val_accuracy > 0.5, name
    int8, fp16 = results["onnx-int8"].figures, results["onnx-fp16"].figures
    # Calibrated on the training split (160 images), measured on the validation split (60).
    int8_meta = ort.InferenceSession(str(tmp_path / "model_int8.onnx"),
                                     providers=["CPUExecutionProvider"]).get_modelmeta()
    assert json.loads(int8_meta.custom_metadata_map["preprocessing"])[
        "calibration_images"] == 160
    assert float32 / int8.size_bytes >= 3.0, (float32, int8.size_bytes)
    assert int8.float32_size_bytes == float32 and int8.top1_agreement >= 0.95
    assert fp16.max_abs_logit_diff <= FLOAT16_TOLERANCE and fp16.verified
    assert results["onnx"].figures.top1_agreement == 1.0
    assert results["torchscript"].figures.runtime.startswith("LibTorch")
    assert results["onnx"].figures.max_abs_logit_diff < 1e-4
    # A float32 file's verdict is its check against the eager model, with that check's figures.
    for name in ("onnx", "torchscript"):
        assert results[name].figures.verdict.startswith(
            "VERIFIED: reproduces the trained model (max |difference| "), name

    # One report beside the files holds every export's row.
    report = json.loads((tmp_path / REPORT_FILE).read_text())
    assert set(report["exports"]) == {"model.onnx", "model_int8.onnx", "model_fp16.onnx",
                                      "model_torchscript.pt"}
    assert report["exports"]["model_int8.onnx"]["size_bytes"] == int8.size_bytes
    # Each row says how its file was made and checked, in the words the command prints.
    for name, result in results.items():
        assert report["exports"][Path(result.path).name]["verification"] == \
            result.verification, name
    assert results["torchscript"].verification.startswith(
        "TorchScript, scripted; max |difference| from the trained model: ")
    assert results["onnx"].verification.startswith("ONNX opset 18; ")
    assert results["onnx-int8"].verification.startswith("ONNX opset 18; ")
    # One verdict, said first; the details below it never say "verified" again.
    for name, result in results.items():
        lines = result.lines()
        assert lines[0] == result.figures.verdict and lines[0].startswith("VERIFIED: "), name
        details = [line.replace(str(tmp_path), "") for line in lines[1:]]  # not its path
        assert not any("verified" in line.lower() for line in details), (name, lines)
    assert results["onnx-int8"].verification.endswith(
        "(the float32 file this one was made from)")
    # The README's onnxruntime snippet works for the smaller files unchanged.
    session = ort.InferenceSession(str(tmp_path / "model_int8.onnx"),
                                   providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    assert json.loads(meta["class_names"]) == load_model_file(best_model)[1]
    assert json.loads(meta["preprocessing"])["variant"] == "int8"
    (logits,) = session.run(None, {"images": np.zeros((2, 1, 28, 28), np.uint8)})
    assert logits.shape == (2, 4)


def test_int8_calibrated_on_blank_images_is_kept_but_not_verified(best_model, tmp_path):
    blank = np.zeros((64, 1, 28, 28), np.uint8)
    result = export_and_measure(best_model, tmp_path / "model_int8.onnx", "onnx-int8",
                                calibration_crops=blank)
    figures = result.figures
    assert Path(result.path).is_file()  # kept, for inspection
    assert not figures.verified and figures.verdict.startswith("NOT VERIFIED: validation "
                                                               "accuracy ")
    lines = [line.replace(str(tmp_path), "") for line in result.lines()]  # not the test's path
    assert lines[0] == figures.verdict
    assert [line for line in lines if "verified" in line.lower()] == [lines[0]]
    assert figures.float32_val_accuracy - figures.val_accuracy > max(INT8_MAX_DROP,
                                                                      1 / figures.images)
    report = json.loads((tmp_path / REPORT_FILE).read_text())
    assert report["exports"]["model_int8.onnx"]["verified"] is False


@pytest.mark.parametrize(("export_format", "accuracy", "float32", "diff", "images", "verified"), [
    ("onnx-int8", 0.80, 0.81, 0.3, 1000, True),     # one point down: allowed
    ("onnx-int8", 0.7999, 0.81, 0.3, 1000, False),  # just over one point
    ("onnx-int8", 0.90, 0.81, 0.3, 1000, True),     # better than float32
    ("onnx-int8", 50 / 60, 51 / 60, 0.3, 60, True),   # one image of 60 changed its answer
    ("onnx-int8", 49 / 60, 51 / 60, 0.3, 60, False),  # two of 60
    ("onnx-int8", 98 / 100, 99 / 100, 0.3, 100, True),  # one point is one image of 100
    ("onnx-int8", 97 / 100, 99 / 100, 0.3, 100, False),
    ("onnx-fp16", 0.81, 0.81, FLOAT16_TOLERANCE, 1000, True),
    ("onnx-fp16", 0.81, 0.81, FLOAT16_TOLERANCE * 1.01, 1000, False),
    ("onnx-int8", None, None, None, 0, False),   # nothing to measure against
])
def test_the_verdict_holds_each_variant_to_its_own_limit(export_format, accuracy, float32,
                                                          diff, images, verified):
    assert _verdict(export_format, accuracy, float32, diff, images=images)[0] is verified


def test_the_int8_verdict_names_the_drop_it_allows():
    assert _verdict("onnx-int8", 50 / 60, 51 / 60, 0.3, images=60)[1] == (
        "VERIFIED: validation accuracy 0.833 within 1 image of 60 of float32's 0.850")
    assert _verdict("onnx-int8", 0.5, 0.6, 0.3, images=200)[1] == (
        "NOT VERIFIED: validation accuracy 0.500 is 10.0 points below float32's 0.600 "
        "(at most 1 point allowed); kept for inspection")


class _Page(HTMLParser):
    """The section ids, image sources and outside references of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.images: list[str] = []
        self.outside: list[str] = []
        self.svgs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "section":
            self.sections.append(values.get("id") or "")
        if tag == "img":
            self.images.append(values.get("src") or "")
        if tag == "svg":
            self.svgs += 1
        for name in ("src", "href"):
            link = values.get(name)
            if link and not link.startswith(("data:", "#")):
                self.outside.append(link)


def test_the_run_report_is_one_file_with_every_section_and_its_images_inline(best_model):
    run_dir = best_model.parent
    export_and_measure(best_model, run_dir / "model_int8.onnx", "onnx-int8")
    data_root = TrainConfig.load(run_dir).data_root
    # health.json in the image cache the command below uses (run_cli's), where it looks.
    health = check_health(data_root, cache_dir=str(run_dir / "cache"))
    result = run_cli("report", str(run_dir), cwd=run_dir)
    assert result.returncode == 0, result.stderr
    report = run_dir / "report.html"
    assert f"wrote {report}" in result.stdout
    page = _Page()
    page.feed(report.read_text(encoding="utf-8"))
    assert page.sections == ["summary", "config", "curves", "confusion", "class-metrics",
                             "top-losses", "mislabeled", "health", "model-findings",
                             "exports"]
    assert page.outside == [] and page.svgs == 2  # loss and accuracy curves
    assert len(page.images) >= 8  # at least the top losses of 60 validation images
    for source in page.images:
        assert source.startswith("data:image/png;base64,")
        assert base64.b64decode(source.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    text = report.read_text(encoding="utf-8")
    assert "model_int8.onnx" in text and "onnx-int8" in text  # the export table's row
    assert "precision" in text and "recall" in text
    assert "No health check" not in text
    assert all(finding.title in text for finding in health.findings)
    # The best model's own findings, read from the run folder where the run wrote them.
    assert str(run_dir / "feature_health.json") in text or "found no near duplicate" in text
    assert "No findings from the model" not in text
