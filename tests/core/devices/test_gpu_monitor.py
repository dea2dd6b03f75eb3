"""Which NVML device a CUDA device is: matched by UUID, else PCI bus id, never by index."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from workbench.core.devices.gpu_monitor import (
    GpuMonitor,
    NvmlDeviceId,
    match_nvml_device,
    parse_pci_bus_id,
)

# As a two-GPU workstation's NVML lists them (nvmlDeviceGetUUID / nvmlDeviceGetPciInfo.busId).
NVML_DEVICES = [
    NvmlDeviceId(0, "GPU-5f3c2a1e-8b7d-4c0a-9e21-3d6f0b8a7c11", "00000000:3B:00.0"),
    NvmlDeviceId(1, "GPU-a4d19e07-2c55-f1b3-6e80-9b2c47d0e5f2", "00000000:AF:00.0"),
]


def test_a_cuda_device_behind_cuda_visible_devices_is_found_by_uuid():
    # CUDA_VISIBLE_DEVICES=1: CUDA's device 0 is NVML's device 1. torch prints the UUID
    # without NVML's 'GPU-' prefix.
    assert match_nvml_device("a4d19e07-2c55-f1b3-6e80-9b2c47d0e5f2", None, NVML_DEVICES) == 1
    assert match_nvml_device("GPU-5F3C2A1E-8B7D-4C0A-9E21-3D6F0B8A7C11", None,
                             NVML_DEVICES) == 0


def test_without_a_uuid_the_pci_bus_id_decides():
    # (domain, bus, device) as torch's pci_domain_id / pci_bus_id / pci_device_id give them.
    assert match_nvml_device(None, (0, 0xAF, 0), NVML_DEVICES) == 1
    assert match_nvml_device("", (0, 0x3B, 0), NVML_DEVICES) == 0


def test_an_unknown_card_matches_nothing_rather_than_the_wrong_card():
    assert match_nvml_device("00000000-0000-0000-0000-000000000000", (0, 0x18, 0),
                             NVML_DEVICES) is None
    assert match_nvml_device(None, None, NVML_DEVICES) is None


def test_pci_bus_ids_parse_in_both_of_nvmls_spellings():
    assert parse_pci_bus_id("00000000:3B:00.0") == (0, 0x3B, 0)
    assert parse_pci_bus_id("0000:af:00.0") == (0, 0xAF, 0)
    assert parse_pci_bus_id("garbage") is None


def test_the_cpu_has_no_nvml_figures():
    monitor = GpuMonitor("cpu")
    sample = monitor.sample()
    assert not monitor.available
    assert (sample.utilization, sample.throttle_reasons) == (None, None)


class _FakeNvml:
    """Stand-in for the NVML library (pynvml) of a three-GPU machine; each card reports its
    own utilisation, temperature and power, so figures show which card was read."""

    CARDS = [  # (uuid, bus id, utilisation %, temperature C, power mW)
        ("GPU-11111111-0000-0000-0000-000000000000", "00000000:18:00.0", 5, 31, 20_000),
        ("GPU-22222222-0000-0000-0000-000000000000", "00000000:3B:00.0", 50, 62, 150_000),
        ("GPU-33333333-0000-0000-0000-000000000000", "00000000:AF:00.0", 97, 84, 290_000),
    ]

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.CARDS)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetUUID(self, handle: int) -> bytes:
        return self.CARDS[handle][0].encode()

    def nvmlDeviceGetPciInfo(self, handle: int):
        return types.SimpleNamespace(busId=self.CARDS[handle][1].encode())

    def nvmlDeviceGetUtilizationRates(self, handle: int):
        return types.SimpleNamespace(gpu=self.CARDS[handle][2])

    def nvmlDeviceGetTemperature(self, handle: int, _sensor: int) -> int:
        return self.CARDS[handle][3]

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        return self.CARDS[handle][4]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: int) -> int:
        return 0


@pytest.mark.parametrize(("visible", "uuid", "pci"), [
    (2, "33333333-0000-0000-0000-000000000000", (0, 0xAF, 0)),  # CUDA_VISIBLE_DEVICES=2
    (1, "", (0, 0x3B, 0)),  # CUDA_VISIBLE_DEVICES=1, a driver that gives no UUID
])
def test_the_monitor_reads_the_card_cuda_device_0_is_not_nvmls_card_0(
        monkeypatch, visible, uuid, pci):
    # With GPUs hidden, CUDA's device 0 is NVML's card ``visible``: its figures must be read.
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml())
    properties = types.SimpleNamespace(uuid=uuid, pci_domain_id=pci[0], pci_bus_id=pci[1],
                                       pci_device_id=pci[2])
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _device: properties)
    monkeypatch.setattr("workbench.core.devices.gpu_monitor.on_battery", lambda: None)
    monitor = GpuMonitor("cuda:0")
    sample = monitor.sample()
    assert monitor.available
    _, _, utilisation, temperature, power = _FakeNvml.CARDS[visible]
    assert (sample.utilization, sample.temperature, sample.power_w) == (
        utilisation, temperature, power / 1000)
