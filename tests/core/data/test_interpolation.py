"""The ``interpolation`` field: every resize of the run (decode, random resized crop, cache,
prediction, export metadata) is bilinear or bicubic as the config says, and matches
torchvision's antialiased ``v2.Resize`` with that interpolation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import v2

from workbench.core.data.batched_crops import CropDraws, resized_crops
from workbench.core.data.data_pipeline import build_data_pipeline
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.image_cache import cache_path, load_image_uint8
from workbench.core.data.image_decoding import decode_file
from workbench.core.models.prediction import image_crops
from workbench.core.runs.config import TrainConfig

MODES = {"bilinear": v2.InterpolationMode.BILINEAR, "bicubic": v2.InterpolationMode.BICUBIC}


def _write_blocks(path: Path, seed: int) -> Path:
    """160x120 of hard-edged 10 px blocks: edges where bicubic overshoots and bilinear does
    not, so the two differ plainly."""
    blocks = np.random.default_rng(seed).integers(0, 256, (12, 16, 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(blocks).resize((160, 120), Image.Resampling.NEAREST).save(path)
    return path


@pytest.fixture
def blocky_png(tmp_path) -> Path:
    return _write_blocks(tmp_path / "blocks.png", 0)


def _tensor_of(path: Path) -> torch.Tensor:
    return torch.from_numpy(np.asarray(Image.open(path).convert("RGB")).copy()).permute(2, 0, 1)


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic"])
def test_decoding_matches_torchvisions_resize_with_that_interpolation(blocky_png,
                                                                      interpolation):
    # 120 -> 80: torch's kernel resizes (less than twice the target), as v2.Resize on a tensor.
    ours = torch.from_numpy(decode_file(str(blocky_png), 80, interpolation=interpolation))
    expected = v2.Resize(80, interpolation=MODES[interpolation])(_tensor_of(blocky_png))
    assert torch.equal(ours, expected)
    # 120 -> 24: Pillow resizes (a big downscale), as v2.Resize on a Pillow image.
    ours = torch.from_numpy(decode_file(str(blocky_png), 24, interpolation=interpolation))
    with Image.open(blocky_png) as image:
        pillow = v2.Resize(24, interpolation=MODES[interpolation])(image.convert("RGB"))
    assert torch.equal(ours, torch.from_numpy(np.asarray(pillow).copy()).permute(2, 0, 1))


def test_bicubic_and_bilinear_decode_to_different_pixels(blocky_png):
    bilinear = decode_file(str(blocky_png), 80, interpolation="bilinear").astype(int)
    bicubic = decode_file(str(blocky_png), 80, interpolation="bicubic").astype(int)
    assert bilinear.shape == bicubic.shape == (3, 80, 106)
    assert (bilinear != bicubic).mean() > 0.2 and np.abs(bilinear - bicubic).max() > 10


def test_an_unknown_interpolation_is_named(blocky_png):
    with pytest.raises(ValueError, match="interpolation: 'lanczos' is not one of"):
        decode_file(str(blocky_png), 80, interpolation="lanczos")
    problems = TrainConfig(data_root=str(blocky_png.parent), interpolation="lanczos").validate()
    assert any(p.startswith("Resize interpolation (interpolation): 'lanczos' is not one of")
               for p in problems)


@pytest.mark.parametrize("box, size, flip", [((3, 5, 40, 30), 24, False),
                                             ((0, 0, 20, 18), 32, True)])
def test_random_resized_crops_match_torchvision_within_one_grey_level(box, size, flip):
    images = torch.randint(0, 256, (2, 3, 60, 50), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(1))
    top, left, height, width = box
    draws = CropDraws(*(torch.tensor([value, value]) for value in box[:4]),
                      torch.tensor([flip, flip]))
    crops = {}
    for interpolation, mode in MODES.items():
        crops[interpolation] = resized_crops(images, draws, size, interpolation)
        expected = v2.functional.resized_crop(images, top, left, height, width, [size, size],
                                              interpolation=mode, antialias=True)
        expected = expected.flip(-1) if flip else expected
        assert (crops[interpolation].int() - expected.int()).abs().max() <= 1, interpolation
        # One image alone (the loader's path) gives the same pixels as in the batch.
        alone = resized_crops(images[:1], draws.part(0, 1), size, interpolation)
        assert torch.equal(alone[0], crops[interpolation][0])
    assert (crops["bilinear"].int() - crops["bicubic"].int()).abs().max() > 5


def test_bicubic_never_reuses_cached_bilinear_pixels(blocky_png, tmp_path):
    cache = tmp_path / "cache"
    keys = {mode: cache_path(str(blocky_png), 80, False, cache, interpolation=mode)
            for mode in MODES}
    assert keys["bilinear"] != keys["bicubic"]
    bilinear = load_image_uint8(str(blocky_png), 80, cache_dir=str(cache))
    assert keys["bilinear"].is_file() and not keys["bicubic"].exists()
    bicubic = load_image_uint8(str(blocky_png), 80, cache_dir=str(cache),
                               interpolation="bicubic")
    assert torch.equal(bicubic, torch.from_numpy(
        decode_file(str(blocky_png), 80, interpolation="bicubic")))
    assert not torch.equal(bicubic, bilinear) and keys["bicubic"].is_file()


def test_the_loaders_and_prediction_use_the_interpolation(tmp_path):
    data = tmp_path / "data"
    for seed, name in enumerate(("a/0.png", "a/1.png", "b/0.png", "b/1.png")):
        _write_blocks(data / name, seed)
    config = TrainConfig(data_root=str(data), model="resnet18", weights="none",
                         finetune="full", resize_size=80, crop_size=64, workers=0,
                         cache_images=False, interpolation="bicubic", val_fraction=0.5)
    pipeline = build_data_pipeline(config, scan_dataset(data, val_fraction=0.5), "cpu")
    images, _ = next(iter(pipeline.val_loader))
    first = Path(pipeline.val_loader.dataset.samples[0][0])
    resized = v2.Resize(80, interpolation=v2.InterpolationMode.BICUBIC)(_tensor_of(first))
    expected = v2.functional.center_crop(resized, [64, 64])
    assert torch.equal(images[0], expected)

    preprocessing = {"model": "resnet18", "crop_mode": "standard", "resize_size": 80,
                     "crop_size": 64, "in_channels": 3, "interpolation": "bicubic"}
    assert torch.equal(image_crops(first, preprocessing)[0], expected)
    # An export made before the field existed was trained on bilinear pixels.
    del preprocessing["interpolation"]
    assert not torch.equal(image_crops(first, preprocessing)[0], expected)


def test_the_preview_shows_the_pixels_of_the_interpolation(blocky_png):
    from workbench.core.data.five_crop_preview import five_crop_preview

    shown = {}
    for interpolation, mode in MODES.items():
        config = TrainConfig(model="resnet18", weights="none", crop_mode="five_crop",
                             resize_size=80, crop_size=64, interpolation=interpolation)
        preview = five_crop_preview(str(blocky_png), config)
        expected = v2.Resize(80, interpolation=mode)(_tensor_of(blocky_png))
        assert np.array_equal(preview.val.resized, expected.permute(1, 2, 0).numpy())
        shown[interpolation] = preview.val.resized
    assert not np.array_equal(shown["bilinear"], shown["bicubic"])


def test_an_export_and_a_model_file_carry_the_interpolation_to_prediction(blocky_png,
                                                                          tmp_path):
    from workbench.core.models.building import build_model
    from workbench.core.models.checkpoint_format import model_file_data, write_workbench_file
    from workbench.core.models.export import export_torchscript, load_exported
    from workbench.core.models.prediction import load_classifier

    config = TrainConfig(model="small_cnn", weights="none", resize_size=40, crop_size=28,
                         interpolation="bicubic")
    model = build_model(config, 2).eval()
    model_file = tmp_path / "best_model.pt"
    write_workbench_file(model_file_data(model, ["a", "b"], config, 1, 0.5), model_file)
    export_torchscript(model, ["a", "b"], config, tmp_path / "model.pt")
    grey = torch.from_numpy(np.asarray(Image.open(blocky_png).convert("L")).copy())[None]
    resized = v2.Resize(40, interpolation=v2.InterpolationMode.BICUBIC)(grey)
    expected = v2.functional.center_crop(resized, [28, 28])
    for preprocessing in (load_exported(tmp_path / "model.pt").preprocessing,
                          load_classifier(model_file).preprocessing):
        assert preprocessing["interpolation"] == "bicubic"
        assert torch.equal(image_crops(blocky_png, preprocessing)[0], expected)
