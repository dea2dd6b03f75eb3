"""Which images an INT8 export is calibrated on and which its accuracy figure is measured on,
from a folder where the answer is known by hand: every image is one flat grey level of its
own, so a crop says which file it was cut from; the model predicts class 'a' for every image,
so its accuracy is the share of 'a' in the images it was measured on. These are the two
functions ``export_and_measure`` takes its images from; ``test_deployment.py`` checks the
counts of a whole export (60 validation images measured, 160 training images calibrated).

The module docstrings say it: calibration uses the run's training split
(``export_variants``), the figures its validation split (``export_measurement``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

from workbench.core.models.building import SmallCNN
from workbench.core.models.checkpoint_format import (
    load_model_file,
    model_file_data,
    write_workbench_file,
)
from workbench.core.models.deployment import (
    _calibration_crops,
    _evaluation,
    _float32_runner,
    _preprocessing_of,
)
from workbench.core.models.export_measurement import image_logits
from workbench.core.runs.config import TrainConfig

# grey level of each image, by split and class; 'a' is 3 of 5 training images, 1 of 3
# validation images
LEVELS = {"train": {"a": (10, 20, 30), "b": (40, 50)}, "val": {"a": (100,), "b": (120, 140)}}


def _folder_and_model(root: Path) -> tuple[TrainConfig, Path]:
    for split, classes in LEVELS.items():
        for name, levels in classes.items():
            (root / "data" / split / name).mkdir(parents=True)
            for level in levels:
                Image.new("L", (32, 32), level).save(root / "data" / split / name / f"{level}.png")
    config = TrainConfig(data_root=str(root / "data"), model="small_cnn", weights="none",
                         finetune="full", crop_mode="standard", resize_size=28, crop_size=28,
                         cache_dir=str(root / "cache"))
    model = SmallCNN(2)
    with torch.no_grad():  # logits (1, 0) for every image: class 'a' always
        model.fc.weight.zero_()
        model.fc.bias.copy_(torch.tensor([1.0, 0.0]))
    path = root / "best_model.pt"
    write_workbench_file(model_file_data(model, ["a", "b"], config, 1, 0.0), path)
    return config, path


def test_int8_is_calibrated_on_the_training_images_and_measured_on_the_validation_ones(
        tmp_path: Path) -> None:
    config, model_file = _folder_and_model(tmp_path)
    model, class_names, _ = load_model_file(model_file)
    preprocessing = _preprocessing_of(config)
    crops = _calibration_crops(config, class_names, preprocessing)
    # One flat crop from each training image, none from a validation image.
    assert crops.shape == (5, 1, 28, 28)
    assert all(np.unique(crop).size == 1 for crop in crops)
    assert sorted(int(crop.flat[0]) for crop in crops) == [10, 20, 30, 40, 50]

    images, evaluation = _evaluation(config, class_names, preprocessing, "val")
    assert sorted(Path(path).relative_to(config.data_root).as_posix()
                  for path, _ in images.samples) == ["val/a/100.png", "val/b/120.png",
                                                     "val/b/140.png"]
    assert evaluation == f"3 validation images of {config.data_root}"
    # The accuracy figure of those images: one 'a' of three (the training split: 3/5).
    (logits,), labels = image_logits((_float32_runner(model, config),), images)
    assert float((logits.argmax(1) == labels).mean()) == 1 / 3
