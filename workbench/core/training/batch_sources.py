"""Where each epoch's batches come from, best first: cached backbone features (only the head
trains), images kept on the device (cropped there), or the loaders.

The session owns the loaders and the models; this chooses the source and says whether its
batches are features (the head takes them as they are) or uint8 images (prepared, then the
whole model).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader

from workbench.core.data.device_images import DeviceImageSet
from workbench.core.training.feature_cache import (
    Batch,
    CachedFeatures,
    epoch_order,
    feature_batches,
    unshuffled_loader,
)
from workbench.core.training.session_setup import epoch_seed

Extract = Callable[[Iterable[Batch]], CachedFeatures | None]


@dataclass
class EpochBatches:
    """One pass of batches: how many steps it takes and whether they are cached features."""

    batches: Iterable[Batch]
    steps: int
    features: bool


class BatchSources:
    """The images kept on the device (if any) and the cached features (once computed).

    Args:
        device: where the model runs; cached features are moved there batch by batch.
        device_images: both splits kept on the device, or None to read through the loaders.
    """

    def __init__(self, device: str, device_images: DeviceImageSet | None) -> None:
        self.device = device
        self.device_images = device_images
        self.cached_train: CachedFeatures | None = None
        self.cached_val: CachedFeatures | None = None

    def cache_features(self, extract: Extract, train_loader: DataLoader, val_loader: DataLoader,
                       batch_size: int, train_too: bool) -> int | None:
        """Compute backbone features once with ``extract``: of the validation images, and of
        the training images when ``train_too`` (their crops are the same every epoch).

        Returns:
            How many images' features were cached, or None if the run was cancelled meanwhile.
        """
        images = self.device_images
        if train_too:
            train = (images.train_batches(torch.arange(len(images.train)), batch_size, seed=0)
                     if images is not None else unshuffled_loader(train_loader))
            self.cached_train = extract(train)
            if self.cached_train is None:
                return None
        val = images.val_batches(batch_size) if images is not None else val_loader
        self.cached_val = extract(val)
        if self.cached_val is None:
            return None
        if self.cached_train is not None:
            self.device_images = None  # every epoch now reads the features instead
        return len(self.cached_val) + (len(self.cached_train) if self.cached_train else 0)

    def train_epoch(self, loader: DataLoader, seed: int, epoch: int, batch_size: int,
                    sample_weights: torch.Tensor | None) -> EpochBatches:
        """The training batches of ``epoch`` (0-based); their order and crops depend on
        (seed, epoch) only, so a resumed run sees the same ones."""
        if self.cached_train is not None:
            order = epoch_order(len(self.cached_train), epoch_seed(seed, epoch, "shuffle"),
                                sample_weights)
            return EpochBatches(feature_batches(self.cached_train, batch_size, self.device, order),
                                math.ceil(len(self.cached_train) / batch_size), features=True)
        if self.device_images is not None:
            images = self.device_images.train
            order = epoch_order(len(images), epoch_seed(seed, epoch, "shuffle"), sample_weights)
            batches = self.device_images.train_batches(order, batch_size,
                                                       epoch_seed(seed, epoch, "crops"))
            return EpochBatches(batches, math.ceil(len(images) / batch_size), features=False)
        return EpochBatches(iter(loader), len(loader), features=False)

    def val_epoch(self, loader: DataLoader, batch_size: int) -> EpochBatches:
        """Every validation batch, in order."""
        if self.cached_val is not None:
            return EpochBatches(feature_batches(self.cached_val, batch_size, self.device),
                                math.ceil(len(self.cached_val) / batch_size), features=True)
        if self.device_images is not None:
            batches = self.device_images.val_batches(batch_size)
            return EpochBatches(batches, math.ceil(len(self.device_images.val) / batch_size),
                                features=False)
        return EpochBatches(iter(loader), len(loader), features=False)
