"""The small, valid config the pre-flight tests change one field of."""

from __future__ import annotations

from pathlib import Path

from workbench.core.runs.config import TrainConfig


def small_config(data_root: Path | str, tmp_path: Path, **changes) -> TrainConfig:
    """small_cnn on 16 px crops of ``data_root``, one epoch on the CPU, with ``changes``."""
    base = TrainConfig(
        data_root=str(data_root), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=16, crop_size=16, batch_size=4, epochs=1,
        workers=0, device="cpu", amp=False, cache_images=False,
        output_dir=str(tmp_path / "runs"))
    return base.replace(**changes)
