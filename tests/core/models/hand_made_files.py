"""Small files the export tests build by hand: an ONNX graph saved with Workbench's metadata,
and a folder whose every image has a resized copy under another name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper
from PIL import Image


def save_onnx_graph(graph: onnx.GraphProto, metadata: dict[str, str], path: Path) -> Path:
    """``graph`` as an opset-18 ONNX file at ``path`` with ``metadata`` as its properties."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))
    return path


def write_images_and_resized_copies(root: Path, rng: np.random.Generator) -> None:
    """``root/a`` and ``root/b``: 8 random 32 px images each, and a 24 px copy of each."""
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        for i in range(8):  # each image and a resized copy under another name
            image = Image.fromarray(rng.integers(0, 256, (32, 32), dtype=np.uint8))
            image.save(root / name / f"{i:02d}.png")
            image.resize((24, 24)).save(root / name / f"z{7 - i}.png")
