"""Where an epoch's batches come from: cached features first, then device images, then loaders."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from workbench.core.data.device_images import DeviceImages, DeviceImageSet
from workbench.core.data.transforms import CenterCrop, RandomResizedCropFlip
from workbench.core.training.batch_sources import BatchSources
from workbench.core.training.feature_cache import CachedFeatures
from workbench.core.training.session_setup import epoch_seed


def _loader(count: int) -> DataLoader:
    images = torch.randint(0, 256, (count, 3, 8, 8), dtype=torch.uint8)
    return DataLoader(TensorDataset(images, torch.arange(count) % 2), batch_size=2)


def _device_images(train: int, val: int) -> DeviceImageSet:
    generator = torch.Generator().manual_seed(0)

    def split(count: int) -> DeviceImages:
        pixels = torch.randint(0, 256, (count, 3, 10, 10), dtype=torch.uint8,
                               generator=generator)
        return DeviceImages(pixels, torch.arange(count) % 2)

    return DeviceImageSet(split(train), split(val), RandomResizedCropFlip(8, 0.5), CenterCrop(8))


def _extract_means(batches) -> CachedFeatures:
    """A stand-in backbone: each image's mean pixel as its one feature (one crop)."""
    features, labels = [], []
    for images, batch_labels in batches:
        features.append(images.float().mean(dim=(1, 2, 3)).reshape(-1, 1, 1))
        labels.append(batch_labels)
    return CachedFeatures(torch.cat(features), torch.cat(labels))


def test_without_device_images_the_loaders_are_the_source():
    sources = BatchSources("cpu", None)
    train, val = _loader(5), _loader(3)
    epoch = sources.train_epoch(train, seed=0, epoch=0, batch_size=2, sample_weights=None)
    assert not epoch.features and epoch.steps == 3
    assert [len(labels) for _, labels in epoch.batches] == [2, 2, 1]
    assert sources.val_epoch(val, batch_size=2).steps == 2


def test_device_images_are_cropped_by_seed_and_epoch_and_count_their_own_steps():
    sources = BatchSources("cpu", _device_images(train=5, val=3))
    loader = _loader(20)  # not read while the images are on the device

    def crops(epoch: int) -> torch.Tensor:
        batches = sources.train_epoch(loader, 7, epoch, 2, None)
        assert not batches.features and batches.steps == 3
        return torch.cat([images for images, _ in batches.batches])

    assert crops(1).shape == (5, 3, 8, 8)
    assert torch.equal(crops(1), crops(1)) and not torch.equal(crops(1), crops(2))
    val = sources.val_epoch(loader, batch_size=2)
    assert val.steps == 2 and sum(len(labels) for _, labels in val.batches) == 3


def test_cached_features_replace_the_device_images_and_keep_the_epoch_order():
    images = _device_images(train=6, val=4)
    sources = BatchSources("cpu", images)
    cached = sources.cache_features(_extract_means, _loader(1), _loader(1), batch_size=4,
                                    train_too=True)
    assert cached == 10 and sources.device_images is None
    epoch = sources.train_epoch(_loader(1), seed=3, epoch=2, batch_size=4, sample_weights=None)
    assert epoch.features and epoch.steps == 2
    features = torch.cat([batch for batch, _ in epoch.batches]).flatten()
    # The same shuffle as the epoch would give the images: the epoch's shuffle seed.
    order = torch.randperm(6, generator=torch.Generator().manual_seed(
        epoch_seed(3, 2, "shuffle")))
    assert torch.equal(features, sources.cached_train.features.flatten()[order])
    assert sources.val_epoch(_loader(1), batch_size=4).features


def test_random_training_crops_cache_only_validation_features():
    sources = BatchSources("cpu", _device_images(train=6, val=4))
    assert sources.cache_features(_extract_means, _loader(1), _loader(1), 4,
                                  train_too=False) == 4
    assert sources.cached_train is None and sources.device_images is not None
    assert not sources.train_epoch(_loader(1), 0, 0, 4, None).features
    assert sources.val_epoch(_loader(1), 4).features


def test_a_cancelled_extraction_reports_none():
    sources = BatchSources("cpu", None)
    assert sources.cache_features(lambda batches: None, _loader(4), _loader(2), 2, True) is None
    assert sources.cached_train is None and sources.cached_val is None
