"""The standard training crop cuts the original image (or a copy large enough), as torchvision's
reference recipe does, not the image already resized for validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torchvision.transforms.v2 import functional as tvf

from workbench.core.data.data_pipeline import build_data_pipeline
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.transforms import train_source_size
from workbench.core.runs.config import TrainConfig


def _textured_folder(root: Path, size: tuple[int, int]) -> Path:
    rng = np.random.default_rng(0)
    for split in ("train", "val"):
        for name in ("a", "b"):
            folder = root / split / name
            folder.mkdir(parents=True)
            for index in range(2):
                pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
                Image.fromarray(pixels).save(folder / f"{index}.png")
    return root


def _config(root: Path, tmp_path: Path, **changes) -> TrainConfig:
    return TrainConfig(data_root=str(root), model="resnet18", weights="none", finetune="full",
                       crop_mode="standard", resize_size=40, crop_size=32, batch_size=2,
                       workers=0, cache_dir=str(tmp_path / "cache")).replace(**changes)


def test_the_source_is_large_enough_for_the_smallest_crop_at_any_allowed_ratio():
    config = TrainConfig(crop_mode="standard", crop_size=224, crop_scale_min=0.08)
    assert train_source_size(config) == (915, False)  # 224 / sqrt(0.08 * 3/4) = 914.4
    narrow = config.replace(crop_scale_min=0.25, crop_ratio_min=0.5, crop_ratio_max=1.0)
    assert train_source_size(narrow) == (634, False)  # 224 / sqrt(0.25 * 0.5) = 633.6
    assert train_source_size(config.replace(crop_mode="five_crop")) == (256, True)


def test_training_images_are_decoded_at_the_source_size_and_never_enlarged(tmp_path):
    large = _textured_folder(tmp_path / "large", (400, 300))
    config = _config(large, tmp_path, crop_scale_min=0.25)  # 32 / sqrt(0.25 * 0.75) -> 74
    pipeline = build_data_pipeline(config, scan_dataset(config.data_root), "cpu")
    train_image, _ = pipeline.train_loader.dataset._load(0)
    val_image, _ = pipeline.val_loader.dataset._load(0)
    assert tuple(train_image.shape) == (3, 74, 98)
    assert tuple(val_image.shape) == (3, 40, 53)

    small = _textured_folder(tmp_path / "small", (60, 50))
    config = _config(small, tmp_path)
    pipeline = build_data_pipeline(config, scan_dataset(config.data_root), "cpu")
    train_image, _ = pipeline.train_loader.dataset._load(0)
    assert tuple(train_image.shape) == (3, 50, 60)  # the original: 131 would enlarge it


def test_a_training_crop_is_torchvisions_resized_crop_of_the_original_image(tmp_path):
    root = _textured_folder(tmp_path / "data", (60, 50))
    config = _config(root, tmp_path, cache_dir="")
    pipeline = build_data_pipeline(config, scan_dataset(config.data_root), "cpu")
    dataset = pipeline.train_loader.dataset
    path = dataset.samples[0][0]
    original = torch.from_numpy(np.array(Image.open(path))).permute(2, 0, 1).contiguous()
    image, _ = dataset._load(0)
    generator = torch.Generator().manual_seed(3)
    for _ in range(5):
        draws = dataset.transform.draw(image, generator)
        crop = dataset.transform.apply(image, draws)
        left, top, width, height = draws.box(0)
        expected = tvf.resized_crop(original, top, left, height, width, [32, 32],
                                    antialias=True)
        if bool(draws.flip[0]):
            expected = expected.flip(-1)
        assert (crop.int() - expected.int()).abs().max() <= 1
