"""Device discovery on a machine without CUDA, and writes that never leave half a file."""

from __future__ import annotations

import pytest
import torch

from workbench.core.devices.gpu_monitor import GpuMonitor
from workbench.core.devices.memory import memory_stats
from workbench.core.devices.selection import (
    DeviceError,
    cuda_unavailable_reason,
    describe_device_choice,
    environment_info,
    list_devices,
    resolve_device,
)
from workbench.core.runs.atomic_io import atomic_torch_save, atomic_write_text

needs_no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="asserts the CPU fallback")


def test_cpu_is_always_listed_last():
    devices = list_devices()
    assert devices[-1].name == "cpu" and not devices[-1].is_cuda
    assert all(d.is_cuda and d.total_memory and d.capability for d in devices[:-1])


@needs_no_cuda
def test_without_cuda_the_reason_is_said_plainly():
    reason = cuda_unavailable_reason()
    assert reason and ("driver" in reason or "CPU-only" in reason or "CUDA" in reason)
    sentence = describe_device_choice("auto")
    assert sentence.startswith("Training will use the CPU, because CUDA is unavailable")
    assert resolve_device("auto") == "cpu"
    with pytest.raises(DeviceError, match="cuda:0 was chosen but CUDA is unavailable"):
        resolve_device("cuda:0")
    assert describe_device_choice("cuda:0").startswith("Cannot train on cuda:0")


def test_cuda_only_figures_are_none_on_the_cpu():
    stats = memory_stats("cpu")
    assert stats.allocated is None and stats.reserved is None and stats.total is None
    assert stats.process_rss and stats.process_rss > 0
    monitor = GpuMonitor("cpu")
    assert not monitor.available
    sample = monitor.sample()
    assert sample.utilization is None and sample.temperature is None and sample.power_w is None
    info = environment_info("cpu")
    assert info["torch"] == torch.__version__ and info["device_name"] == "CPU"


def test_bad_device_names_are_refused():
    with pytest.raises(DeviceError, match="'tpu'"):
        resolve_device("tpu")


def test_a_failed_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "last.pt"
    atomic_torch_save({"epoch": 1}, target)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_torch_save({"epoch": 2, "bad": Unpicklable()}, target)
    assert torch.load(target, weights_only=True) == {"epoch": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]  # no temp file left behind
    atomic_write_text(tmp_path / "a.txt", "hello")
    assert (tmp_path / "a.txt").read_text() == "hello"
