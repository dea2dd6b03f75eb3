"""PyTorch's CUDA builds, the NVIDIA driver each needs and the cards each carries kernels for:
the one table that turns "this card, this driver" into "this build, this command".

Sources: PyTorch publishes one wheel index per CUDA version,
``https://download.pytorch.org/whl/cuXXX`` (the "Release Compatibility Matrix" of PyTorch's
RELEASE.md lists which torch releases each index holds and the architectures they are compiled
for); NVIDIA's CUDA Toolkit release notes, Table 3 ("CUDA Toolkit and Corresponding Driver
Versions"), give the minimum driver of each toolkit's GA release on Linux and Windows. The
CUDA runtime ships inside the wheels, so the driver is the only thing a machine needs.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass

INDEX_URL = "https://download.pytorch.org/whl/{tag}"

MINIMUM_TORCH = (2, 6)
"""pyproject.toml's ``torch>=2.6``: an index whose newest torch is older cannot serve us."""


@dataclass(frozen=True)
class CudaBuild:
    """One of PyTorch's CUDA wheel indexes."""

    tag: str
    cuda: tuple[int, int]
    min_driver_linux: str
    min_driver_windows: str
    oldest_capability: tuple[int, int]
    """The oldest compute capability the index's current wheels carry kernels for."""
    newest_major: int
    """The newest architecture generation (compute capability major) it carries."""
    last_torch: tuple[int, int] | None = None
    """The last torch release published there; None while releases still come."""

    @property
    def cuda_text(self) -> str:
        return f"{self.cuda[0]}.{self.cuda[1]}"

    @property
    def index_url(self) -> str:
        return INDEX_URL.format(tag=self.tag)

    def min_driver(self, system: str) -> str:
        """The minimum driver on ``system`` ('Windows' or anything else: Linux's)."""
        return self.min_driver_windows if system == "Windows" else self.min_driver_linux

    def carries(self, capability: tuple[int, int]) -> bool:
        """True when the build has kernels a card of ``capability`` runs (a kernel for
        sm_X.Y runs on X.Z for Z >= Y, so a generation is covered from its oldest member)."""
        return self.oldest_capability <= capability and capability[0] <= self.newest_major

    def serves_workbench(self) -> bool:
        return self.last_torch is None or self.last_torch >= MINIMUM_TORCH


CUDA_BUILDS: tuple[CudaBuild, ...] = (
    CudaBuild("cu118", (11, 8), "520.61.05", "520.06", (5, 0), 9, last_torch=(2, 7)),
    CudaBuild("cu121", (12, 1), "530.30.02", "531.14", (5, 0), 9, last_torch=(2, 5)),
    CudaBuild("cu124", (12, 4), "550.54.14", "551.61", (5, 0), 9, last_torch=(2, 6)),
    CudaBuild("cu126", (12, 6), "560.28.03", "560.76", (5, 0), 9),
    # From torch 2.8 the CUDA 12.8 and 12.9 wheels leave out Maxwell and Pascal (sm_50, sm_60);
    # from 2.11 the 12.8 wheels leave out Volta (sm_70) too, and 2.12 dropped the 12.8 index
    # (PyTorch's RFCs #172352 and #178665). CUDA 12.9 was published for 2.8 only.
    CudaBuild("cu128", (12, 8), "570.26", "570.65", (7, 5), 12, last_torch=(2, 11)),
    CudaBuild("cu129", (12, 9), "575.51.03", "576.02", (7, 0), 12, last_torch=(2, 8)),
    # CUDA 13 compiles for Turing (sm_75) and newer only. torch 2.14 also publishes cu132 (its
    # PyPI default on Linux); it is left out here until its minimum driver is in this table:
    # cu130 runs on every card cu132 does, with a driver whose minimum is known.
    CudaBuild("cu130", (13, 0), "580.65.06", "580.88", (7, 5), 12),
)


def parse_cuda_version(text: str | None) -> tuple[int, int] | None:
    """'12.4' (torch.version.cuda) as (12, 4); None for None or an unreadable string."""
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match[1]), int(match[2])) if match else None


def cuda_from_driver_integer(value: int) -> tuple[int, int]:
    """NVML's ``nvmlSystemGetCudaDriverVersion`` integer (12040) as (12, 4)."""
    return value // 1000, (value % 1000) // 10


def build_for_cuda(cuda: tuple[int, int] | None) -> CudaBuild | None:
    """The table's row of the CUDA version a torch build was made for, if it has one."""
    return next((build for build in CUDA_BUILDS if build.cuda == cuda), None)


def best_build(driver_cuda: tuple[int, int], capability: tuple[int, int] | None
               ) -> CudaBuild | None:
    """The newest build the driver runs that carries the card (any card when its capability
    is unknown) and still holds a torch Workbench can use; None when there is none."""
    fitting = [build for build in CUDA_BUILDS
               if build.cuda <= driver_cuda and build.serves_workbench()
               and (capability is None or build.carries(capability))]
    return fitting[-1] if fitting else None


def oldest_build_carrying(capability: tuple[int, int]) -> CudaBuild | None:
    """The build with the lowest CUDA version (so the oldest driver) that carries the card."""
    return next((build for build in CUDA_BUILDS
                 if build.carries(capability) and build.serves_workbench()), None)


def install_command(build: CudaBuild, python: str | None = None, has_pip: bool | None = None
                    ) -> str:
    """The one command that puts ``build``'s torch and torchvision into the environment of
    ``python`` (this interpreter by default): pip where the environment has pip, else uv's
    (``uv tool install`` makes environments without pip)."""
    python = python or sys.executable
    if has_pip is None:
        import importlib.util

        has_pip = importlib.util.find_spec("pip") is not None or shutil.which("uv") is None
    exe = f'"{python}"' if " " in python else python
    if has_pip:
        return (f"{exe} -m pip install --force-reinstall torch torchvision "
                f"--index-url {build.index_url}")
    return (f"uv pip install --python {exe} --reinstall-package torch --reinstall-package "
            f"torchvision --torch-backend={build.tag} torch torchvision")
