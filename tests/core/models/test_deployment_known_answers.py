"""Known answers of an export's verdict, figures and report, worked out by hand.

The figures come from runners whose logits are set by hand on images whose content is known
(each image one flat grey level), so agreement, accuracy and the largest logit difference are
counted on paper; the verdicts and the allowed INT8 drop are the sentences a user reads after
``workbench export``. ``test_deployment.py`` exports a trained model in every format.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from PIL import Image

from tests.core.models.hand_made_files import write_images_and_resized_copies
from tests.core.models.test_export_images_used import _folder_and_model
from workbench.core.data.health.health_check import check_health
from workbench.core.data.training_scan import scan_for_run
from workbench.core.models.deployment import (
    CALIBRATION_IMAGES,
    REPORT_FILE,
    DeploymentResult,
    _calibration_crops,
    _evaluation,
    _figures,
    _float32_size,
    _preprocessing_of,
    _verdict,
    _verification_text,
    _write_report,
    export_and_measure,
    int8_allowed_drop,
)
from workbench.core.models.export import ExportResult
from workbench.core.models.export_files import ExportError, LogitCheck
from workbench.core.models.export_measurement import (
    THROUGHPUT_BATCH,
    EvaluationImages,
    ExportFigures,
)
from workbench.core.runs.config import TrainConfig

# ----------------------------------------------------------------- the INT8 allowed drop


@pytest.mark.parametrize(("images", "allowed", "text"), [
    (46, 1 / 46, "1 image of 46"),   # one point of 46 is less than one image
    (1, 1.0, "1 image of 1"),
    (99, 1 / 99, "1 image of 99"),
    (100, 0.01, "1 point"),          # one image of 100 is one point
    (500, 0.01, "1 point"),          # one point is five images of 500
    (0, 0.01, "1 point"),            # no count: the rule of one point
])
def test_the_int8_drop_allowed_is_one_image_below_100_images_and_one_point_above(
        images: int, allowed: float, text: str) -> None:
    assert int8_allowed_drop(images) == (allowed, text)


# ----------------------------------------------------------------- the verdicts


def test_int8_on_46_images_may_lose_exactly_one_image() -> None:
    assert _verdict("onnx-int8", 45 / 46, 46 / 46, 0.3, images=46) == (
        True, "VERIFIED: validation accuracy 0.978 within 1 image of 46 of float32's 1.000")
    assert _verdict("onnx-int8", 44 / 46, 46 / 46, 0.3, images=46) == (
        False, "NOT VERIFIED: validation accuracy 0.957 is 4.3 points below float32's 1.000 "
               "(at most 1 image of 46 allowed); kept for inspection")


def test_int8_on_500_images_may_lose_one_point_and_no_more() -> None:
    # five images of 500 are one point: allowed, exactly at the limit
    assert _verdict("onnx-int8", 495 / 500, 500 / 500, 0.3, images=500) == (
        True, "VERIFIED: validation accuracy 0.990 within 1 point of float32's 1.000")
    # six are 1.2 points
    assert _verdict("onnx-int8", 494 / 500, 500 / 500, 0.3, images=500) == (
        False, "NOT VERIFIED: validation accuracy 0.988 is 1.2 points below float32's 1.000 "
               "(at most 1 point allowed); kept for inspection")


def test_without_an_image_count_the_int8_rule_is_one_point() -> None:
    assert _verdict("onnx-int8", 0.5, 0.6, 0.3)[0] is False
    assert _verdict("onnx-int8", 0.5, 0.505, 0.3) == (
        True, "VERIFIED: validation accuracy 0.500 within 1 point of float32's 0.505")


def test_float16_is_held_to_its_logit_tolerance_and_says_the_difference() -> None:
    assert _verdict("onnx-fp16", 0.5, 0.9, 0.0123) == (
        True, "VERIFIED: logits within 0.05 of float32 (max |difference| 0.0123)")
    assert _verdict("onnx-fp16", 0.9, 0.9, 0.0612) == (
        False, "NOT VERIFIED: logits differ from float32 by up to 0.0612 (at most 0.05 allowed)")


@pytest.mark.parametrize("export_format", ["onnx-int8", "onnx-fp16"])
def test_a_variant_without_figures_is_not_verified(export_format: str) -> None:
    assert _verdict(export_format, None, None, None) == (
        False, "NOT VERIFIED: no validation images to measure its accuracy against float32")


def _exported(method: str = "onnx opset 18", check: LogitCheck | None = None) -> ExportResult:
    return ExportResult(path="model.onnx", max_abs_diff=None, subprocess_max_abs_diff=2e-6,
                        class_names=["a", "b"], input_size=28, seconds=0.5, method=method,
                        check=check)


@pytest.mark.parametrize("export_format", ["onnx", "torchscript"])
def test_a_float32_export_is_verified_by_its_check_against_the_eager_model(
        export_format: str) -> None:
    check = LogitCheck(max_abs_diff=1.23e-6, largest_logit=35.2, tolerance=3.52e-3, images=4,
                       agreeing=4)
    # accuracy figures do not enter: the file was compared before it was written
    assert _verdict(export_format, 0.1, 0.9, 5.0, _exported(check=check), images=10) == (
        True, "VERIFIED: reproduces the trained model (max |difference| 1.2e-06 within "
              "tolerance 3.5e-03 (0.0005 x the largest |logit|, 35.2); top class agrees on "
              "4 of 4 images)")
    assert _verdict(export_format, None, None, None, _exported(check=None)) == (
        True, "VERIFIED: reproduces the trained model")
    assert _verdict(export_format, None, None, None) == (
        True, "VERIFIED: reproduces the trained model")


def test_the_variants_say_their_check_was_of_the_float32_file() -> None:
    exported = _exported()
    plain = ("ONNX opset 18; max |difference| from the trained model: 2.00e-06 with "
             "onnxruntime in a fresh process")
    assert exported.verification == plain
    assert _verification_text(exported, "onnx") == plain
    assert _verification_text(exported, "torchscript") == plain
    for variant in ("onnx-int8", "onnx-fp16"):
        assert _verification_text(exported, variant) == \
            plain + " (the float32 file this one was made from)"


# ----------------------------------------------------------------- sizes, settings, report


def test_a_variant_is_compared_with_the_size_of_the_float32_file_it_was_made_from(
        tmp_path: Path) -> None:
    path, float_onnx = tmp_path / "model_x.onnx", tmp_path / "float32.onnx"
    path.write_bytes(b"x" * 10)
    float_onnx.write_bytes(b"x" * 25)
    assert _float32_size("onnx-int8", path, float_onnx) == 25
    assert _float32_size("onnx-fp16", path, float_onnx) == 25
    assert _float32_size("onnx", path, float_onnx) == 10  # the file is the float32 one
    assert _float32_size("torchscript", path, float_onnx) == 10


def test_the_exports_preprocessing_is_the_runs() -> None:
    config = TrainConfig(model="small_cnn", crop_mode="five_crop", resize_size=40, crop_size=32,
                         interpolation="bicubic")
    assert _preprocessing_of(config) == {
        "model": "small_cnn", "crop_mode": "five_crop", "resize_size": 40,
        "interpolation": "bicubic", "crop_size": 32, "in_channels": 1}


def _figures_of(name: str, verified: bool = True) -> ExportFigures:
    return ExportFigures(
        export_format="onnx-int8", path=f"/out/{name}", runtime="onnxruntime, CPU",
        size_bytes=1000, float32_size_bytes=4000, images=3, top1_agreement=1.0,
        val_accuracy=0.5, float32_val_accuracy=0.5, max_abs_logit_diff=0.25,
        latency_ms_median=1.0, latency_ms_p95=2.0, images_per_second=500.0,
        verified=verified, verdict="VERIFIED: x" if verified else "NOT VERIFIED: y")


def test_the_report_holds_one_row_a_file_and_replaces_a_files_old_row(tmp_path: Path) -> None:
    first = _write_report(tmp_path / "a.onnx", _figures_of("a.onnx"), "3 images", "how a")
    assert first == tmp_path / REPORT_FILE
    _write_report(tmp_path / "b.onnx", _figures_of("b.onnx"), "3 images", "how b")
    _write_report(tmp_path / "a.onnx", _figures_of("a.onnx", verified=False), "4 images",
                  "how a, again")
    report = json.loads(first.read_text(encoding="utf-8"))
    assert report["format"] == "workbench-export-report" and report["version"] == 1
    assert list(report["exports"]) == ["a.onnx", "b.onnx"]
    assert report["exports"]["a.onnx"] == {**_figures_of("a.onnx", verified=False).to_dict(),
                                           "evaluation": "4 images",
                                           "verification": "how a, again"}
    assert report["exports"]["b.onnx"]["verification"] == "how b"
    # laid out for reading, two spaces an indent
    assert first.read_text(encoding="utf-8") == json.dumps(report, indent=2)


@pytest.mark.parametrize("damaged", ["not json {", "[1, 2]", "{}"])
def test_a_damaged_report_is_replaced(tmp_path: Path, damaged: str) -> None:
    (tmp_path / REPORT_FILE).write_text(damaged, encoding="utf-8")
    _write_report(tmp_path / "a.onnx", _figures_of("a.onnx"), "3 images", "how a")
    report = json.loads((tmp_path / REPORT_FILE).read_text(encoding="utf-8"))
    assert list(report["exports"]) == ["a.onnx"]


def test_the_result_says_its_verdict_first_then_the_details() -> None:
    figures = _figures_of("a.onnx")
    result = DeploymentResult("/out/a.onnx", figures, "/out/export_report.json",
                              "3 validation images of /data", "ONNX opset 18; checked")
    assert result.verdict == "VERIFIED: x"
    assert result.lines() == [
        "VERIFIED: x", "  file: /out/a.onnx", "  how: ONNX opset 18; checked",
        f"  figures: {figures.summary()}",
        "  measured on 3 validation images of /data; figures written to "
        "/out/export_report.json"]


# ----------------------------------------------------------------- the figures

# four validation images, one flat grey level each, labels 0 0 1 1
LEVELS = ((10, 0), (20, 0), (200, 1), (220, 1))
PREPROCESSING = {"model": "small_cnn", "crop_mode": "standard", "resize_size": 28,
                 "interpolation": "bilinear", "crop_size": 28, "in_channels": 1}


def _images(root: Path) -> EvaluationImages:
    samples = []
    for level, label in LEVELS:
        path = root / f"{level}.png"
        Image.new("L", (28, 28), level).save(path)
        samples.append((str(path), label))
    return EvaluationImages(tuple(samples), PREPROCESSING, "4 validation images")


def _levels(crops: np.ndarray) -> np.ndarray:
    return crops.reshape(len(crops), -1).mean(axis=1)


def _eager(crops: np.ndarray) -> np.ndarray:
    """Class 1 for bright crops: ((128 - level) / 100, (level - 128) / 100)."""
    level = _levels(crops)
    return np.stack([(128 - level) / 100, (level - 128) / 100], axis=1).astype(np.float32)


def _export(crops: np.ndarray) -> np.ndarray:
    """The eager logits, but class 1 (-1, 1) for the image of level 20."""
    logits = _eager(crops)
    logits[_levels(crops) == 20] = (-1.0, 1.0)
    return logits


class _Recorder:
    def __init__(self, runner) -> None:
        self.runner, self.shapes, self.dtypes = runner, set(), set()

    def __call__(self, crops: np.ndarray) -> np.ndarray:
        self.shapes.add(crops.shape)
        self.dtypes.add(crops.dtype)
        return self.runner(crops)


def test_the_figures_count_agreement_and_accuracy_against_the_labels(tmp_path: Path) -> None:
    path = tmp_path / "model_int8.onnx"
    path.write_bytes(b"x" * 123)
    runner = _Recorder(_export)
    config = TrainConfig(model="small_cnn", crop_size=28, resize_size=28)
    figures = _figures("onnx-int8", path, runner, _images(tmp_path), _eager, 492, config,
                       _exported())
    # predicted 0 1 1 1, float32 predicts 0 0 1 1, labels 0 0 1 1
    assert figures.images == 4
    assert figures.top1_agreement == 0.75 and figures.val_accuracy == 0.75
    assert figures.float32_val_accuracy == 1.0
    # level 20: float32 (1.08, -1.08), export (-1, 1)
    assert figures.max_abs_logit_diff == pytest.approx(2.08, abs=1e-6)
    # one image of four may change its answer: exactly the allowed drop
    assert figures.verified is True and figures.verdict == (
        "VERIFIED: validation accuracy 0.750 within 1 image of 4 of float32's 1.000")
    assert figures.export_format == "onnx-int8" and figures.path == str(path)
    assert figures.size_bytes == 123 and figures.float32_size_bytes == 492
    assert figures.runtime == "onnxruntime, CPU"
    # timed on one image's crops and on the first chunk of images
    assert runner.shapes == {(1, 1, 28, 28), (4, 1, 28, 28)}
    assert 0 < figures.latency_ms_median <= figures.latency_ms_p95
    assert figures.images_per_second > 0


def test_float16_figures_are_held_to_the_logit_tolerance(tmp_path: Path) -> None:
    path = tmp_path / "model_fp16.onnx"
    path.write_bytes(b"x")
    config = TrainConfig(model="small_cnn", crop_size=28, resize_size=28)
    figures = _figures("onnx-fp16", path, _export, _images(tmp_path), _eager, 2, config,
                       _exported())
    assert figures.verified is False and figures.verdict == (
        "NOT VERIFIED: logits differ from float32 by up to 2.08 (at most 0.05 allowed)")


def test_torchscript_figures_name_libtorch_and_keep_the_checks_verdict(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    path.write_bytes(b"x")
    config = TrainConfig(model="small_cnn", crop_size=28, resize_size=28)
    check = LogitCheck(max_abs_diff=2.0e-6, largest_logit=1.5, tolerance=7.5e-4, images=3,
                       agreeing=3)
    figures = _figures("torchscript", path, _export, _images(tmp_path), _eager, 1, config,
                       _exported(method="script", check=check))
    assert figures.runtime == "LibTorch (torch.jit), CPU"
    # the verdict is the export's own check, not the figures of these images
    assert figures.verified is True and figures.verdict == (
        "VERIFIED: reproduces the trained model (max |difference| 2.0e-06 within tolerance "
        "7.5e-04 (0.0005 x the largest |logit|, 1.5); top class agrees on 3 of 3 images)")


@pytest.mark.parametrize("undecodable", [False, True])
def test_without_images_the_figures_are_speed_only_on_the_example_shape(
        tmp_path: Path, undecodable: bool) -> None:
    """No images at hand, or none decodes: speed is timed on a blank example of the model's
    input, and accuracy is not measured."""
    path = tmp_path / "model_int8.onnx"
    path.write_bytes(b"x")
    images = None
    if undecodable:
        (tmp_path / "broken.png").write_bytes(b"not an image")
        images = EvaluationImages(((str(tmp_path / "broken.png"), 0),), PREPROCESSING, "1 image")
    runner = _Recorder(_eager)
    config = TrainConfig(model="small_cnn", crop_size=24, resize_size=24)
    figures = _figures("onnx-int8", path, runner, images, _eager, 1, config, _exported())
    # uint8, as the exported graphs take it
    assert runner.shapes == {(1, 1, 24, 24), (THROUGHPUT_BATCH, 1, 24, 24)}
    assert runner.dtypes == {np.dtype(np.uint8)}
    assert (figures.images, figures.top1_agreement, figures.val_accuracy,
            figures.float32_val_accuracy, figures.max_abs_logit_diff) == (0, None, None, None,
                                                                          None)
    assert figures.verified is False and figures.verdict.startswith(
        "NOT VERIFIED: no validation images")


# ----------------------------------------------------------------- which images


def _flat_folder(root: Path, per_class: int = 10) -> Path:
    for name, level in (("a", 30), ("b", 200)):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            Image.new("L", (8, 8), level + i).save(root / name / f"{i:03d}.png")
    return root


def test_the_figures_use_the_runs_own_split_seed_and_exclusions(tmp_path: Path) -> None:
    """A folder without train/ and val/: the validation images are the run's split of it
    (its val_fraction and seed, less its exclusion list)."""
    root = _flat_folder(tmp_path / "data")
    exclude = tmp_path / "exclude.txt"
    exclude.write_text(f"{root / 'a' / '003.png'}\n{root / 'b' / '007.png'}\n",
                       encoding="utf-8")
    config = TrainConfig(data_root=str(root), model="small_cnn", crop_size=8, resize_size=8,
                         val_fraction=0.5, seed=7, exclude_file=str(exclude),
                         cache_dir=str(tmp_path / "cache"))
    expected = scan_for_run(str(root), 0.5, 7, cache_dir=config.cache_dir,
                            exclude_file=str(exclude))
    assert len(expected.val) < 10 and expected.val != scan_for_run(str(root), 0.2, 0).val
    images, description = _evaluation(config, ["a", "b"], _preprocessing_of(config), "val")
    assert list(images.samples) == list(expected.val)
    assert description == f"{len(expected.val)} validation images of {root}"
    train, _ = _evaluation(config, ["a", "b"], _preprocessing_of(config), "train")
    assert list(train.samples) == list(expected.train)


def test_the_figures_keep_the_health_checks_copies_together_as_the_run_did(
        tmp_path: Path) -> None:
    """Copies the health check found (in the run's cache folder) are split together by the
    run's scan; the export's validation images are that split, not the folder split afresh."""
    root, rng = tmp_path / "data", np.random.default_rng(0)
    write_images_and_resized_copies(root, rng)
    config = TrainConfig(data_root=str(root), model="small_cnn", crop_size=8, resize_size=8,
                         val_fraction=0.25, cache_dir=str(tmp_path / "cache"))
    check_health(str(root), cache_dir=config.cache_dir)
    run_split = scan_for_run(str(root), 0.25, 0, cache_dir=config.cache_dir).val
    assert run_split != scan_for_run(str(root), 0.25, 0).val
    images, _ = _evaluation(config, ["a", "b"], _preprocessing_of(config), "val")
    assert list(images.samples) == list(run_split)


def test_a_gone_folder_leaves_accuracy_unmeasured_and_int8_without_calibration(
        tmp_path: Path) -> None:
    config = TrainConfig(data_root=str(tmp_path / "gone"), model="small_cnn", crop_size=8,
                         resize_size=8)
    images, description = _evaluation(config, ["a", "b"], _preprocessing_of(config), "val")
    assert images is None and description.startswith(
        "accuracy not measured: the run's images cannot be read (")
    with pytest.raises(ExportError) as caught:
        _calibration_crops(config, ["a", "b"], _preprocessing_of(config))
    assert str(caught.value).startswith(
        "INT8 export needs calibration images from the training split; the run's images "
        "cannot be read (")


def test_calibration_takes_at_most_300_training_images_spread_over_the_split(
        tmp_path: Path) -> None:
    root = _flat_folder(tmp_path / "data", per_class=(CALIBRATION_IMAGES + 2) // 2 + 1)
    config = TrainConfig(data_root=str(root), model="small_cnn", crop_size=8, resize_size=8,
                         val_fraction=0.01)
    train = scan_for_run(str(root), 0.01, 0).train
    assert len(train) > CALIBRATION_IMAGES == 300
    crops = _calibration_crops(config, ["a", "b"], _preprocessing_of(config))
    assert crops.shape == (300, 1, 8, 8)


# ----------------------------------------------------------------- refusals


def test_an_unknown_format_and_a_file_that_is_not_a_model_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError) as caught:
        export_and_measure(tmp_path / "best_model.pt", tmp_path / "out.tflite", "tflite")
    assert str(caught.value) == ("unknown export format 'tflite' (choose from torchscript, "
                                 "onnx, onnx-int8, onnx-fp16)")
    not_a_model = tmp_path / "best_model.pt"
    not_a_model.write_bytes(b"not a model")
    with pytest.raises(ExportError) as caught:
        export_and_measure(not_a_model, tmp_path / "model.onnx", "onnx")
    assert str(caught.value).startswith("cannot export: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best_model.pt"]


# ----------------------------------------------------------------- one whole export


def test_an_int8_export_says_each_step_and_reports_against_its_float32_file(
        tmp_path: Path) -> None:
    """A two-class small_cnn that answers 'a' for every image, on 5 training images (grey
    levels 10..50) and 3 validation images (one 'a'): INT8, calibrated on the training split."""
    config, model_file = _folder_and_model(tmp_path)
    said: list[str] = []
    out = tmp_path / "export" / "model_int8.onnx"
    out.parent.mkdir()
    result = export_and_measure(model_file, out, "onnx-int8", on_progress=said.append)
    assert said == ["reading the validation images",
                    "exporting ONNX INT8, static quantization (about 4x smaller; CPUs)",
                    "reading calibration images from the training split",
                    "measuring accuracy and speed"]
    figures = result.figures
    assert result.path == str(out) and figures.path == str(out)
    assert figures.export_format == "onnx-int8" and figures.runtime == "onnxruntime, CPU"
    assert figures.size_bytes == out.stat().st_size
    # the float32 file it was made from is gone with its temporary folder; its size stays
    assert figures.float32_size_bytes > 3 * figures.size_bytes
    assert sorted(p.name for p in out.parent.iterdir()) == [REPORT_FILE, "model_int8.onnx"]
    # one 'a' of three validation images; float32 says the same
    assert (figures.images, figures.val_accuracy, figures.float32_val_accuracy,
            figures.top1_agreement) == (3, 1 / 3, 1 / 3, 1.0)
    assert figures.verdict == ("VERIFIED: validation accuracy 0.333 within 1 image of 3 of "
                               "float32's 0.333")
    assert result.evaluation == f"3 validation images of {config.data_root}"
    assert result.verification.startswith("ONNX opset 18; ") and result.verification.endswith(
        " (the float32 file this one was made from)")
    assert result.report_path == str(out.parent / REPORT_FILE)
    row = json.loads((out.parent / REPORT_FILE).read_text(encoding="utf-8"))["exports"][
        "model_int8.onnx"]
    assert row == {**figures.to_dict(), "evaluation": result.evaluation,
                   "verification": result.verification}
    metadata = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    assert json.loads(metadata["preprocessing"])["calibration_images"] == 5

