"""Frozen-backbone features computed once, so last-layer epochs train only the head.

When the backbone is frozen (BatchNorm in eval) and the crops are deterministic (five/ten crop),
every epoch would push the same pixels through the same backbone; computing its features once
gives bit-for-bit the same head inputs at a small fraction of the cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DataLoader

from workbench.core.data.data_pipeline import loader_like
from workbench.core.runs.control import RunControl

Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass
class CachedFeatures:
    """Backbone outputs ``[N, K, F]`` (K crops per sample) and labels ``[N]``."""

    features: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def nbytes(self) -> int:
        return self.features.element_size() * self.features.nelement()


def unshuffled_loader(loader: DataLoader) -> DataLoader:
    """The same dataset and worker settings as ``loader``, in file order, every sample once."""
    return loader_like(loader, persistent_workers=False)


@torch.no_grad()
def extract_features(
    backbone: nn.Module,
    batches: Iterator[Batch] | DataLoader,
    prepare: Callable[[torch.Tensor, torch.Tensor], Batch],
    crops: int,
    amp_context: Callable[[], torch.autocast],
    control: RunControl,
    storage_device: str,
) -> CachedFeatures | None:
    """Run every batch through the backbone once; None if the run was cancelled meanwhile."""
    was_training = backbone.training
    backbone.eval()
    chunks: list[torch.Tensor] = []
    label_chunks: list[torch.Tensor] = []
    try:
        for raw_inputs, raw_labels in batches:
            if not control.wait_while_paused():
                return None
            inputs, labels = prepare(raw_inputs, raw_labels)
            with amp_context():
                features = backbone(inputs)
            features = features.float().reshape(labels.shape[0], crops, -1)
            chunks.append(features.to(storage_device))
            label_chunks.append(labels.to(storage_device))
    finally:
        backbone.train(was_training)
    if not chunks:
        return None
    return CachedFeatures(torch.cat(chunks), torch.cat(label_chunks))


def feature_batches(
    cached: CachedFeatures,
    batch_size: int,
    device: str,
    order: torch.Tensor | None = None,
) -> Iterator[Batch]:
    """Batches of cached features (flattened to ``[B*K, F]`` like images) in the given order."""
    indices = order if order is not None else torch.arange(len(cached))
    for start in range(0, len(indices), batch_size):
        chosen = indices[start:start + batch_size].to(cached.features.device)
        features = cached.features.index_select(0, chosen)
        labels = cached.labels.index_select(0, chosen)
        yield (
            features.flatten(0, 1).to(device, non_blocking=True),
            labels.to(device, non_blocking=True),
        )


def epoch_order(
    size: int, seed: int, sample_weights: torch.Tensor | None = None
) -> torch.Tensor:
    """A seeded shuffle, or a seeded weighted draw with replacement for the weighted sampler."""
    generator = torch.Generator().manual_seed(seed)
    if sample_weights is not None:
        return torch.multinomial(sample_weights, size, replacement=True, generator=generator)
    return torch.randperm(size, generator=generator)
