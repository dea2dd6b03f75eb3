"""Grad-CAM on both model kinds, from model files saved by this test."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms.v2.functional import five_crop

from workbench.core.data.transforms import normalization_for
from workbench.core.models.building import build_model
from workbench.core.models.checkpoint_format import model_file_data, write_workbench_file
from workbench.core.models.grad_cam import (
    grad_cam_from_model_file,
    overlay_heatmap,
    target_layer,
)
from workbench.core.runs.config import TrainConfig


@pytest.mark.parametrize("model_name", ["resnet18", "small_cnn"])
def test_grad_cam_of_a_saved_model(tmp_path, model_name):
    torch.manual_seed(0)
    config = TrainConfig(model=model_name, weights="none", resize_size=48, crop_size=40,
                         crop_mode="five_crop")
    model = build_model(config, 3).eval()
    model_file = tmp_path / "best_model.pt"
    write_workbench_file(model_file_data(model, ["a", "b", "c"], config, 1, 0.5), model_file)
    image = tmp_path / "wide.png"
    pixels = np.zeros((48, 72, 3), np.uint8)
    pixels[8:30, 10:40] = (250, 200, 30)
    Image.fromarray(pixels).save(image)

    cam = grad_cam_from_model_file(model_file, image)

    assert cam.image.shape == (48, 72, 3) and cam.heatmap.shape == (48, 72)
    assert cam.heatmap.min() >= 0 and cam.heatmap.max() == pytest.approx(1.0)
    mean, std = normalization_for(config)
    grey = config.in_channels == 1
    source = torch.from_numpy(cam.image[:, :, :1] if grey else cam.image).permute(2, 0, 1)
    # The class and probability are the run's prediction, as predictions.csv has them: the
    # logits of the config's five 40 px crops (torchvision's five_crop) averaged.
    crops = torch.stack(five_crop(source, [40, 40]))
    inputs = (crops.float() / 255 - torch.tensor(mean).view(1, -1, 1, 1)) \
        / torch.tensor(std).view(1, -1, 1, 1)
    with torch.no_grad():
        probabilities = model(inputs).mean(dim=0).softmax(dim=0)
    assert cam.class_name == "abc"[int(probabilities.argmax())]
    assert cam.probability == pytest.approx(float(probabilities.max()), abs=1e-5)
    other = grad_cam_from_model_file(model_file, image, class_name="abc".replace(
        cam.class_name, "")[0])
    assert other.class_name != cam.class_name
    assert not np.allclose(other.heatmap, cam.heatmap)


def test_target_layers():
    resnet = build_model(TrainConfig(model="resnet18", weights="none"), 2)
    assert target_layer(resnet) is resnet.layer4
    small = build_model(TrainConfig(model="small_cnn", weights="none"), 2)
    assert target_layer(small) is small.features[4]


def test_overlay_is_blue_where_cold_and_red_where_hot():
    image = np.full((2, 2, 3), 128, np.uint8)
    heat = np.array([[0.0, 0.0], [1.0, 1.0]], np.float32)
    blended = overlay_heatmap(image, heat, alpha=1.0)
    assert blended[0, 0, 2] > 100 and blended[0, 0, 0] == 0  # cold: blue
    assert blended[1, 0, 0] > 100 and blended[1, 0, 2] == 0  # hot: red
