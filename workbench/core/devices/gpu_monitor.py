"""Live NVML figures of the GPU a run uses: utilisation, temperature and power."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class GpuSample:
    utilization: float | None = None
    temperature: float | None = None
    power_w: float | None = None


class GpuMonitor:
    """NVML utilisation, temperature and power, sampled at most once a second.

    Everything is None when NVML or the GPU is absent; NVML errors never reach the run.
    """

    def __init__(self, device: str, min_interval_s: float = 1.0) -> None:
        self._handle: Any = None
        self._nvml: Any = None
        self._last = GpuSample()
        self._last_time = 0.0
        self._interval = min_interval_s
        if not device.startswith("cuda"):
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            index = torch.device(device).index or 0
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._nvml = pynvml
        except Exception:
            self._handle = None

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
        nvml = self._nvml
        self._last = GpuSample(
            _nvml_call(lambda: float(nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu)),
            _nvml_call(lambda: float(nvml.nvmlDeviceGetTemperature(self._handle, 0))),
            _nvml_call(lambda: nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000.0),
        )
        return self._last


def _nvml_call(read: Any) -> float | None:
    try:
        return read()
    except Exception:
        return None
