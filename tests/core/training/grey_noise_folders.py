"""Tiny class folders the training tests share."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def write_dark_and_light(root: Path) -> Path:
    """train/ and val/ folders of two classes a small CNN tells apart in an epoch or two
    whatever the process ran before: dark and light grey noise (circles and squares of 8
    images a class stayed at chance, 0.5, in one whole-suite run)."""
    rng = np.random.default_rng(0)
    for split, count in (("train", 8), ("val", 4)):
        for name, level in (("dark", 50), ("light", 200)):
            folder = root / split / name
            folder.mkdir(parents=True)
            for index in range(count):
                pixels = np.clip(level + rng.normal(0, 20, (32, 32)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(folder / f"{index}.png")
    return root
