"""An NVIDIA card this PyTorch cannot use, named, with the reason and the one command that fixes it.

NVML (nvidia-ml-py's ``pynvml``) reads the card's name, its compute capability, the driver
version and the newest CUDA version the driver supports, with no CUDA build of torch at all.
Compared with the torch in use, that tells the three ways a card sits idle: a CPU-only build,
a build for a newer CUDA than the driver supports, and a build without kernels for the card's
architecture (which fails at the first kernel, not at start). The fix comes from the one table
of builds, ``cuda_builds``.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from workbench.core.devices.cuda_builds import (
    CudaBuild,
    best_build,
    build_for_cuda,
    cuda_from_driver_integer,
    install_command,
    oldest_build_carrying,
    parse_cuda_version,
)

COMMAND_INDENT = "  "
"""An idle card's text ends with its command on a line of its own, indented by this."""


@dataclass(frozen=True)
class NvidiaCard:
    """One card as NVML lists it."""

    name: str
    capability: tuple[int, int] | None


@dataclass(frozen=True)
class NvmlView:
    """What NVML says about this machine; ``error`` is why it said nothing (no driver)."""

    cards: tuple[NvidiaCard, ...] = ()
    driver: str | None = None
    driver_cuda: tuple[int, int] | None = None
    error: str | None = None


@dataclass(frozen=True)
class TorchBuild:
    """The torch in use: its version, the CUDA it was built for (None: CPU-only), whether CUDA
    starts, and the architectures it carries kernels for ('sm_75', 'compute_90', ...)."""

    version: str
    cuda: str | None
    cuda_available: bool
    arch_list: tuple[str, ...]


@dataclass(frozen=True)
class IdleCard:
    """Why a card sits idle (``reason``) and the command that fixes it, if one does."""

    reason: str
    command: str | None

    @property
    def text(self) -> str:
        """The reason, then the command on a line of its own (copied as it stands)."""
        return self.reason if self.command is None else \
            f"{self.reason}\n{COMMAND_INDENT}{self.command}"


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_nvml() -> NvmlView:
    """Every card NVML lists, the driver and its CUDA version; ``error`` set when NVML (the
    driver) cannot be loaded."""
    try:
        import pynvml
    except ImportError:
        return NvmlView(error="nvidia-ml-py is not installed")
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
        return NvmlView(error=str(exc) or type(exc).__name__)
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        driver_cuda = cuda_from_driver_integer(int(pynvml.nvmlSystemGetCudaDriverVersion()))
        cards = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            try:
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
                capability: tuple[int, int] | None = (int(major), int(minor))
            except pynvml.NVMLError:
                capability = None
            cards.append(NvidiaCard(_text(pynvml.nvmlDeviceGetName(handle)), capability))
        return NvmlView(tuple(cards), driver, driver_cuda)
    except pynvml.NVMLError as exc:
        return NvmlView(error=str(exc) or type(exc).__name__)
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def this_torch() -> TorchBuild:
    """The torch this process imported."""
    try:
        arch_list = tuple(torch.cuda.get_arch_list())
    except Exception:
        arch_list = ()
    available = torch.version.cuda is not None and torch.cuda.is_available()
    return TorchBuild(torch.__version__, torch.version.cuda, available, arch_list)


def arch_list_carries(arch_list: Sequence[str], capability: tuple[int, int]) -> bool:
    """True when one of torch's architectures runs on a card of ``capability``: a kernel
    'sm_XY' on the same major with minor Y or newer, PTX 'compute_XY' on X.Y and newer."""
    for arch in arch_list:
        match = re.fullmatch(r"(sm|compute)_(\d+)[a-z]?", arch)
        if match is None:
            continue
        number = int(match[2])
        built = (number // 10, number % 10)
        if match[1] == "sm" and built[0] == capability[0] and built[1] <= capability[1]:
            return True
        if match[1] == "compute" and built <= capability:
            return True
    return False


def _capability_text(capability: tuple[int, int] | None) -> str:
    return "unknown" if capability is None else f"{capability[0]}.{capability[1]}"


def diagnose(nvml: NvmlView, build: TorchBuild, system: str | None = None,
             python: str | None = None) -> IdleCard | None:
    """Why the first NVIDIA card NVML sees sits idle with this torch, or None (no card, no
    driver, or torch uses it)."""
    if not nvml.cards or nvml.driver_cuda is None:
        return None
    system = system or platform.system()
    card = nvml.cards[0]
    driver_cuda = f"{nvml.driver_cuda[0]}.{nvml.driver_cuda[1]}"
    named = f"the {card.name} (driver {nvml.driver}, which supports CUDA up to {driver_cuda})"
    build_cuda = parse_cuda_version(build.cuda)
    if build.cuda is None:
        why = f"this PyTorch ({build.version}) is a CPU-only build, so {named} sits idle"
    elif not build.cuda_available and build_cuda is not None and build_cuda > nvml.driver_cuda:
        row = build_for_cuda(build_cuda)
        needs = "" if row is None else \
            f"; CUDA {build.cuda} needs driver {row.min_driver(system)} or newer"
        why = (f"this PyTorch ({build.version}) is built for CUDA {build.cuda}, newer than "
               f"{named}{needs}, so the card sits idle")
    elif build.cuda_available and all(
            c.capability is not None and not arch_list_carries(build.arch_list, c.capability)
            for c in nvml.cards):
        why = (f"this PyTorch ({build.version}) has no kernels for {named}: its architecture, "
               f"compute capability {_capability_text(card.capability)}, is not among the "
               f"build's {', '.join(build.arch_list) or 'none'}, so the card sits idle")
    else:
        return None
    return IdleCard(*_fix(why, nvml.driver_cuda, card.capability, system, python))


def _fix(why: str, driver_cuda: tuple[int, int], capability: tuple[int, int] | None,
         system: str, python: str | None) -> tuple[str, str | None]:
    fix: CudaBuild | None = best_build(driver_cuda, capability)
    if fix is not None:
        return (f"{why}; install the CUDA {fix.cuda_text} build of torch ({fix.tag}) with "
                "this command:", install_command(fix, python))
    oldest = oldest_build_carrying(capability) if capability is not None else None
    if oldest is None:
        return (f"{why}; no PyTorch CUDA build of torch 2.6 or newer carries compute "
                f"capability {_capability_text(capability)}, so this card cannot train "
                "with this Workbench", None)
    return (f"{why}; update the NVIDIA driver to {oldest.min_driver(system)} or newer "
            f"(CUDA {oldest.cuda_text}), then install a CUDA build of torch (the install "
            "guide, docs/install.md, has the command)", None)


def idle_card() -> IdleCard | None:
    """:func:`diagnose` for this machine and this torch."""
    return diagnose(read_nvml(), this_torch())
