"""Real image sets that pip packages ship, written as a user has them: class folders of PNGs.

Nothing here is drawn or generated; every pixel comes from a scan or a photograph inside a
wheel (no download at run time):

- ``digits``: scikit-learn's ``load_digits``, 1,797 scans of handwritten digits (UCI optical
  recognition set), 8x8 grey, ten classes. ``digits64`` is the same scans as 64x64 RGB PNGs
  (bilinear), as the issue's user had them; ``digits28`` as 28x28 grey PNGs (bilinear), the
  size of MNIST, as a user who met the scans through MNIST-style tutorials has them.
- ``faces``: scikit-image's ``lfw_subset``, 200 25x25 grey photos, 100 faces (Labeled Faces in
  the Wild) and 100 non-faces.
- ``textures``: scikit-image's photographs of brick, grass and gravel (512x512 grey), cut into
  32x32 patches, one class a photograph.
- ``photos``: eight colour photographs (scikit-learn's china and flower, scikit-image's
  astronaut, coffee, chelsea, rocket, immunohistochemistry and Hubble deep field) cut into
  32x32 patches, one class a photograph.

Patch sets take validation patches from the bottom quarter of each photograph and training
patches from the rest, so no validation patch overlaps a training one. The scan and photo sets
hold out a seeded 30% of each class.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

REAL_SETS = ("digits", "digits28", "digits64", "faces", "textures", "photos")
VAL_SHARE = 0.3
PATCH = 32
PATCH_STRIDE = 16


def write_real_set(name: str, root: Path | str, train_per_class: int | None = None,
                   val_per_class: int | None = None, seed: int = 0) -> Path:
    """Write ``root/train/<class>/*.png`` and ``root/val/<class>/*.png``; returns ``root``.

    Args:
        name: one of ``REAL_SETS``.
        train_per_class: at most this many training images a class (None: all).
        val_per_class: at most this many validation images a class (None: all); a given
            seed always keeps the same ones.
        seed: draws the held-out share and both subsets.

    Raises:
        ValueError: an unknown set name.
        ImportError: scikit-learn or scikit-image is not installed (``pip install
            workbench[bench]``).
    """
    loaders: dict[str, Callable[[np.random.Generator], dict]] = {
        "digits": _digits, "digits28": _digits28, "digits64": _digits64, "faces": _faces,
        "textures": _textures, "photos": _photos}
    if name not in loaders:
        raise ValueError(f"unknown image set '{name}'; choose from {', '.join(REAL_SETS)}")
    rng = np.random.default_rng(seed)
    try:
        classes = loaders[name](rng)
    except ImportError as exc:
        raise ImportError(f"image set '{name}' needs {exc.name}: pip install "
                          "'workbench[bench]' (scikit-learn and scikit-image)") from exc
    root = Path(root)
    for label, (train, val) in classes.items():
        train = _subset(train, train_per_class, rng)
        val = _subset(val, val_per_class, rng)
        for split, images in (("train", train), ("val", val)):
            folder = root / split / label
            folder.mkdir(parents=True, exist_ok=True)
            for index, pixels in enumerate(images):
                Image.fromarray(pixels).save(folder / f"{label}_{index:05d}.png")
    return root


def _subset(images: list[np.ndarray], count: int | None, rng: np.random.Generator
            ) -> list[np.ndarray]:
    if count is None or count >= len(images):
        return images
    return [images[i] for i in rng.permutation(len(images))[:count]]


def _held_out(images: list[np.ndarray], rng: np.random.Generator
              ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    order = rng.permutation(len(images))
    count = round(VAL_SHARE * len(images))
    return [images[i] for i in order[count:]], [images[i] for i in order[:count]]


def _digit_scans() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    # Scans hold 0..16 ink levels; white paper, dark ink as a scanner gives them.
    pixels = (255 - np.round(digits.images * 255 / 16)).astype(np.uint8)
    return pixels, digits.target


def _digits(rng: np.random.Generator) -> dict:
    pixels, labels = _digit_scans()
    return {str(d): _held_out(list(pixels[labels == d]), rng) for d in range(10)}


def _digits64(rng: np.random.Generator) -> dict:
    pixels, labels = _digit_scans()

    def rgb64(image: np.ndarray) -> np.ndarray:
        grown = Image.fromarray(image).resize((64, 64), Image.Resampling.BILINEAR)
        return np.asarray(grown.convert("RGB"))

    return {str(d): _held_out([rgb64(p) for p in pixels[labels == d]], rng) for d in range(10)}


def _digits28(rng: np.random.Generator) -> dict:
    pixels, labels = _digit_scans()

    def grey28(image: np.ndarray) -> np.ndarray:
        return np.asarray(Image.fromarray(image).resize((28, 28), Image.Resampling.BILINEAR))

    return {str(d): _held_out([grey28(p) for p in pixels[labels == d]], rng) for d in range(10)}


def _faces(rng: np.random.Generator) -> dict:
    from skimage.data import lfw_subset

    pixels = np.round(lfw_subset() * 255).astype(np.uint8)
    # lfw_subset: the first 100 images are faces, the last 100 are not.
    return {"face": _held_out(list(pixels[:100]), rng),
            "not_face": _held_out(list(pixels[100:]), rng)}


def _textures(_rng: np.random.Generator) -> dict:
    from skimage import data

    return {name: _patches(getattr(data, name)()) for name in ("brick", "grass", "gravel")}


def _photos(_rng: np.random.Generator) -> dict:
    from skimage import data
    from sklearn.datasets import load_sample_images

    china, flower = load_sample_images().images
    photos = {"china": china, "flower": flower, "astronaut": data.astronaut(),
              "coffee": data.coffee(), "chelsea": data.chelsea(), "rocket": data.rocket(),
              "ihc": data.immunohistochemistry(), "hubble": data.hubble_deep_field()[:512, :512]}
    return {name: _patches(np.ascontiguousarray(image[..., :3])) for name, image in
            photos.items()}


def _patches(image: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Training patches from the top three quarters, validation from the bottom quarter."""
    height, width = image.shape[:2]
    border = (height * 3 // 4) // PATCH_STRIDE * PATCH_STRIDE
    train = _grid(image[:border], width)
    val = _grid(image[border:], width)
    return train, val


def _grid(image: np.ndarray, width: int) -> list[np.ndarray]:
    return [np.ascontiguousarray(image[top:top + PATCH, left:left + PATCH])
            for top in range(0, image.shape[0] - PATCH + 1, PATCH_STRIDE)
            for left in range(0, width - PATCH + 1, PATCH_STRIDE)]
