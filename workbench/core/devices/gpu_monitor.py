"""Live NVML figures of the GPU a run uses: utilisation, temperature, power, clock-throttle
reasons, and whether a laptop runs on its battery.

CUDA and NVML number the cards differently whenever ``CUDA_VISIBLE_DEVICES`` hides or reorders
them (and CUDA orders by speed unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``), so the CUDA device is
found in NVML's list by its UUID, else by its PCI bus id, never by its index.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class GpuSample:
    """One reading. ``throttle_reasons`` is NVML's bit mask of why clocks are held down."""

    utilization: float | None = None
    temperature: float | None = None
    power_w: float | None = None
    throttle_reasons: int | None = None
    on_battery: bool | None = None


@dataclass(frozen=True)
class NvmlDeviceId:
    """How NVML names one of its devices: its index, UUID ('GPU-…') and PCI bus id."""

    index: int
    uuid: str
    pci_bus_id: str


def _normalised_uuid(uuid: str) -> str:
    text = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        text = text.removeprefix(prefix)
    return text


def parse_pci_bus_id(bus_id: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) from NVML's '00000000:3B:00.0' or the legacy '0000:3b:00.0'."""
    try:
        domain, bus, rest = bus_id.strip().split(":")
        return int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)
    except ValueError:
        return None


def match_nvml_device(cuda_uuid: str | None, cuda_pci: tuple[int, int, int] | None,
                      nvml_devices: Sequence[NvmlDeviceId]) -> int | None:
    """The NVML index of the CUDA device with this UUID or (domain, bus, device) PCI address.

    Args:
        cuda_uuid: ``torch.cuda.get_device_properties(i).uuid`` as text (with or without
            NVML's 'GPU-' prefix); None if unknown.
        cuda_pci: (``pci_domain_id``, ``pci_bus_id``, ``pci_device_id``) of the same
            properties; None if unknown.
        nvml_devices: every device NVML lists.

    Returns:
        The matching NVML index, or None: figures of another card would be worse than none.
    """
    if cuda_uuid:
        wanted = _normalised_uuid(cuda_uuid)
        for device in nvml_devices:
            if _normalised_uuid(device.uuid) == wanted:
                return device.index
    if cuda_pci is not None:
        for device in nvml_devices:
            if parse_pci_bus_id(device.pci_bus_id) == cuda_pci:
                return device.index
    return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def nvml_handle(device: str) -> tuple[Any, Any] | None:
    """(pynvml module, handle) of the card behind CUDA ``device``; None without NVML or a match."""
    if not device.startswith("cuda"):
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        props = torch.cuda.get_device_properties(torch.device(device))
        listed = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            listed.append(NvmlDeviceId(index, _text(pynvml.nvmlDeviceGetUUID(handle)),
                                       _text(pynvml.nvmlDeviceGetPciInfo(handle).busId)))
        pci = (props.pci_domain_id, props.pci_bus_id, props.pci_device_id)
        index = match_nvml_device(str(props.uuid), pci, listed)
        if index is None:
            return None
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # no NVML library, no driver, or a CUDA error: no figures, no crash
        return None


def nvml_free_memory(device: str) -> int | None:
    """Bytes NVML reports free on the card behind ``device`` (every process's use counted)."""
    found = nvml_handle(device)
    if found is None:
        return None
    nvml, handle = found
    return _nvml_call(lambda: int(nvml.nvmlDeviceGetMemoryInfo(handle).free))


def on_battery() -> bool | None:
    """True when a laptop runs on its battery; None on machines without one."""
    try:
        import psutil

        battery = psutil.sensors_battery()
    except Exception:
        return None
    return None if battery is None else not battery.power_plugged


class GpuMonitor:
    """NVML utilisation, temperature, power and throttle reasons, sampled at most once a second.

    Everything is None when NVML or the GPU is absent; NVML errors never reach the run.
    """

    def __init__(self, device: str, min_interval_s: float = 1.0) -> None:
        self._last = GpuSample()
        self._last_time = 0.0
        self._interval = min_interval_s
        found = nvml_handle(device)
        self._nvml, self._handle = found if found is not None else (None, None)

    @property
    def available(self) -> bool:
        return self._handle is not None

    def sample(self) -> GpuSample:
        if self._handle is None:
            return self._last
        now = time.monotonic()
        if now - self._last_time < self._interval:
            return self._last
        self._last_time = now
        nvml, handle = self._nvml, self._handle
        self._last = GpuSample(
            _nvml_call(lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)),
            _nvml_call(lambda: float(nvml.nvmlDeviceGetTemperature(handle, 0))),
            _nvml_call(lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
            _nvml_call(lambda: _throttle_reasons(nvml, handle)),
            on_battery(),
        )
        return self._last


def _throttle_reasons(nvml: Any, handle: Any) -> int:
    # NVML 12.x renamed "throttle reasons" to "clocks event reasons"; the bits are the same.
    read = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) \
        or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return int(read(handle))


def _nvml_call(read: Any) -> Any:
    try:
        return read()
    except Exception:
        return None
