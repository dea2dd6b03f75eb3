"""torchrun support: the same run on several GPUs (or CPU processes) with DistributedDataParallel.

``torchrun --nproc_per_node=N -m workbench train --config run.json`` sets WORLD_SIZE, RANK and
LOCAL_RANK; each process trains on its share of every epoch, gradients are averaged, and only
rank 0 writes the run folder and reports events.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

from workbench.core.data_pipeline import loader_like


@dataclass(frozen=True)
class DistributedContext:
    world_size: int = 1
    rank: int = 0
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> DistributedContext:
        return cls(
            int(os.environ.get("WORLD_SIZE", "1")),
            int(os.environ.get("RANK", "0")),
            int(os.environ.get("LOCAL_RANK", "0")),
        )

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def device_for(self, resolved: str) -> str:
        """One GPU per process: cuda:LOCAL_RANK when the run is on CUDA."""
        if self.enabled and resolved.startswith("cuda"):
            return f"cuda:{self.local_rank}"
        return resolved

    def initialise(self, device: str) -> None:
        if not self.enabled or dist.is_initialized():
            return
        if device.startswith("cuda"):
            torch.cuda.set_device(torch.device(device))
        dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")

    def wrap(self, model: nn.Module, device: str) -> nn.Module:
        if not self.enabled:
            return model
        ids = [torch.device(device).index] if device.startswith("cuda") else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def shard_loader(self, loader: DataLoader, seed: int) -> DataLoader:
        """The same loader settings, each process reading its own part of the shuffled data."""
        if not self.enabled:
            return loader
        sampler = DistributedSampler(
            loader.dataset, num_replicas=self.world_size, rank=self.rank, shuffle=True, seed=seed
        )
        return loader_like(loader, sampler=sampler)

    def barrier(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.barrier()

    def shutdown(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


def set_epoch(loader: DataLoader, epoch: int, seed: int) -> None:
    """Make epoch ``epoch``'s shuffle depend only on (seed, epoch), so a resumed run matches."""
    sampler = loader.sampler
    if isinstance(sampler, DistributedSampler):
        sampler.set_epoch(epoch)
        return
    if loader.generator is not None:
        loader.generator.manual_seed(seed + epoch)
    generator = getattr(sampler, "generator", None)
    if isinstance(generator, torch.Generator):
        generator.manual_seed(seed + epoch)
