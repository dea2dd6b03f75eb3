"""How much memory a device has and uses, and handing cached memory back after a failure.

CUDA-only figures are None on the CPU, never a crash.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

import torch


def memory_total(device: str) -> int | None:
    if device.startswith("cuda"):
        return torch.cuda.get_device_properties(torch.device(device)).total_memory
    return None


@dataclass(frozen=True)
class MemoryStats:
    allocated: int | None
    reserved: int | None
    peak: int | None
    total: int | None
    process_rss: int | None


def memory_stats(device: str) -> MemoryStats:
    """Allocator figures on CUDA; on the CPU only the process's resident memory."""
    rss = process_rss()
    if device.startswith("cuda"):
        dev = torch.device(device)
        return MemoryStats(
            torch.cuda.memory_allocated(dev),
            torch.cuda.memory_reserved(dev),
            torch.cuda.max_memory_allocated(dev),
            memory_total(device),
            rss,
        )
    return MemoryStats(None, None, None, None, rss)


def process_rss() -> int | None:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:
        return None


def free_device_memory(device: str) -> None:
    """Return the memory a failed step held to the device, once nothing refers to it any more.

    Call this outside the ``except`` block that caught the error: inside it, the traceback's
    frames still hold the step's activations and gradients.

    Only a CUDA device needs the forced collection: the CPU gets its memory back as soon as the
    references go. A collection forced here runs on the training thread, where it can meet Qt
    objects awaiting deletion and deadlock with the UI thread, so it is not forced for nothing.
    """
    if device.startswith("cuda") and torch.cuda.is_available():
        gc.collect()
        torch.cuda.empty_cache()
