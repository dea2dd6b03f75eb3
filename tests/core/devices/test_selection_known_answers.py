"""Known answers of device selection: why CUDA did not start when the driver said something
else than "no driver", and every field ``environment_info`` keeps with a run, on the CPU and on
a CUDA device.

The torch side is set at the functions torch itself answers with (``torch.version.cuda``,
``torch.cuda.init``, ``torch.cuda.get_device_name``, ``get_device_properties``,
``torch.backends.cudnn.version``) and NVML at the ``pynvml`` function boundary, with the figures
of an RTX 4070 Laptop GPU; everything between them is the real code.
"""

from __future__ import annotations

import platform
import sys
from types import SimpleNamespace

import pynvml
import pytest
import torch
import torchvision

from workbench.core.devices.selection import (
    cuda_unavailable_reason,
    describe_device_choice,
    environment_info,
)

CU130_ARCHES = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
RTX_4070 = "NVIDIA GeForce RTX 4070 Laptop GPU"
RTX_4070_MEMORY = 8_585_216_000


@pytest.fixture(autouse=True)
def no_visible_devices_variable(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def no_nvml(monkeypatch):
    def no_library():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", no_library)


def test_a_cuda_start_failure_that_is_not_the_driver_is_quoted_by_its_first_line(monkeypatch):
    no_nvml(monkeypatch)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def busy():
        raise RuntimeError("CUDA error: all CUDA-capable devices are busy or unavailable\n"
                           "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")

    monkeypatch.setattr(torch.cuda, "init", busy)
    assert cuda_unavailable_reason() == (
        "CUDA failed to start: CUDA error: all CUDA-capable devices are busy or unavailable")
    assert describe_device_choice("auto") == (
        "Training will use the CPU, because CUDA is unavailable: CUDA failed to start: CUDA "
        "error: all CUDA-capable devices are busy or unavailable.")


def test_environment_info_on_the_cpu_keeps_each_version_under_its_name(monkeypatch):
    no_nvml(monkeypatch)
    assert environment_info("cpu") == {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda_build": torch.version.cuda,
        "device": "cpu",
        "device_name": "CPU",
        "cuda_unavailable_reason": cuda_unavailable_reason(),
        "torchvision": torchvision.__version__,
    }


def test_without_torchvision_its_version_is_none(monkeypatch):
    no_nvml(monkeypatch)
    monkeypatch.setitem(sys.modules, "torchvision", None)  # import torchvision fails
    info = environment_info("cpu")
    assert "torchvision" in info and info["torchvision"] is None


def a_cuda_machine(monkeypatch, driver: str | bytes) -> None:
    """A CUDA 13.0 build on an RTX 4070 Laptop GPU, whose driver NVML reports as ``driver``."""
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: list(CU130_ARCHES))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    cuda0 = torch.device("cuda:0")
    monkeypatch.setattr(torch.cuda, "get_device_name",
                        lambda d: RTX_4070 if d == cuda0 else pytest.fail(f"asked for {d}"))
    props = SimpleNamespace(name=RTX_4070, total_memory=RTX_4070_MEMORY, major=8, minor=9)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda d: props if d in (0, cuda0) else pytest.fail(f"asked for {d}"))
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91002)
    handle = object()
    monkeypatch.setattr(pynvml, "nvmlInit", lambda: None)
    monkeypatch.setattr(pynvml, "nvmlShutdown", lambda: None)
    monkeypatch.setattr(pynvml, "nvmlSystemGetDriverVersion", lambda: driver)
    monkeypatch.setattr(pynvml, "nvmlSystemGetCudaDriverVersion", lambda: 13000)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCount", lambda: 1)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lambda i: handle)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetName", lambda h: RTX_4070.encode())
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCudaComputeCapability", lambda h: (8, 9))


@pytest.mark.parametrize("driver", ["580.95.05", b"580.95.05"])
def test_environment_info_on_a_cuda_device_adds_cudnn_memory_and_driver(monkeypatch, driver):
    a_cuda_machine(monkeypatch, driver)
    assert environment_info("cuda:0") == {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda_build": "13.0",
        "device": "cuda:0",
        "device_name": RTX_4070,
        "cuda_unavailable_reason": None,
        "torchvision": torchvision.__version__,
        "cudnn": 91002,
        "memory_total": RTX_4070_MEMORY,
        "driver": "580.95.05",
    }
    assert describe_device_choice("auto") == (
        f"Training will use cuda:0: {RTX_4070} (8.0 GiB, compute capability 8.9).")
