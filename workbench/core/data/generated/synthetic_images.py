"""Generated, learnable image folders: the bundled demo dataset, tests and benchmarks use them.

Each class is a shape (circle, square, triangle, ...) drawn at a random place, size and colour
on a noisy background, so a classifier has to learn the shape, not a colour or a position.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

SHAPES = ("circle", "square", "triangle", "cross", "ring", "bar")


def draw_shape_image(shape: str, size: tuple[int, int], rng: random.Random) -> Image.Image:
    """One RGB image of ``shape`` on a random background."""
    width, height = size
    background = tuple(rng.randint(0, 90) for _ in range(3))
    image = Image.new("RGB", (width, height), background)
    draw = ImageDraw.Draw(image)
    side = min(width, height)
    radius = rng.uniform(0.22, 0.34) * side
    cx = rng.uniform(0.4, 0.6) * width
    cy = rng.uniform(0.4, 0.6) * height
    colour = tuple(rng.randint(150, 255) for _ in range(3))
    box = (cx - radius, cy - radius, cx + radius, cy + radius)
    line = max(2, int(radius * 0.35))
    if shape == "circle":
        draw.ellipse(box, fill=colour)
    elif shape == "square":
        draw.rectangle(box, fill=colour)
    elif shape == "triangle":
        draw.polygon([(cx, cy - radius), (cx - radius, cy + radius), (cx + radius, cy + radius)],
                     fill=colour)
    elif shape == "cross":
        draw.rectangle((cx - radius, cy - line / 2, cx + radius, cy + line / 2), fill=colour)
        draw.rectangle((cx - line / 2, cy - radius, cx + line / 2, cy + radius), fill=colour)
    elif shape == "ring":
        draw.ellipse(box, outline=colour, width=line)
    elif shape == "bar":
        draw.rectangle((cx - radius, cy - line / 2, cx + radius, cy + line / 2), fill=colour)
    else:
        raise ValueError(f"unknown shape '{shape}'")
    noise = Image.effect_noise((width, height), rng.uniform(10, 30)).convert("RGB")
    image = Image.blend(image, noise, 0.15)
    return image.filter(ImageFilter.GaussianBlur(0.5))


def write_shape_dataset(
    root: Path | str,
    classes: Sequence[str] = SHAPES[:4],
    per_class: int | Sequence[int] = 20,
    size: tuple[int, int] = (64, 48),
    layout: str = "flat",
    val_per_class: int = 0,
    image_format: str = "PNG",
    seed: int = 0,
) -> Path:
    """Write a class-per-folder dataset and return its root.

    ``layout`` is 'flat' (``root/<class>/``) or 'train_val' (``root/train/<class>/`` and
    ``root/val/<class>/`` with ``val_per_class`` images each). ``per_class`` may be a list to
    make an imbalanced folder.
    """
    root = Path(root)
    counts = [per_class] * len(classes) if isinstance(per_class, int) else list(per_class)
    if len(counts) != len(classes):
        raise ValueError("per_class needs one count per class")
    rng = random.Random(seed)
    suffix = ".png" if image_format.upper() == "PNG" else ".jpg"
    splits = [("", counts)] if layout == "flat" else [
        ("train", counts), ("val", [val_per_class] * len(classes))
    ]
    for split, split_counts in splits:
        for shape, count in zip(classes, split_counts, strict=True):
            folder = root / split / shape if split else root / shape
            folder.mkdir(parents=True, exist_ok=True)
            for index in range(count):
                image = draw_shape_image(shape, size, rng)
                image.save(folder / f"{shape}_{index:04d}{suffix}", format=image_format.upper())
    return root
