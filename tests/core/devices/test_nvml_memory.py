"""The free memory NVML reports, read through a stand-in for pynvml whose memory record has the
real fields (total, free, used) with three different values, so reading the wrong one shows in
the sentence the memory check prints and the window shows."""

from __future__ import annotations

import sys
import types
from collections import namedtuple

import pytest
import torch

from workbench.core.devices.gpu_monitor import nvml_free_memory
from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning import memory_fit

GIB = 2**30
# pynvml's c_nvmlMemory_t fields, in its order: a 24 GiB card with 19 GiB in use.
NvmlMemory = namedtuple("NvmlMemory", ["total", "free", "used"])
CARD_MEMORY = NvmlMemory(total=24 * GIB, free=5 * GIB, used=19 * GIB)
UUID = "GPU-5f3c2a1e-8b7d-4c0a-9e21-3d6f0b8a7c11"


class _OneCardNvml:
    """pynvml of a one-GPU machine, as much of it as the memory check calls."""

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"handle{index}"

    def nvmlDeviceGetUUID(self, handle: str) -> bytes:
        return UUID.encode()

    def nvmlDeviceGetPciInfo(self, handle: str):
        return types.SimpleNamespace(busId=b"00000000:3B:00.0")

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> NvmlMemory:
        assert handle == "handle0"
        return CARD_MEMORY


@pytest.fixture
def one_card(monkeypatch):
    """CUDA device 0 is NVML's only card (pynvml is imported where it is used, so the module
    table is where to put the stand-in)."""
    monkeypatch.setitem(sys.modules, "pynvml", _OneCardNvml())
    properties = types.SimpleNamespace(uuid=UUID.removeprefix("GPU-"), pci_domain_id=0,
                                       pci_bus_id=0x3B, pci_device_id=0, total_memory=24 * GIB)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _device: properties)


def test_the_free_memory_is_nvmls_free_field(one_card) -> None:
    assert sum(CARD_MEMORY[1:]) == CARD_MEMORY.total  # free + used = total, all different
    assert nvml_free_memory("cuda:0") == 5 * GIB
    assert nvml_free_memory("cpu") is None


@pytest.fixture
def cuda_allocator(monkeypatch, one_card):
    """What the memory check asks CUDA, on a machine without one: device cuda:0, whose
    allocator holds 1.5 GiB of which 1 GiB is in use."""
    monkeypatch.setattr(memory_fit, "resolve_device", lambda _name: "cuda:0")
    zeros = torch.zeros
    monkeypatch.setattr(torch, "zeros", lambda *size, device=None, **kw: zeros(*size, **kw))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda _device=None: int(1.5 * GIB))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda _device=None: 1 * GIB)


@pytest.mark.parametrize(("peak_gib", "sentence"), [
    (3, "Batch 64 fits on cuda:0: peak 3.00 GiB of 5.50 GiB free."),
    # Between the free memory and the card's total or its used memory: it does not fit.
    (6, "Batch 64 will not fit on cuda:0: peak 6.00 GiB of 5.50 GiB free. Lower batch_size or "
        "close what else uses the GPU."),
])
def test_the_memory_check_sentence_shows_nvmls_free_memory(cuda_allocator, peak_gib,
                                                           sentence) -> None:
    # Free: NVML's 5 GiB plus the 0.5 GiB this process's allocator holds unused.
    fit = memory_fit.check_memory_fit(TrainConfig(device="cuda", batch_size=64), 10,
                                      measured_peak=peak_gib * GIB)
    assert fit.free_bytes == int(5.5 * GIB)
    assert fit.sentence == sentence
    assert fit.fits is (peak_gib == 3)
