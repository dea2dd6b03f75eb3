"""Grad-CAM of a saved run names the class and probability predictions.csv has for the image."""

from __future__ import annotations

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.grad_cam import grad_cam_from_model_file
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.predictions_file import read_predictions
from workbench.core.training.engine import train


def test_grad_cam_probability_equals_predictions_csv(tmp_path):
    # Five 28 px crops of 36 px images: the whole image would give other probabilities.
    data = write_shape_dataset(tmp_path / "shapes", per_class=4, size=(36, 36),
                               layout="train_val", val_per_class=2)
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="five_crop", resize_size=36, crop_size=28, batch_size=8, epochs=2, lr=0.05,
        workers=0, output_dir=str(tmp_path / "runs"), device="cpu", amp=False,
        cache_images=False, seed=3,
    )
    end = train(config, Callback())
    assert end.status == "completed", end.error
    rows = read_predictions(end.run_dir)
    assert len(rows) == 8

    for row in rows[:2]:  # the map of the labelled class names that class's probability
        of_label = grad_cam_from_model_file(end.best_model_path, row.path, row.true_class)
        assert of_label.probability == pytest.approx(row.true_class_probability, rel=2e-5,
                                                     abs=1e-6), row.path
    for row in rows:
        cam = grad_cam_from_model_file(end.best_model_path, row.path)
        assert cam.class_name == row.predicted_class, row.path
        # predictions.csv keeps six significant digits.
        assert cam.probability == pytest.approx(row.confidence, rel=2e-5, abs=1e-6), row.path
