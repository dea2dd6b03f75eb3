"""Known answers of the idle-card diagnosis: which of torch's architectures run on which card,
and the fix sentence when no build the driver runs carries the card.

``diagnose`` is given NVML's view and the torch build as values (a Kepler GTX 780, an RTX 3060
and a card whose compute capability NVML did not say, each behind a driver too old for every
build), so nothing here needs a GPU.
"""

from __future__ import annotations

from workbench.core.devices.idle_card import (
    IdleCard,
    NvidiaCard,
    NvmlView,
    TorchBuild,
    arch_list_carries,
    diagnose,
)

PYTHON = "/opt/workbench/bin/python"
CPU_BUILD = TorchBuild("2.9.1+cpu", None, False, ())
CPU_ONLY = "this PyTorch (2.9.1+cpu) is a CPU-only build, so the "


def test_a_kernel_runs_on_its_generation_from_its_minor_and_ptx_on_every_newer_card():
    assert arch_list_carries(["sm_86"], (8, 6))
    assert arch_list_carries(["sm_86"], (8, 9))  # Ada runs Ampere's sm_86
    assert not arch_list_carries(["sm_86"], (8, 0))
    assert not arch_list_carries(["sm_75"], (8, 6))  # another generation's kernel
    assert arch_list_carries(["sm_120"], (12, 0))
    assert arch_list_carries(["sm_90a"], (9, 0))
    assert arch_list_carries(["compute_90"], (9, 0))
    assert arch_list_carries(["compute_90"], (12, 0))  # PTX is compiled for newer cards
    assert not arch_list_carries(["compute_90"], (8, 9))
    assert arch_list_carries(["compute_86", "sm_90"], (8, 6))
    assert arch_list_carries(["gfx90a", "sm_86"], (8, 6))  # an unknown name is passed over
    assert not arch_list_carries([], (8, 6))


def test_a_card_no_build_carries_is_said_to_be_unusable_with_no_command():
    nvml = NvmlView((NvidiaCard("NVIDIA GeForce GTX 780", (3, 5)),), "470.256.02", (11, 4))
    assert diagnose(nvml, CPU_BUILD, "Linux", PYTHON) == IdleCard(
        CPU_ONLY + "NVIDIA GeForce GTX 780 (driver 470.256.02, which supports CUDA up to 11.4) "
        "sits idle; no PyTorch CUDA build of torch 2.6 or newer carries compute capability "
        "3.5, so this card cannot train with this Workbench", None)


def test_an_unknown_capability_behind_an_old_driver_is_said_to_be_unknown():
    nvml = NvmlView((NvidiaCard("NVIDIA Quadro K4200", None),), "470.256.02", (11, 4))
    assert diagnose(nvml, CPU_BUILD, "Linux", PYTHON) == IdleCard(
        CPU_ONLY + "NVIDIA Quadro K4200 (driver 470.256.02, which supports CUDA up to 11.4) "
        "sits idle; no PyTorch CUDA build of torch 2.6 or newer carries compute capability "
        "unknown, so this card cannot train with this Workbench", None)


def test_a_driver_too_old_for_every_build_names_the_driver_the_oldest_build_needs():
    nvml = NvmlView((NvidiaCard("NVIDIA GeForce RTX 3060", (8, 6)),), "472.12", (11, 4))
    named = "NVIDIA GeForce RTX 3060 (driver 472.12, which supports CUDA up to 11.4) sits idle"
    assert diagnose(nvml, CPU_BUILD, "Windows", PYTHON) == IdleCard(
        CPU_ONLY + named + "; update the NVIDIA driver to 520.06 or newer (CUDA 11.8), then "
        "install a CUDA build of torch (the install guide, docs/install.md, has the command)",
        None)
    assert diagnose(nvml, CPU_BUILD, "Linux", PYTHON).reason == (
        CPU_ONLY + named + "; update the NVIDIA driver to 520.61.05 or newer (CUDA 11.8), then "
        "install a CUDA build of torch (the install guide, docs/install.md, has the command)")


def test_the_command_installs_into_the_python_it_is_given():
    nvml = NvmlView((NvidiaCard("NVIDIA GeForce GTX 1650", (7, 5)),), "551.86", (12, 4))
    idle = diagnose(nvml, CPU_BUILD, "Linux", PYTHON)
    assert idle.command == (f"{PYTHON} -m pip install --force-reinstall torch torchvision "
                            "--index-url https://download.pytorch.org/whl/cu124")
    assert idle.text == f"{idle.reason}\n  {idle.command}"
