"""Generated images and folders with known problems, for the health check's tests and benchmark.

``distinct_image`` draws a random scene (a colour gradient, random shapes, lines and noise), so
two draws are genuinely different pictures; ``near_copy`` makes the copies people end up with:
re-encoded at a lower JPEG quality, resized, slightly cropped, brightness-shifted.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

NEAR_COPY_KINDS = ("reencoded", "resized", "cropped", "brightened")


def distinct_image(rng: random.Random, size: int = 64) -> Image.Image:
    """A random RGB scene of ``size`` x ``size`` pixels."""
    corners = np.array([[rng.randint(0, 255) for _ in range(3)] for _ in range(4)], np.float32)
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float32) / max(1, size - 1)
    top = corners[0] * (1 - xs[..., None]) + corners[1] * xs[..., None]
    bottom = corners[2] * (1 - xs[..., None]) + corners[3] * xs[..., None]
    gradient = top * (1 - ys[..., None]) + bottom * ys[..., None]
    image = Image.fromarray(gradient.clip(0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(rng.randint(4, 9)):
        x0, y0 = rng.uniform(-0.2, 0.9) * size, rng.uniform(-0.2, 0.9) * size
        w, h = rng.uniform(0.15, 0.6) * size, rng.uniform(0.15, 0.6) * size
        colour = tuple(rng.randint(0, 255) for _ in range(3))
        shape = rng.choice(("ellipse", "rectangle", "line"))
        if shape == "ellipse":
            draw.ellipse((x0, y0, x0 + w, y0 + h), fill=colour)
        elif shape == "rectangle":
            draw.rectangle((x0, y0, x0 + w, y0 + h), fill=colour)
        else:
            draw.line((x0, y0, x0 + w, y0 + h), fill=colour, width=max(1, size // 16))
    noise = np.random.default_rng(rng.randint(0, 2**32 - 1)).normal(0, 6, (size, size, 3))
    pixels = np.asarray(image, np.float32) + noise
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8), "RGB")


def near_copy(image: Image.Image, kind: str) -> Image.Image:
    """A copy of ``image`` as ``kind`` of ``NEAR_COPY_KINDS`` changes it."""
    if kind == "reencoded":
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=30)
        buffer.seek(0)
        return Image.open(buffer).convert("RGB")
    if kind == "resized":
        return image.resize((image.width // 2, image.height // 2), Image.Resampling.BILINEAR)
    if kind == "cropped":
        dx, dy = max(1, image.width // 50), max(1, image.height // 50)  # 2% of each side
        return image.crop((dx, dy, image.width - dx, image.height - dy))
    if kind == "brightened":
        return ImageEnhance.Brightness(image).enhance(1.25)
    raise ValueError(f"unknown near-copy kind '{kind}'")


def blank_image(size: int = 64, value: int = 128) -> Image.Image:
    """One flat grey colour with a trace of noise: a near-blank image."""
    pixels = np.full((size, size, 3), value, np.float32)
    pixels += np.random.default_rng(value).normal(0, 1.0, pixels.shape)
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8), "RGB")


def darkened(image: Image.Image) -> Image.Image:
    """``image`` at a sixth of its brightness: a very dark picture with its detail kept."""
    return ImageEnhance.Brightness(image).enhance(0.16)


def blurred(image: Image.Image) -> Image.Image:
    """``image`` under a Gaussian blur of a twentieth of its size."""
    return image.filter(ImageFilter.GaussianBlur(max(2.0, image.width / 20)))


def truncated_jpeg_bytes(image: Image.Image) -> bytes:
    """A JPEG of ``image`` cut off half way: Pillow reads its header, not its pixels."""
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    data = buffer.getvalue()
    return data[: len(data) // 2]


def write_distinct_images(folder: Path, count: int, seed: int = 0, size: int = 64,
                          image_format: str = "PNG") -> list[Path]:
    """``count`` distinct generated images in ``folder`` (created); returns their paths."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    extension = ".png" if image_format == "PNG" else ".jpg"
    for index in range(count):
        path = folder / f"img_{index:04d}{extension}"
        distinct_image(rng, size).save(path, image_format)
        paths.append(path)
    return paths
