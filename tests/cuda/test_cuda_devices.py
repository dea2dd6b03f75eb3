"""The device side of a CUDA run: normalisation on the device, pinned non_blocking copies,
channels_last, memory figures growing with the batch, and NVML figures of the card in use."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.devices.gpu_monitor import GpuMonitor, nvml_free_memory, nvml_handle
from workbench.core.devices.memory import memory_stats
from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning.batch_size_finder import TrainingStepProbe

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def _images(batch: int = 6, crops: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (batch, crops, 3, 24, 24), dtype=torch.uint8,
                           generator=generator)
    return images, torch.arange(batch)


def test_normalisation_on_the_device_equals_the_cpu_path():
    images, labels = _images()
    on_cpu, cpu_labels = BatchPreparer(MEAN, STD, "cpu", channels_last=False)(images, labels)
    on_gpu, gpu_labels = BatchPreparer(MEAN, STD, "cuda:0", channels_last=False)(images, labels)
    assert on_gpu.device.type == "cuda" and on_gpu.shape == (30, 3, 24, 24)
    torch.testing.assert_close(on_gpu.cpu(), on_cpu, atol=1e-5, rtol=1e-5)
    assert torch.equal(gpu_labels.cpu(), cpu_labels)


def test_pinned_non_blocking_copies_in_channels_last_give_the_same_numbers():
    images, labels = _images()
    pinned = images.pin_memory()
    assert pinned.is_pinned()
    preparer = BatchPreparer(MEAN, STD, "cuda:0", channels_last=True, non_blocking=True)
    assert preparer.non_blocking
    out, _ = preparer(pinned, labels.pin_memory())
    torch.cuda.synchronize()
    assert out.is_contiguous(memory_format=torch.channels_last)
    expected, _ = BatchPreparer(MEAN, STD, "cpu", channels_last=False)(images, labels)
    torch.testing.assert_close(out.cpu(), expected, atol=1e-5, rtol=1e-5)


def test_memory_figures_are_reported_and_grow_with_the_batch():
    config = TrainConfig(model="resnet18", weights="none", finetune="full", crop_size=64,
                         device="cuda:0", amp=False, channels_last=True)
    probe = TrainingStepProbe(config, 10, "cuda:0")
    small = probe(4)
    large = probe(32)
    assert small is not None and large is not None and large > small
    stats = memory_stats("cuda:0")
    assert None not in (stats.allocated, stats.reserved, stats.peak, stats.total)
    assert stats.allocated <= stats.reserved and stats.peak >= large


def test_nvml_figures_belong_to_the_card_in_use():
    found = nvml_handle("cuda:0")
    if found is None:
        pytest.skip("NVML is not available (nvidia-ml-py or the driver's libnvidia-ml)")
    nvml, handle = found
    props = torch.cuda.get_device_properties(0)
    uuid = nvml.nvmlDeviceGetUUID(handle)
    uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
    assert uuid.lower().removeprefix("gpu-") == str(props.uuid).lower().removeprefix("gpu-")
    free = nvml_free_memory("cuda:0")
    assert free is not None and 0 < free <= nvml.nvmlDeviceGetMemoryInfo(handle).total
    monitor = GpuMonitor("cuda:0", min_interval_s=0.0)
    sample = monitor.sample()
    assert monitor.available
    assert sample.temperature is not None and 0 < sample.temperature < 120
    assert sample.utilization is not None and isinstance(sample.throttle_reasons, int)



def test_nvml_free_memory_is_the_free_memory_cuda_reports():
    # The stand-in of tests/core/devices/test_nvml_memory.py against the real card: NVML's
    # free figure is CUDA's (cudaMemGetInfo counts every process too), not the total or the
    # used memory.
    if nvml_handle("cuda:0") is None:
        pytest.skip("NVML is not available (nvidia-ml-py or the driver's libnvidia-ml)")
    held = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda:0")  # 256 MiB in use
    free = nvml_free_memory("cuda:0")
    cuda_free, cuda_total = torch.cuda.mem_get_info(0)
    assert free is not None and free < cuda_total - held.numel()
    assert abs(free - cuda_free) < 64 * 2**20, (free, cuda_free, cuda_total)


CHILD = """
import sys, torch
from workbench.core.devices.gpu_monitor import nvml_handle
nvml, handle = nvml_handle("cuda:0")
uuid = nvml.nvmlDeviceGetUUID(handle)
print(uuid.decode() if isinstance(uuid, bytes) else uuid)
"""


def test_behind_cuda_visible_devices_the_monitor_reads_the_visible_card():
    found = nvml_handle("cuda:0")
    if found is None:
        pytest.skip("NVML is not available")
    nvml = found[0]
    count = nvml.nvmlDeviceGetCount()
    if count < 2:
        pytest.skip("needs two GPUs to hide the first")
    last = nvml.nvmlDeviceGetHandleByIndex(count - 1)
    expected = nvml.nvmlDeviceGetUUID(last)
    expected = expected.decode() if isinstance(expected, bytes) else expected
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=expected)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected
