"""Generated handwritten-looking digits: a stand-in for MNIST where nothing can be downloaded.

Each digit is a few pen strokes (smooth splines through control points, several writing styles
per digit: open or closed 4, flagged or plain 1, crossed 7, ...). Every image draws its own
hand: control points jittered, the whole digit slanted, rotated, scaled, squeezed and moved,
bent by a smooth elastic displacement, written with a pen of random thickness, then reduced to
28x28 grey (white on black, as MNIST) with blur and sensor noise.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

Stroke = list[tuple[float, float]]

DIGIT_SIZE = 28
# Strokes are drawn this many times larger, then reduced: antialiased edges, as a scan has.
SUPERSAMPLE = 4


def _ellipse(cx: float, cy: float, rx: float, ry: float, start: float = 0.0,
             turns: float = 1.0, points: int = 10) -> Stroke:
    return [(cx + rx * math.sin(start + 2 * math.pi * turns * i / points),
             cy - ry * math.cos(start + 2 * math.pi * turns * i / points))
            for i in range(points + 1)]


# Control points in a unit box (x right, y down); each digit has one or more styles, each
# style one or more strokes.
DIGIT_STYLES: dict[int, list[list[Stroke]]] = {
    0: [[_ellipse(0.5, 0.5, 0.28, 0.4)], [_ellipse(0.5, 0.5, 0.22, 0.42, start=0.4)]],
    1: [[[(0.5, 0.1), (0.5, 0.5), (0.5, 0.9)]],
        [[(0.32, 0.28), (0.5, 0.1), (0.5, 0.5), (0.5, 0.9)]],
        [[(0.32, 0.28), (0.52, 0.1), (0.5, 0.9)], [(0.32, 0.9), (0.68, 0.9)]]],
    2: [[[(0.22, 0.3), (0.35, 0.13), (0.6, 0.1), (0.75, 0.28), (0.65, 0.5), (0.4, 0.72),
          (0.22, 0.9), (0.5, 0.88), (0.8, 0.9)]],
        [[(0.25, 0.25), (0.5, 0.1), (0.74, 0.25), (0.6, 0.55), (0.25, 0.9), (0.42, 0.8),
          (0.6, 0.88), (0.8, 0.86)]]],
    3: [[[(0.25, 0.15), (0.55, 0.1), (0.72, 0.25), (0.55, 0.45), (0.42, 0.48)],
         [(0.42, 0.48), (0.7, 0.58), (0.72, 0.8), (0.5, 0.92), (0.22, 0.85)]],
        [[(0.22, 0.12), (0.75, 0.12), (0.45, 0.45), (0.72, 0.6), (0.7, 0.82), (0.45, 0.92),
          (0.22, 0.82)]]],
    4: [[[(0.6, 0.1), (0.4, 0.4), (0.2, 0.65), (0.5, 0.65), (0.82, 0.65)],
         [(0.62, 0.35), (0.62, 0.65), (0.62, 0.92)]],
        [[(0.28, 0.1), (0.25, 0.4), (0.28, 0.58), (0.55, 0.58), (0.78, 0.55)],
         [(0.7, 0.1), (0.68, 0.5), (0.66, 0.92)]]],
    5: [[[(0.75, 0.1), (0.5, 0.1), (0.3, 0.11)],
         [(0.3, 0.11), (0.28, 0.3), (0.27, 0.46), (0.55, 0.4), (0.75, 0.6), (0.65, 0.85),
          (0.4, 0.92), (0.22, 0.82)]]],
    6: [[[(0.68, 0.1), (0.45, 0.25), (0.3, 0.5), (0.28, 0.75), (0.45, 0.92), (0.68, 0.82),
          (0.7, 0.62), (0.5, 0.5), (0.3, 0.62)]]],
    7: [[[(0.2, 0.12), (0.5, 0.12), (0.8, 0.12), (0.6, 0.5), (0.42, 0.92)]],
        [[(0.2, 0.15), (0.8, 0.12), (0.55, 0.55), (0.45, 0.92)], [(0.38, 0.5), (0.72, 0.5)]]],
    8: [[_ellipse(0.5, 0.29, 0.19, 0.18), _ellipse(0.5, 0.7, 0.24, 0.22)],
        [[(0.62, 0.15), (0.45, 0.1), (0.3, 0.25), (0.5, 0.48), (0.72, 0.7), (0.5, 0.92),
          (0.28, 0.72), (0.5, 0.48), (0.7, 0.25), (0.62, 0.15)]]],
    9: [[_ellipse(0.48, 0.32, 0.22, 0.2), [(0.7, 0.32), (0.66, 0.6), (0.6, 0.92)]],
        [_ellipse(0.48, 0.3, 0.2, 0.19), [(0.68, 0.3), (0.68, 0.6), (0.68, 0.92)]]],
}


def draw_digit(digit: int, rng: np.random.Generator, size: int = DIGIT_SIZE) -> Image.Image:
    """One ``size`` x ``size`` grey image of ``digit`` in a random hand."""
    styles = DIGIT_STYLES[digit]
    strokes = styles[int(rng.integers(len(styles)))]
    big = size * SUPERSAMPLE
    canvas = Image.new("L", (big, big), 0)
    draw = ImageDraw.Draw(canvas)
    transform = _random_hand(rng)
    pen = rng.uniform(1.3, 3.2) * SUPERSAMPLE
    for stroke in strokes:
        control = np.array(stroke) + rng.normal(0.0, 0.025, (len(stroke), 2))
        path = transform(_spline(control)) * big
        points = [(float(x), float(y)) for x, y in path]
        draw.line(points, fill=255, width=max(1, int(round(pen))), joint="curve")
        radius = pen / 2
        for x, y in (points[0], points[-1]):  # round pen ends
            draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=255)
    image = canvas.resize((size, size), Image.Resampling.BOX)
    if rng.random() < 0.5:
        image = image.filter(ImageFilter.GaussianBlur(rng.uniform(0.2, 0.7)))
    pixels = np.asarray(image, dtype=np.float32)
    pixels = pixels * rng.uniform(0.75, 1.0) + rng.normal(0.0, rng.uniform(2.0, 12.0),
                                                          pixels.shape)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), mode="L")


def write_digit_dataset(root: Path | str, train_per_class: int = 600, val_per_class: int = 150,
                        seed: int = 0, size: int = DIGIT_SIZE) -> Path:
    """Write ``root/train/<digit>/`` and ``root/val/<digit>/`` PNG folders; returns ``root``."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    for split, count in (("train", train_per_class), ("val", val_per_class)):
        for digit in range(10):
            folder = root / split / str(digit)
            folder.mkdir(parents=True, exist_ok=True)
            for index in range(count):
                draw_digit(digit, rng, size).save(folder / f"{digit}_{index:05d}.png")
    return root


def _spline(control: np.ndarray, per_segment: int = 12) -> np.ndarray:
    """A Catmull-Rom curve through ``control`` ``[N,2]`` (a straight line for two points)."""
    if len(control) < 3:
        steps = np.linspace(0.0, 1.0, per_segment)[:, None]
        return control[0] + steps * (control[-1] - control[0])
    padded = np.vstack([2 * control[0] - control[1], control, 2 * control[-1] - control[-2]])
    t = np.linspace(0.0, 1.0, per_segment, endpoint=False)[:, None]
    pieces = []
    for i in range(1, len(padded) - 2):
        p0, p1, p2, p3 = padded[i - 1], padded[i], padded[i + 1], padded[i + 2]
        pieces.append(0.5 * (2 * p1 + (p2 - p0) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t ** 2
                             + (3 * p1 - p0 - 3 * p2 + p3) * t ** 3))
    pieces.append(control[-1:])
    return np.vstack(pieces)


def _random_hand(rng: np.random.Generator):
    """A random writer's geometry: unit-box points ``[N,2]`` -> unit-box points."""
    slant = rng.uniform(-0.35, 0.35)
    angle = rng.uniform(-0.2, 0.2)
    scale = rng.uniform(0.6, 0.85)
    squeeze = rng.uniform(0.8, 1.15)
    shift = rng.uniform(-0.08, 0.08, 2)
    # Elastic bend: a smooth displacement from two random low-frequency waves per axis.
    waves = rng.normal(0.0, 0.03, (2, 2))
    freq = rng.uniform(1.5, 3.5, (2, 2))
    phase = rng.uniform(0.0, 2 * math.pi, (2, 2))
    cos, sin = math.cos(angle), math.sin(angle)

    def apply(points: np.ndarray) -> np.ndarray:
        x, y = points[:, 0] - 0.5, points[:, 1] - 0.5
        x = x * squeeze + slant * -y
        x, y = cos * x - sin * y, sin * x + cos * y
        bent_x = x + waves[0, 0] * np.sin(freq[0, 0] * 2 * y + phase[0, 0]) \
            + waves[0, 1] * np.sin(freq[0, 1] * 2 * x + phase[0, 1])
        bent_y = y + waves[1, 0] * np.sin(freq[1, 0] * 2 * x + phase[1, 0]) \
            + waves[1, 1] * np.sin(freq[1, 1] * 2 * y + phase[1, 1])
        return np.stack([bent_x * scale + 0.5 + shift[0], bent_y * scale + 0.5 + shift[1]],
                        axis=1)

    return apply
