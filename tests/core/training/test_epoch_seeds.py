"""An epoch's draws depend on (seed, epoch) only, and runs of different seeds do not share them:
with ``seed + epoch`` the run of seed 1 shuffled and cropped its first epoch exactly as the run
of seed 0 did its second, so a benchmark's seeds were one run shifted by an epoch."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from workbench.core.data.device_images import DeviceImages, DeviceImageSet
from workbench.core.data.transforms import CenterCrop, RandomResizedCropFlip
from workbench.core.training.batch_sources import BatchSources
from workbench.core.training.distributed import set_epoch
from workbench.core.training.session_setup import EPOCH_DRAWS, epoch_seed


def test_seeds_are_repeatable_distinct_and_fit_a_torch_generator():
    seeds = {(seed, epoch, draw): epoch_seed(seed, epoch, draw)
             for seed in range(20) for epoch in range(50) for draw in EPOCH_DRAWS}
    assert len(set(seeds.values())) == len(seeds) == 3000  # no two draws of any runs share one
    assert all(0 <= value < 2**63 for value in seeds.values())
    assert epoch_seed(3, 7, "crops") == seeds[(3, 7, "crops")]  # a resumed run gets the same
    torch.Generator().manual_seed(max(seeds.values()))
    with pytest.raises(ValueError, match="unknown draw 'crop'"):
        epoch_seed(0, 0, "crop")


def _device_sources() -> BatchSources:
    pixels = torch.randint(0, 256, (12, 3, 10, 10), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(0))
    images = DeviceImages(pixels, torch.arange(12))  # label = index: the batch shows the order
    return BatchSources("cpu", DeviceImageSet(images, images, RandomResizedCropFlip(8, 0.5),
                                              CenterCrop(8)))


def _epoch(sources: BatchSources, seed: int, epoch: int) -> tuple[list[int], torch.Tensor]:
    loader = DataLoader(TensorDataset(torch.zeros(1)))  # not read: the images are on the device
    batches = list(sources.train_epoch(loader, seed, epoch, batch_size=12, sample_weights=None)
                   .batches)
    return batches[0][1].tolist(), batches[0][0]


def test_the_next_seeds_first_epoch_is_not_this_seeds_second():
    sources = _device_sources()
    order_a, crops_a = _epoch(sources, seed=0, epoch=1)
    order_b, crops_b = _epoch(sources, seed=1, epoch=0)
    assert order_a != order_b
    # The same images in the same order still get other crops.
    sources_b = _device_sources()
    same_order = [crops_b[order_b.index(i)] for i in order_a]
    assert not torch.equal(crops_a, torch.stack(same_order))
    # And the same (seed, epoch) draws the same again, as a resumed run must.
    order_again, crops_again = _epoch(sources_b, seed=0, epoch=1)
    assert order_again == order_a and torch.equal(crops_again, crops_a)


def _shuffled_loader(seed: int, sampler: DistributedSampler | None = None) -> DataLoader:
    data = TensorDataset(torch.arange(40))
    if sampler is not None:
        return DataLoader(data, batch_size=40, sampler=sampler)
    return DataLoader(data, batch_size=40, shuffle=True, generator=torch.Generator())


def _order(loader: DataLoader, seed: int, epoch: int) -> list[int]:
    set_epoch(loader, epoch, seed)
    return torch.cat([batch for (batch,) in loader]).tolist()


def test_a_loaders_shuffle_differs_between_seeds_at_shifted_epochs():
    assert _order(_shuffled_loader(0), seed=0, epoch=1) != _order(_shuffled_loader(1), 1, 0)
    assert _order(_shuffled_loader(0), 0, 1) == _order(_shuffled_loader(0), 0, 1)
    assert sorted(_order(_shuffled_loader(0), 0, 1)) == list(range(40))


def test_torchrun_processes_share_one_shuffle_that_differs_between_seeds():
    def shard(seed: int, epoch: int, rank: int) -> list[int]:
        sampler = DistributedSampler(TensorDataset(torch.arange(40)), num_replicas=2, rank=rank,
                                     shuffle=True, seed=seed)
        return _order(_shuffled_loader(seed, sampler), seed, epoch)

    first, second = shard(0, 1, rank=0), shard(0, 1, rank=1)
    assert sorted(first + second) == list(range(40))  # each process reads its own half
    assert shard(0, 1, rank=0) == first  # the same again on a resume
    assert shard(1, 0, rank=0) != first  # seed 1's first epoch is not seed 0's second
    assert shard(0, 2, rank=0) != first
