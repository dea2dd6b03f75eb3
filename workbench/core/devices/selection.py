"""Which devices exist, which one a run will really use, and why CUDA is missing when it is."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import Any

import torch

from workbench.core.devices.idle_card import COMMAND_INDENT, idle_card
from workbench.core.devices.memory import memory_total
from workbench.core.units import GIB


class DeviceError(RuntimeError):
    """A device name that cannot be used on this machine, with the reason."""


@dataclass(frozen=True)
class DeviceInfo:
    """One device a run can be placed on."""

    name: str
    label: str
    total_memory: int | None
    capability: str | None

    @property
    def is_cuda(self) -> bool:
        return self.name.startswith("cuda")


def cuda_unavailable_reason() -> str | None:
    """None when CUDA works; otherwise what a user can act on. Where NVML sees an NVIDIA card
    this torch cannot use, the card, its driver, the reason and the command that installs a
    matching build (on the text's last line, ``idle_card.COMMAND_INDENT`` first)."""
    if torch.version.cuda is None:
        idle = idle_card()
        if idle is not None:
            return idle.text
        return (
            f"this PyTorch ({torch.__version__}) is a CPU-only build; install a CUDA build of "
            "torch (see pytorch.org, 'Get started') to train on an NVIDIA GPU"
        )
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES is set to '{visible}', which hides every GPU"
    if torch.cuda.is_available():
        idle = idle_card()  # a card whose architecture the build lacks
        return None if idle is None else idle.text
    try:
        torch.cuda.init()
    except Exception as exc:  # the driver's own words are the most useful explanation
        idle = idle_card()  # a driver older than the build
        if idle is not None:
            return idle.text
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "driver" in detail.lower():
            return (
                "no NVIDIA driver was found on this system; install the NVIDIA driver to train "
                f"on a GPU (this PyTorch is built for CUDA {torch.version.cuda})"
            )
        return f"CUDA failed to start: {detail}"
    return "no NVIDIA GPU was found by the CUDA driver"


def as_sentence(text: str) -> str:
    """``text`` with a full stop, unless it ends with a command on a line of its own (a stop
    would be copied with it)."""
    if text.rsplit("\n", 1)[-1].startswith(COMMAND_INDENT):
        return text
    return text if text.endswith(".") else f"{text}."


def list_devices() -> list[DeviceInfo]:
    """Every CUDA device with name, memory and compute capability, then the CPU."""
    devices: list[DeviceInfo] = []
    if cuda_unavailable_reason() is None:
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            capability = f"{props.major}.{props.minor}"
            label = (
                f"cuda:{index} \u2014 {props.name} ({props.total_memory / GIB:.1f} GiB, "
                f"sm {capability})"
            )
            devices.append(DeviceInfo(f"cuda:{index}", label, props.total_memory, capability))
    cpu_name = platform.processor() or platform.machine() or "CPU"
    devices.append(DeviceInfo("cpu", f"cpu \u2014 {cpu_name} ({os.cpu_count()} cores)", None, None))
    return devices


def resolve_device(name: str) -> str:
    """Turn 'auto', 'cuda' or 'cuda:N' into the device a run will use, or explain why not."""
    if name == "auto":
        return "cuda:0" if cuda_unavailable_reason() is None else "cpu"
    if name == "cpu":
        return "cpu"
    if name == "cuda":
        name = "cuda:0"
    if not name.startswith("cuda:") or not name[5:].isdigit():
        raise DeviceError(f"device: '{name}' is not 'auto', 'cpu', 'cuda' or 'cuda:N'")
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise DeviceError(f"device: {name} was chosen but CUDA is unavailable: {reason}")
    index = int(name[5:])
    count = torch.cuda.device_count()
    if index >= count:
        raise DeviceError(f"device: {name} does not exist; this machine has {count} CUDA device(s)")
    return name


def describe_device_choice(name: str) -> str:
    """The plain sentence the GUI and CLI show: which device training will really use."""
    try:
        resolved = resolve_device(name)
    except DeviceError as exc:
        return as_sentence(f"Cannot train on {name}: {exc}")
    if resolved == "cpu":
        reason = cuda_unavailable_reason()
        if reason is None:
            return "Training will use the CPU (a CUDA GPU is available but not selected)."
        return as_sentence(f"Training will use the CPU, because CUDA is unavailable: {reason}")
    index = int(resolved[5:])
    props = torch.cuda.get_device_properties(index)
    return (
        f"Training will use {resolved}: {props.name} "
        f"({props.total_memory / GIB:.1f} GiB, compute capability {props.major}.{props.minor})."
    )


def device_display_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return "CPU"


def environment_info(device: str) -> dict[str, Any]:
    """Versions worth keeping with a run: torch, CUDA, cuDNN, GPU and driver."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda_build": torch.version.cuda,
        "device": device,
        "device_name": device_display_name(device),
        "cuda_unavailable_reason": cuda_unavailable_reason(),
    }
    try:
        import torchvision

        info["torchvision"] = torchvision.__version__
    except Exception:
        info["torchvision"] = None
    if device.startswith("cuda"):
        info["cudnn"] = torch.backends.cudnn.version()
        info["memory_total"] = memory_total(device)
        info["driver"] = _driver_version()
    return info


def _driver_version() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:
        return None
