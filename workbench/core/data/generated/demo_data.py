"""The bundled demo dataset: generated on first use, so it needs no network and no download.

Four shape classes in ``train/`` and ``val/`` folders, small enough to train to high accuracy on
two CPU cores in a couple of minutes, and the config that does it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from workbench.core.data.generated.synthetic_images import SHAPES, write_shape_dataset
from workbench.core.runs.config import TrainConfig

DEMO_CLASSES = SHAPES[:4]
DEMO_TRAIN_PER_CLASS = 60
DEMO_VAL_PER_CLASS = 20
DEMO_IMAGE_SIZE = (80, 64)
_MARKER = "workbench-demo.json"
_MARKER_VERSION = 1


def default_demo_dir() -> Path:
    base = os.environ.get("WORKBENCH_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    if not os.environ.get("WORKBENCH_CACHE_DIR"):
        root = root / "workbench"
    return root / "demo_data"


def ensure_demo_dataset(root: Path | str | None = None) -> Path:
    """Create the demo dataset under ``root`` unless a complete one is already there."""
    root = Path(root) if root is not None else default_demo_dir()
    marker = root / _MARKER
    if marker.is_file():
        try:
            if json.loads(marker.read_text()).get("version") == _MARKER_VERSION:
                return root
        except (OSError, ValueError):
            pass
    write_shape_dataset(
        root,
        classes=DEMO_CLASSES,
        per_class=DEMO_TRAIN_PER_CLASS,
        size=DEMO_IMAGE_SIZE,
        layout="train_val",
        val_per_class=DEMO_VAL_PER_CLASS,
        seed=1234,
    )
    marker.write_text(json.dumps({"version": _MARKER_VERSION, "classes": list(DEMO_CLASSES)}))
    return root


def demo_config(data_root: Path | str, output_dir: str = "runs") -> TrainConfig:
    """A ResNet18 five-crop run that learns the demo shapes on a CPU in a couple of minutes.

    ImageNet weights would need a download, so the demo trains the whole network from scratch.
    """
    return TrainConfig(
        data_root=str(data_root),
        model="resnet18",
        weights="none",
        finetune="full",
        crop_mode="five_crop",
        crop_strategy="average_logits",
        resize_size=64,
        crop_size=56,
        epochs=4,
        batch_size=16,
        optimizer="adamw",
        lr=1e-3,
        weight_decay=1e-4,
        scheduler="cosine",
        workers=min(2, TrainConfig().workers),
        output_dir=output_dir,
        run_name="demo",
    )
