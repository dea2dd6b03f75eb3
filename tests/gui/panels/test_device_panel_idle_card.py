"""The device picker names an NVIDIA card this torch cannot use and copies the command that
installs a build for it (NVML answering at the ``pynvml`` boundary, as in
tests/core/devices/test_idle_card.py)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QGuiApplication

from tests.core.devices.test_idle_card import PYTHON, fake_nvml, torch_build
from workbench.gui.panels.device_panel import DevicePanel

pytestmark = pytest.mark.usefixtures("pipx_python")

COMMAND = (f"{PYTHON} -m pip install --force-reinstall torch torchvision "
           "--index-url https://download.pytorch.org/whl/cu124")


@pytest.fixture
def pipx_python(monkeypatch):
    import sys

    monkeypatch.setattr(sys, "executable", PYTHON)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def detected_panel(qtbot) -> DevicePanel:
    panel = DevicePanel()
    qtbot.addWidget(panel)
    panel.show()
    with qtbot.waitSignal(panel.devices_detected, timeout=30_000):
        panel.start_detection()
    return panel


def test_the_picker_names_the_idle_card_and_copies_its_command(qtbot, monkeypatch):
    fake_nvml(monkeypatch, "NVIDIA GeForce GTX 1650", "551.86", 12040, (7, 5))
    torch_build(monkeypatch, "2.9.1+cpu", None)
    panel = detected_panel(qtbot)
    assert panel.choice_text() == (
        "Training will use the CPU, because CUDA is unavailable: this PyTorch (2.9.1+cpu) is a "
        "CPU-only build, so the NVIDIA GeForce GTX 1650 (driver 551.86, which supports CUDA up "
        "to 12.4) sits idle; install the CUDA 12.4 build of torch (cu124) with this command:\n"
        f"  {COMMAND}")
    assert panel.copy_command_button.isVisible()
    panel.copy_command_button.click()
    assert QGuiApplication.clipboard().text() == COMMAND


def test_without_an_idle_card_there_is_nothing_to_copy(qtbot, monkeypatch):
    def no_library():
        import pynvml

        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr("pynvml.nvmlInit", no_library)
    torch_build(monkeypatch, "2.9.1+cpu", None)
    panel = detected_panel(qtbot)
    assert panel.choice_text() == (
        "Training will use the CPU, because CUDA is unavailable: this PyTorch (2.9.1+cpu) is a "
        "CPU-only build; install a CUDA build of torch (see pytorch.org, 'Get started') to "
        "train on an NVIDIA GPU.")
    assert not panel.copy_command_button.isVisible()
