"""Fixtures of the panel tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.config_form import ConfigForm


@pytest.fixture
def form(qtbot, tmp_path: Path) -> ConfigForm:
    """The settings form, shown, on a config whose folder and output are in ``tmp_path``."""
    widget = ConfigForm(TrainConfig(data_root=str(tmp_path), output_dir=str(tmp_path / "runs")))
    qtbot.addWidget(widget)
    widget.show()
    return widget
