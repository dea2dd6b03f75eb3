"""Real transparent clip art (RGBA, LA, palette with per-entry and with one transparent index)
looks the same in every view: training's decoding, the preview, the thumbnails, prediction,
Grad-CAM, the health check and the run report all see the drawing over the same grey.

The expected pixels are composited here by hand, in floating point, from the file's own RGBA
values: ``alpha * colour + (1 - alpha) * 128``. The drawings are smaller than every view's
size, so no view resizes them and each must give those pixels (within one level of rounding).
Pillow's warnings are errors here: a view that converts a palette image with per-entry
transparency straight to RGB (dropping the transparency) is caught by Pillow's own warning too.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from workbench.core.data.five_crop_preview import five_crop_preview
from workbench.core.data.health.image_facts import image_facts
from workbench.core.data.image_cache import load_image_uint8
from workbench.core.models.building import build_model
from workbench.core.models.grad_cam import grad_cam_for_image
from workbench.core.models.prediction import image_crops
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.run_report import _thumbnail
from workbench.gui.widgets.thumbnail_browser import decode_thumbnail

CLIPART = Path("/usr/share/openclipart/png")
# (file, its mode and kind of transparency as shipped): line art on transparent pages whose
# hidden pixels are black, so black and grey backgrounds differ by 128 levels.
DRAWINGS = {
    "rgba": ("shapes/as_pique_jean_victor_bal_.png", "RGBA"),
    "la": ("shapes/airplane_nicu_buculei_01.png", "LA"),
    "palette_alpha_bytes": ("shapes/as_coeur_jean_victor_bal_.png", "P"),
    "palette_one_index": ("special/patterns/pattern-checkers-2.png", "P"),
}
GREY = 128.0

pytestmark = [
    pytest.mark.skipif(not CLIPART.is_dir(), reason="openclipart-png is not installed"),
    pytest.mark.filterwarnings("error"),
]


def _by_hand(path: Path) -> np.ndarray:
    """HxWx3 float: the file's colours over mid grey, weighted by its alpha."""
    with Image.open(path) as image:
        rgba = np.asarray(image.convert("RGBA"), dtype=np.float64)
    alpha = rgba[..., 3:] / 255.0
    return alpha * rgba[..., :3] + (1.0 - alpha) * GREY


def _assert_same(seen: np.ndarray, expected: np.ndarray, view: str) -> None:
    assert seen.shape == expected.shape, view
    worst = np.abs(seen.astype(np.float64) - expected).max()
    assert worst <= 1.0, f"{view}: off by up to {worst:.0f} levels from the drawing over grey"


@pytest.fixture(scope="module")
def drawings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("clipart")
    copies = {}
    for kind, (name, mode) in DRAWINGS.items():
        copy = folder / f"{kind}.png"
        shutil.copyfile(CLIPART / name, copy)
        with Image.open(copy) as image:
            assert image.mode == mode, kind  # the kind of file this case stands for
            if kind == "palette_alpha_bytes":
                assert isinstance(image.info["transparency"], bytes)
            if kind == "palette_one_index":
                assert isinstance(image.info["transparency"], int)
        alpha = np.asarray(Image.open(copy).convert("RGBA"))[..., 3]
        assert (alpha == 0).mean() > 0.3  # mostly transparent page
        copies[kind] = copy
    return copies


def _config(path: Path) -> TrainConfig:
    """A run that keeps the drawing's own size: shorter side and crop equal to it."""
    with Image.open(path) as image:
        side = min(image.size)
    return TrainConfig(model="resnet18", weights="none", finetune="full",
                       crop_mode="standard", resize_size=side, crop_size=side)


def _centre(pixels: np.ndarray, side: int) -> np.ndarray:
    height, width = pixels.shape[:2]
    top, left = int(round((height - side) / 2.0)), int(round((width - side) / 2.0))
    return pixels[top:top + side, left:left + side]


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(TrainConfig(model="resnet18", weights="none", finetune="full"), 2)


@pytest.mark.parametrize("kind", DRAWINGS)
def test_training_preview_thumbnails_prediction_and_grad_cam_see_the_drawing_over_grey(
        kind: str, drawings: dict[str, Path], model: torch.nn.Module) -> None:
    path = drawings[kind]
    expected = _by_hand(path)
    config = _config(path)

    training = load_image_uint8(str(path), config.resize_size).permute(1, 2, 0).numpy()
    _assert_same(training, expected, "training")

    preview = five_crop_preview(str(path), config)
    _assert_same(preview.val.resized, expected, "preview")

    _assert_same(decode_thumbnail(str(path), max(expected.shape[:2])), expected, "thumbnail")

    preprocessing = {"model": config.model, "crop_mode": "standard", "in_channels": 3,
                     "resize_size": config.resize_size, "crop_size": config.crop_size}
    crops = image_crops(path, preprocessing)
    _assert_same(crops[0].permute(1, 2, 0).numpy(), _centre(expected, config.crop_size),
                 "prediction")

    cam = grad_cam_for_image(model, ["a", "b"], config, path)
    _assert_same(cam.image, expected, "Grad-CAM")


@pytest.mark.parametrize("kind", DRAWINGS)
def test_the_health_check_measures_the_pixels_training_decodes(
        kind: str, drawings: dict[str, Path]) -> None:
    path = drawings[kind]
    training = load_image_uint8(str(path), 10_000, upscale=False).permute(1, 2, 0).numpy()
    _assert_same(training, _by_hand(path), "training")
    facts = image_facts(str(path))
    assert facts.error is None
    height, width = training.shape[:2]
    digest = hashlib.sha1(np.ascontiguousarray(training).tobytes())
    digest.update(f"{width}x{height}".encode())
    assert facts.pixel_digest == digest.hexdigest()


@pytest.mark.parametrize("kind", DRAWINGS)
def test_the_run_report_draws_the_drawing_over_the_same_grey(
        kind: str, drawings: dict[str, Path]) -> None:
    path = drawings[kind]
    tag = _thumbnail(str(path))
    data = re.search(r"src='data:image/png;base64,([^']+)'", tag)
    assert data is not None, tag
    with Image.open(io.BytesIO(base64.b64decode(data.group(1)))) as image:
        drawn = np.asarray(image.convert("RGB"))
    _assert_same(drawn, _by_hand(path), "run report")
