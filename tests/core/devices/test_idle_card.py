"""An NVIDIA card this torch cannot use is named, with the reason and the one command that
fixes it, in what ``workbench devices`` prints and what the check before Start says.

NVML answers at the ``pynvml`` function boundary with the figures real machines give (names,
driver versions, CUDA integers and compute capabilities of a GTX 1650, an RTX 3060 Laptop GPU,
a GTX 1060 and an RTX 4070 Laptop GPU); the torch side is the build's own facts
(``torch.version.cuda``, ``torch.cuda.is_available``, ``torch.cuda.get_arch_list``) set to a
CPU-only or a CUDA 13.0 build. Everything between them, down to the printed line, is the real
code.
"""

from __future__ import annotations

import sys

import pynvml
import pytest
import torch

from workbench.cli import main
from workbench.core.devices.cuda_builds import CUDA_BUILDS, install_command
from workbench.core.devices.idle_card import idle_card
from workbench.core.devices.selection import cuda_unavailable_reason, describe_device_choice
from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning.preflight import preflight

needs_no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="asserts the CPU fallback")

PYTHON = "/home/ana/.local/share/pipx/venvs/workbench/bin/python"
# torch 2.9's CUDA 13.0 wheels carry these (Turing and newer)
CU130_ARCHES = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


def fake_nvml(monkeypatch, name: str, driver: str, cuda_integer: int,
              capability: tuple[int, int]) -> None:
    """pynvml of a machine with one card and a loaded driver."""
    handle = object()
    monkeypatch.setattr(pynvml, "nvmlInit", lambda: None)
    monkeypatch.setattr(pynvml, "nvmlShutdown", lambda: None)
    monkeypatch.setattr(pynvml, "nvmlSystemGetDriverVersion", lambda: driver)
    monkeypatch.setattr(pynvml, "nvmlSystemGetCudaDriverVersion", lambda: cuda_integer)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCount", lambda: 1)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lambda i: handle if i == 0 else
                        pytest.fail("one card only"))
    monkeypatch.setattr(pynvml, "nvmlDeviceGetName",
                        lambda h: name.encode() if h is handle else pytest.fail("foreign handle"))
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCudaComputeCapability",
                        lambda h: capability if h is handle else pytest.fail("foreign handle"))


def torch_build(monkeypatch, version: str, cuda: str | None, available: bool | None = None,
                arches: list[str] | None = None) -> None:
    monkeypatch.setattr(torch, "__version__", version)
    monkeypatch.setattr(torch.version, "cuda", cuda)
    if available is not None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    if arches is not None:
        monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: list(arches))


@pytest.fixture(autouse=True)
def pipx_python(monkeypatch):
    """The interpreter of a pipx install of Workbench, so the printed command is its own."""
    monkeypatch.setattr(sys, "executable", PYTHON)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def devices_output(capsys) -> str:
    assert main(["devices"]) == 0
    return capsys.readouterr().out


@needs_no_cuda
def test_no_driver_names_the_driver_and_no_card(monkeypatch, capsys):
    def no_library():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", no_library)
    torch_build(monkeypatch, "2.9.1+cu130", "13.0", available=False)
    assert idle_card() is None
    assert devices_output(capsys).splitlines()[-1] == (
        "Training will use the CPU, because CUDA is unavailable: no NVIDIA driver was found "
        "on this system; install the NVIDIA driver to train on a GPU (this PyTorch is built "
        "for CUDA 13.0).")


def test_a_cpu_build_with_a_card_names_it_and_the_build_its_driver_runs(monkeypatch, capsys):
    fake_nvml(monkeypatch, "NVIDIA GeForce GTX 1650", "551.86", 12040, (7, 5))
    torch_build(monkeypatch, "2.9.1+cpu", None)
    assert devices_output(capsys).splitlines()[-2:] == [
        "Training will use the CPU, because CUDA is unavailable: this PyTorch (2.9.1+cpu) is a "
        "CPU-only build, so the NVIDIA GeForce GTX 1650 (driver 551.86, which supports CUDA up "
        "to 12.4) sits idle; install the CUDA 12.4 build of torch (cu124) with this command:",
        f"  {PYTHON} -m pip install --force-reinstall torch torchvision "
        "--index-url https://download.pytorch.org/whl/cu124",
    ]


@needs_no_cuda
def test_a_build_newer_than_the_driver_names_the_driver_it_needs(monkeypatch, capsys):
    fake_nvml(monkeypatch, "NVIDIA GeForce RTX 3060 Laptop GPU", "560.35.03", 12060, (8, 6))
    monkeypatch.setattr("platform.system", lambda: "Linux")
    torch_build(monkeypatch, "2.9.1+cu130", "13.0")  # CUDA does not start: no driver here
    assert devices_output(capsys).splitlines()[-2:] == [
        "Training will use the CPU, because CUDA is unavailable: this PyTorch (2.9.1+cu130) is "
        "built for CUDA 13.0, newer than the NVIDIA GeForce RTX 3060 Laptop GPU (driver "
        "560.35.03, which supports CUDA up to 12.6); CUDA 13.0 needs driver 580.65.06 or newer, "
        "so the card sits idle; install the CUDA 12.6 build of torch (cu126) with this command:",
        f"  {PYTHON} -m pip install --force-reinstall torch torchvision "
        "--index-url https://download.pytorch.org/whl/cu126",
    ]


def test_an_architecture_the_build_lacks_is_named_before_the_first_kernel(monkeypatch, capsys):
    fake_nvml(monkeypatch, "NVIDIA GeForce GTX 1060 6GB", "580.95.05", 13000, (6, 1))
    torch_build(monkeypatch, "2.9.1+cu130", "13.0", available=True, arches=CU130_ARCHES)
    lines = devices_output(capsys).splitlines()
    assert lines[0].startswith("cpu \u2014 ")  # no CUDA device is offered
    assert lines[1:] == [
        "Training will use the CPU, because CUDA is unavailable: this PyTorch (2.9.1+cu130) has "
        "no kernels for the NVIDIA GeForce GTX 1060 6GB (driver 580.95.05, which supports CUDA "
        "up to 13.0): its architecture, compute capability 6.1, is not among the build's sm_75, "
        "sm_80, sm_86, sm_90, sm_100, sm_120, so the card sits idle; install the CUDA 12.6 "
        "build of torch (cu126) with this command:",
        f"  {PYTHON} -m pip install --force-reinstall torch torchvision "
        "--index-url https://download.pytorch.org/whl/cu126",
    ]


def test_a_card_the_build_carries_is_used_and_nothing_is_said(monkeypatch):
    # Ada (8.9) runs the build's sm_86 kernels: same generation, older minor
    fake_nvml(monkeypatch, "NVIDIA GeForce RTX 4070 Laptop GPU", "580.95.05", 13000, (8, 9))
    torch_build(monkeypatch, "2.9.1+cu130", "13.0", available=True, arches=CU130_ARCHES)
    assert idle_card() is None
    assert cuda_unavailable_reason() is None
    assert describe_device_choice("cpu") == (
        "Training will use the CPU (a CUDA GPU is available but not selected).")


def test_without_pip_the_command_is_uvs():
    cu126 = next(build for build in CUDA_BUILDS if build.tag == "cu126")
    assert install_command(cu126, r"C:\Users\Ana Lima\AppData\Roaming\uv\tools\workbench"
                                  r"\Scripts\python.exe", has_pip=False) == (
        'uv pip install --python "C:\\Users\\Ana Lima\\AppData\\Roaming\\uv\\tools\\workbench'
        '\\Scripts\\python.exe" --reinstall-package torch --reinstall-package torchvision '
        "--torch-backend=cu126 torch torchvision")



@pytest.fixture
def shapes(tmp_path) -> TrainConfig:
    from workbench.core.data.generated.synthetic_images import write_shape_dataset

    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=6,
                               size=(16, 16))
    return TrainConfig(data_root=str(root), model="small_cnn", weights="none", finetune="full",
                       crop_mode="standard", resize_size=16, crop_size=16, batch_size=4,
                       epochs=1, workers=0, amp=False, cache_images=False,
                       output_dir=str(tmp_path / "runs"))


def test_before_start_an_idle_card_is_a_note_on_auto_and_a_problem_on_cuda(monkeypatch, shapes):
    fake_nvml(monkeypatch, "NVIDIA GeForce GTX 1650", "551.86", 12040, (7, 5))
    torch_build(monkeypatch, "2.9.1+cpu", None)
    command = (f"  {PYTHON} -m pip install --force-reinstall torch torchvision "
               "--index-url https://download.pytorch.org/whl/cu124")
    auto = preflight(shapes.replace(device="auto"))
    assert auto.can_start
    assert [(note.field, note.text) for note in auto.notes] == [(
        "device", "Training will use the CPU: this PyTorch (2.9.1+cpu) is a CPU-only build, so "
        "the NVIDIA GeForce GTX 1650 (driver 551.86, which supports CUDA up to 12.4) sits "
        "idle; install the CUDA 12.4 build of torch (cu124) with this command:\n" + command)]
    cuda = preflight(shapes.replace(device="cuda"))
    assert [(problem.field, problem.text) for problem in cuda.problems] == [(
        "device", "Device (device): cuda:0 was chosen but CUDA is unavailable: this PyTorch "
        "(2.9.1+cpu) is a CPU-only build, so the NVIDIA GeForce GTX 1650 (driver 551.86, which "
        "supports CUDA up to 12.4) sits idle; install the CUDA 12.4 build of torch (cu124) with "
        "this command (or choose 'auto' or 'cpu'):\n" + command)]
    assert preflight(shapes.replace(device="cpu")).notes == ()  # the CPU was asked for


def test_the_install_guides_table_is_the_modules():
    from pathlib import Path

    text = (Path(__file__).parents[3] / "docs" / "install.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1:5] for line in text.splitlines() if line.startswith("| `cu")]
    assert [[cell.strip().strip("`") for cell in row] for row in rows] == [
        [build.tag, build.cuda_text, build.min_driver_linux, build.min_driver_windows]
        for build in CUDA_BUILDS]
