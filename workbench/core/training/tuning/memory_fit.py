"""Whether a run's batch fits in the GPU's free memory, said before the user presses Start.

Running out of memory an hour into a run, or after five minutes of decoding, teaches nothing
the first step could not have. The check takes the run's peak memory, from a dry step at the
chosen batch (the batch finder's :class:`TrainingStepProbe`: the configured model, precision,
crops and optimiser, forward, backward and update, twice) or from the speed probe's
measurement, and holds it against what NVML reports free on the card. NVML counts every
process, so a browser or a second run holding memory is counted too.

A CPU swaps before it runs out, so there memory is not limited and nothing is measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from workbench.core.devices.gpu_monitor import nvml_free_memory
from workbench.core.devices.memory import free_device_memory
from workbench.core.devices.selection import resolve_device
from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning.batch_size_finder import TrainingStepProbe, peak_memory_text

HEADROOM = 0.9
"""A peak above this share of the free memory fits now but may not over a long run: the
allocator fragments, and cuDNN may pick kernels with larger workspaces later."""


@dataclass(frozen=True)
class MemoryFit:
    """The verdict. ``fits`` is None when it could not be judged; ``limited`` is False on the
    CPU."""

    device: str
    batch_size: int
    limited: bool
    fits: bool | None
    sentence: str
    peak_bytes: int | None = None
    free_bytes: int | None = None
    tight: bool = False

    @property
    def warn(self) -> bool:
        """True when the user should change something before starting."""
        return self.fits is False or self.tight


def _gib(amount: int) -> str:
    return f"{amount / 2**30:.2f} GiB"


def judge_memory_fit(device: str, batch_size: int, peak_bytes: int | None,
                     free_bytes: int | None, headroom: float = HEADROOM) -> MemoryFit:
    """The verdict for a run whose step peaks at ``peak_bytes`` with ``free_bytes`` free.

    Args:
        device: a resolved device name.
        batch_size: the batch the peak was measured at.
        peak_bytes: the step's peak; None when the dry step itself ran out of memory.
        free_bytes: free memory on the card; None when NVML is unavailable.
        headroom: the share of the free memory a peak may use without a warning.
    """
    if not device.startswith("cuda"):
        return MemoryFit(device, batch_size, False, True,
                         "Memory is not limited on the CPU (it swaps before it runs out), so "
                         "the fit of the batch is not checked.")
    if peak_bytes is None:
        return MemoryFit(device, batch_size, True, False,
                         f"Batch {batch_size} does not fit on {device}: a dry step ran out of "
                         "memory. Lower batch_size (Find largest batch), turn on amp or "
                         "choose finetune last_layer.", None, free_bytes)
    peak = peak_memory_text(peak_bytes, device)
    if free_bytes is None:
        return MemoryFit(device, batch_size, True, None,
                         f"Batch {batch_size} ran in a dry step ({peak}); NVML does not report "
                         "the free memory, so the margin is unknown.", peak_bytes, None)
    share = f"{peak} of {_gib(free_bytes)} free"
    if peak_bytes > free_bytes:
        return MemoryFit(device, batch_size, True, False,
                         f"Batch {batch_size} will not fit on {device}: {share}. Lower "
                         "batch_size or close what else uses the GPU.", peak_bytes, free_bytes)
    if peak_bytes > headroom * free_bytes:
        return MemoryFit(device, batch_size, True, True,
                         f"Batch {batch_size} fits on {device}, but tight: {share}; a long run "
                         "may still run out. A smaller batch is safer.", peak_bytes, free_bytes,
                         tight=True)
    return MemoryFit(device, batch_size, True, True,
                     f"Batch {batch_size} fits on {device}: {share}.", peak_bytes, free_bytes)


def check_memory_fit(config: TrainConfig, num_classes: int,
                     measured_peak: int | None = None) -> MemoryFit:
    """Measure (or take) the peak of ``config``'s step and judge it against NVML's free memory.

    Args:
        config: the run's settings; its device is resolved.
        num_classes: size of the classifier head.
        measured_peak: a peak already measured at ``config.batch_size`` (the speed probe's);
            no dry step is run when given.

    Raises:
        DeviceError: the config's device does not exist.
    """
    device = resolve_device(config.device)
    if not device.startswith("cuda"):
        return judge_memory_fit(device, config.batch_size, None, None)
    torch.zeros(1, device=device)  # the CUDA context exists before NVML is asked what is free
    free = free_for_run(nvml_free_memory(device), torch.cuda.memory_reserved(device),
                        torch.cuda.memory_allocated(device))
    if measured_peak is not None:
        return judge_memory_fit(device, config.batch_size, measured_peak, free)
    peak = _dry_step_peak(config, num_classes, device)
    return judge_memory_fit(device, config.batch_size, peak, free)


def free_for_run(nvml_free: int | None, reserved: int, allocated: int) -> int | None:
    """The memory a run can use: what NVML reports free on the card plus what this process's
    allocator holds but does not use (``reserved - allocated``); None when NVML is silent."""
    return None if nvml_free is None else nvml_free + reserved - allocated


def _dry_step_peak(config: TrainConfig, num_classes: int, device: str) -> int | None:
    """The peak of two training steps at ``config.batch_size``; None when they do not fit."""
    peak: int | None = None
    try:
        probe = TrainingStepProbe(config, num_classes, device)
        peak = probe(config.batch_size)
    except torch.OutOfMemoryError:
        peak = None
    probe = None  # the model and its gradients go before the memory is given back
    free_device_memory(device)
    return peak
