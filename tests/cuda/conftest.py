"""CUDA tests: every test here is marked ``cuda`` and skipped, with the reason, without a GPU.

Run them alone with ``pytest -m cuda`` (``.ci/gpu-check`` does, on a GPU machine). They train
real tiny runs on the device; a few cap the process's GPU memory to emulate a 4 GiB card.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.devices.selection import cuda_unavailable_reason
from workbench.core.runs.config import TrainConfig

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = cuda_unavailable_reason()
    for item in items:
        if HERE not in Path(str(item.fspath)).parents:
            continue
        item.add_marker(pytest.mark.cuda)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}"))


@pytest.fixture
def shapes(tmp_path: Path) -> Path:
    """Four shape classes, 8 train and 4 val images each, 40x32 pixels."""
    return write_shape_dataset(tmp_path / "shapes", per_class=8, size=(40, 32),
                               layout="train_val", val_per_class=4)


@pytest.fixture
def cuda_config(shapes: Path, tmp_path: Path) -> TrainConfig:
    """A ResNet18 run of a few seconds on a GPU (no downloads)."""
    return TrainConfig(
        data_root=str(shapes), model="resnet18", weights="none", finetune="full",
        crop_mode="standard", resize_size=36, crop_size=32, batch_size=8, epochs=1,
        workers=0, output_dir=str(tmp_path / "runs"), device="cuda:0", amp=True,
        channels_last=True, cache_images=False,
    )


@pytest.fixture
def window_settings(tmp_path: Path) -> Iterator[Path]:
    """QSettings of a window test live in tmp_path, never in the user's settings."""
    from PySide6.QtCore import QCoreApplication, QSettings

    folder = tmp_path / "qsettings"
    previous = (QCoreApplication.organizationName(), QSettings.defaultFormat())
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    QCoreApplication.setOrganizationName(f"workbench-test-{uuid.uuid4().hex[:8]}")
    yield folder
    QCoreApplication.setOrganizationName(previous[0])
    QSettings.setDefaultFormat(previous[1])
