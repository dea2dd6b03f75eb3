"""torchrun support: the same run on several GPUs (or CPU processes) with DistributedDataParallel.

``torchrun --nproc_per_node=N -m workbench train --config run.json`` sets WORLD_SIZE, RANK and
LOCAL_RANK; each process trains on its share of every epoch, gradients are averaged, and only
rank 0 writes the run folder and reports events.

``batch_size`` is per process: N processes step with a global batch of N * batch_size, and ``lr``
applies to that global batch. Epoch figures are global (``reduce_epoch`` sums every process's
share); step events stay rank 0's own, measured on its shard only, since combining them would
cost a collective per step.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

from workbench.core.data.data_pipeline import loader_like
from workbench.core.training.session_setup import epoch_seed
from workbench.core.training.steps import EpochResult

SHUTDOWN_WAIT_S = 60


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

    def environment(self, batch_size: int) -> dict[str, int]:
        """What a run's config.json records about its processes."""
        return {"world_size": self.world_size, "global_batch_size": self.world_size * batch_size}

    def start_messages(self, batch_size: int, imbalance: str) -> list[tuple[str, str]]:
        """(level, text) to say at the start of a distributed run: the batch semantics, and
        settings that work differently with several processes."""
        if not self.enabled:
            return []
        messages = [("info", (
            f"{self.world_size} processes: batch_size {batch_size} is per process, so each step "
            f"averages gradients over a global batch of {self.world_size * batch_size} (lr "
            "applies to that global batch); epoch loss and accuracy cover every process, step "
            "figures only the first process's share"))]
        if imbalance == "weighted_sampler":
            messages.append(("warning", (
                "imbalance 'weighted_sampler' is not applied under torchrun: each process reads "
                "its share of the shuffled data; use 'weighted_loss' to weight the classes")))
        return messages

    def reduce_epoch(self, result: EpochResult, device: str) -> EpochResult:
        """``result`` with loss, accuracy and samples over every process's share of the epoch.

        Every process must call this at the same point of the epoch (it is a collective).
        """
        if not self.enabled:
            return result
        sums = torch.tensor(
            [result.loss_total, result.loss_count, result.accuracy_total, result.accuracy_count,
             result.samples], dtype=torch.float64, device=device,
        )
        dist.all_reduce(sums)
        loss_total, loss_count, accuracy_total, accuracy_count, samples = sums.tolist()
        return dataclasses.replace(
            result,
            loss=loss_total / loss_count if loss_count else math.nan,
            accuracy=accuracy_total / accuracy_count if accuracy_count else math.nan,
            samples=int(samples), loss_total=loss_total, loss_count=int(loss_count),
            accuracy_total=accuracy_total, accuracy_count=int(accuracy_count),
        )

    def gather_failures(self, failures: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Every process's ``(path, reason)`` of images that failed to decode, each path once,
        rank 0's first. Every process must call this at the same point (a collective)."""
        if not self.enabled:
            return failures
        gathered: list[list[tuple[str, str]] | None] = [None] * self.world_size
        dist.all_gather_object(gathered, list(failures))
        union: dict[str, str] = {}
        for part in gathered:
            for path, reason in part or []:
                union.setdefault(path, reason)
        return list(union.items())

    def barrier(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.barrier()

    def shutdown(self) -> None:
        """Leave the process group once every process has come here. A process that tore its
        connections down while another was still finishing a collective (a run failing at the
        same point in every process) aborted the other's gloo threads ("terminate called without
        an active exception", about 1 failing run in 4). On gloo the wait is bounded: a process
        that died is reported after ``SHUTDOWN_WAIT_S`` rather than waited on forever."""
        if not (self.enabled and dist.is_initialized()):
            return
        if dist.get_backend() == "gloo":
            try:
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=SHUTDOWN_WAIT_S))
            except RuntimeError:
                pass  # a process is gone: nothing left to wait for
        dist.destroy_process_group()


def set_epoch(loader: DataLoader, epoch: int, seed: int) -> None:
    """Make epoch ``epoch``'s shuffle depend only on (seed, epoch), so a resumed run matches;
    the same in every process of a torchrun run (each then reads its own part)."""
    sampler = loader.sampler
    shuffle_seed = epoch_seed(seed, epoch, "shuffle")
    if isinstance(sampler, DistributedSampler):
        # Its own rule is seed + epoch, the overlap between seeds that epoch_seed removes.
        sampler.seed = shuffle_seed
        sampler.set_epoch(0)
        return
    if loader.generator is not None:
        loader.generator.manual_seed(shuffle_seed)
    generator = getattr(sampler, "generator", None)
    if isinstance(generator, torch.Generator):
        generator.manual_seed(shuffle_seed)
