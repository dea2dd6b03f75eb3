"""Which NVML device a CUDA device is: matched by UUID, else PCI bus id, never by index."""

from __future__ import annotations

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
