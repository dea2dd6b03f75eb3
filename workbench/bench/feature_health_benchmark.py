"""How well the trained model's features find near duplicates and outliers, beside the hash.

For each image set (real images that scikit-learn and scikit-image ship, and generated
shapes) a validation folder gets planted problems with known answers:

- copies of some validation images, each changed one way (re-encoded at JPEG quality 30,
  resized to half, cropped by 2% or by 12% of each side, brightened by 25%, mirrored);
- outliers: images of another class put in a class's folder (copies filed in two classes as
  well), and blank frames (copies of each other as well).

A model is trained on the training folder with its defaults, the best model's penultimate
features of every validation image are read back through its own evaluation crops, and the
rules of ``model_features`` run at several thresholds. Rows: per threshold, the near-duplicate
precision and recall (a found pair is right when it is a planted pair), per kind of copy the
recall of the features and of the perceptual hash (``NEAR_DUPLICATE_BITS``), and the outlier
recall and false-positive share of the clean validation images.

    python -m workbench.bench.feature_health_benchmark [--sets digits faces shapes]

``--sweep EPOCHS...`` measures instead how far the findings can be trusted as the model gets
better: the same planted folder trained for each number of epochs, and per run the model's
validation accuracy beside the precision of each finding kind at its default threshold (a
near-duplicate pair is right when it is planted or pixel-identical, a flagged outlier when it
was planted). ``clipart`` (four categories of the openclipart package, composited on grey and
scaled to 64 px) is one more set there.

    python -m workbench.bench.feature_health_benchmark --sweep 1 2 4 8 --sets digits clipart
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import imagehash
import numpy as np
import torch
from PIL import Image, ImageOps

from workbench.bench.real_image_sets import write_real_set
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.health.duplicate_groups import NEAR_DUPLICATE_BITS
from workbench.core.data.health.generated_folders import near_copy
from workbench.core.data.health.model_features import (
    NEAR_DUPLICATE_SIMILARITY,
    OUTLIER_Z,
    feature_findings,
)
from workbench.core.models.heads import classifier_head
from workbench.core.models.prediction import image_crops, load_classifier
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.model_defaults import apply_model_defaults
from workbench.core.training.engine import train

COPY_KINDS = ("reencoded", "resized", "cropped", "cropped12", "brightened", "mirrored")
PAIR_KINDS = (*COPY_KINDS, "other class", "blank", "in the set")
SIMILARITIES = (0.98, 0.99, 0.995, 0.999)
OUTLIER_ZS = (3.5, 5.0, 7.0)
# Per set: the model, its training settings (small sizes: a 2-core CPU), copies and outliers.
SETS = {
    "digits": dict(model="small_cnn", epochs=6),
    "clipart": dict(model="small_cnn", epochs=8, resize_size=48, crop_size=40, batch_size=16,
                    crop_mode="standard"),
    "faces": dict(model="resnet18", weights="none", finetune="full", epochs=15, resize_size=64,
                  crop_size=56, batch_size=16, crop_mode="standard"),
    "shapes": dict(model="resnet18", weights="none", finetune="full", epochs=6, resize_size=48,
                   crop_size=40, batch_size=16, crop_mode="standard"),
}


CLIPART = Path("/usr/share/openclipart/png")
CLIPART_CLASSES = ("animals", "food", "people", "transportation")


def write_clipart_set(root: Path, train_per_class: int = 45, val_per_class: int = 15,
                      seed: int = 0, side: int = 64) -> Path:
    """Four openclipart categories as ``root/train|val/<class>/*.png``: each drawing composited
    on mid grey (as the app composites transparency) and scaled to ``side`` on its long side.

    Raises:
        FileNotFoundError: the openclipart package is not installed.
    """
    if not CLIPART.is_dir():
        raise FileNotFoundError(f"{CLIPART}: not found (apt install openclipart-png)")
    rng = random.Random(seed)
    Image.MAX_IMAGE_PIXELS = None  # the package's own posters; scaled down at once
    for name in CLIPART_CLASSES:
        files = sorted((CLIPART / name).rglob("*.png"))
        chosen = rng.sample(files, train_per_class + val_per_class)
        for index, source in enumerate(chosen):
            split = "train" if index < train_per_class else "val"
            with Image.open(source) as image:
                image.draft("RGBA", (side * 4, side * 4))
                rgba = image.convert("RGBA")
            rgba.thumbnail((side, side))
            drawn = Image.new("RGB", rgba.size, (128, 128, 128))
            drawn.paste(rgba, mask=rgba.getchannel("A"))
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            drawn.save(folder / f"{name}_{index:03d}.png")
    return root


def plant_problems(val: Path, copies: int, outliers: int, seed: int
                   ) -> tuple[dict[tuple[str, str], str], set[str]]:
    """Write near copies and outliers into the class folders under ``val``.

    Returns:
        The planted pairs (original, copy) with their kind, and the planted outliers' paths.
    """
    rng = random.Random(seed)
    classes = sorted(p for p in val.iterdir() if p.is_dir())
    files = {c: sorted(c.glob("*.png")) for c in classes}
    pairs: dict[tuple[str, str], str] = {}
    originals = rng.sample([f for c in classes for f in files[c]], copies)
    for index, original in enumerate(originals):
        kind = COPY_KINDS[index % len(COPY_KINDS)]
        image = Image.open(original).convert("RGB")
        copy = original.with_name(f"copy_{index:03d}_{kind}.png")
        _changed(image, kind).save(copy)
        pairs[(str(original), str(copy))] = kind
    planted: set[str] = set()
    blanks: list[str] = []
    for index in range(outliers):
        target, source = rng.sample(classes, 2)
        path = target / f"outlier_{index:03d}.png"
        if index % 4 == 3:  # a blank frame among the real ones; the blanks are copies too
            size = Image.open(files[target][0]).size
            Image.new("RGB", size, (128, 128, 128)).save(path)
            pairs.update({(blank, str(path)): "blank" for blank in blanks})
            blanks.append(str(path))
        else:  # another class's image: an outlier here, and a copy filed in two classes
            original = rng.choice(files[source])
            Image.open(original).save(path)
            pairs[(str(original), str(path))] = "other class"
        planted.add(str(path))
    return pairs, planted


def _changed(image: Image.Image, kind: str) -> Image.Image:
    if kind == "mirrored":
        return ImageOps.mirror(image)
    if kind == "cropped12":
        dx, dy = max(1, image.width * 12 // 100), max(1, image.height * 12 // 100)
        return image.crop((dx, dy, image.width - dx, image.height - dy)).resize(image.size)
    return near_copy(image, kind)


def validation_features(model_file: Path, paths: list[str]) -> np.ndarray:
    """The penultimate features of ``paths`` through the model's own evaluation crops and
    normalisation (the classifier ``workbench predict`` uses)."""
    classifier = load_classifier(model_file)
    kept: list[torch.Tensor] = []
    handle = classifier_head(classifier.module.model).register_forward_pre_hook(
        lambda _m, args: kept.append(args[0].detach().flatten(1).mean(dim=0, keepdim=True)))
    with torch.no_grad():
        for path in paths:
            classifier.module(image_crops(path, classifier.preprocessing))
    handle.remove()
    return torch.cat(kept).numpy()


def _found_pairs(report_items: tuple) -> set[frozenset[str]]:
    return {frozenset(pair) for item in report_items
            for pair in itertools.combinations(item.files, 2)}


def _identical_pairs(paths: list[str]) -> list[tuple[str, str]]:
    """Pairs of files with the same pixels (the set's own copies count as duplicates too)."""
    by_pixels: dict[bytes, list[str]] = {}
    for path in paths:
        pixels = np.asarray(Image.open(path).convert("RGB"))
        by_pixels.setdefault(pixels.tobytes(), []).append(path)
    return [pair for group in by_pixels.values() for pair in itertools.combinations(group, 2)]


def _hash_found(pair: tuple[str, str]) -> bool:
    first, second = (imagehash.phash(Image.open(p).convert("RGB")) for p in pair)
    return first - second <= NEAR_DUPLICATE_BITS


def measure_set(name: str, root: Path, copies: int, outliers: int, seed: int) -> list[str]:
    """Markdown rows for one image set."""
    data, pairs, planted = planted_set(name, root, copies, outliers, seed)
    settings = SETS[name]
    config = apply_model_defaults(TrainConfig(
        data_root=str(data), output_dir=str(root / "runs"), workers=0, device="cpu", seed=seed,
        **settings), explicit=settings)
    started = time.perf_counter()
    end = train(config, Callback())
    seconds = time.perf_counter() - started
    if end.status != "completed":
        raise RuntimeError(f"{name}: the run ended {end.status}: {end.error}")
    paths = sorted(str(p) for p in (Path(data) / "val").rglob("*.png"))
    class_names = sorted(p.name for p in (Path(data) / "val").iterdir() if p.is_dir())
    labels = [class_names.index(Path(p).parent.name) for p in paths]
    features = validation_features(Path(end.run_dir) / "best_model.pt", paths)
    pairs.update({pair: "in the set" for pair in _identical_pairs(paths)
                  if pair not in pairs and pair[::-1] not in pairs})
    truth = {frozenset(pair) for pair in pairs}
    clean = len(set(paths) - planted - {copy for _, copy in pairs})
    rows = [f"| {name} | {config.model}, {end.epochs_completed} epochs, val accuracy "
            f"{end.best_val_accuracy:.3f}, {seconds:.0f} s | {len(paths)} val images, "
            f"{len(pairs)} copied pairs, {len(planted)} outliers | | |"]
    for similarity in SIMILARITIES:
        report = feature_findings(paths, labels, class_names, features,
                                  near_similarity=similarity)
        finding = report.finding("model_near_duplicate")
        found = _found_pairs(finding.items if finding else ())
        right = len(found & truth)
        precision = right / len(found) if found else 1.0
        by_kind = {kind: sum(1 for p, k in pairs.items() if k == kind
                             and frozenset(p) in found) for kind in PAIR_KINDS}
        per_kind = ", ".join(f"{k} {by_kind[k]}" for k in PAIR_KINDS)
        mark = " (default)" if similarity == NEAR_DUPLICATE_SIMILARITY else ""
        rows.append(f"| | near duplicates, similarity >= {similarity}{mark} | precision "
                    f"{precision:.2f} ({right}/{len(found)}) | recall {right / len(truth):.2f} "
                    f"| {per_kind} |")
    hashed = {kind: sum(1 for p, k in pairs.items() if k == kind and _hash_found(p))
              for kind in PAIR_KINDS}
    rows.append(f"| | near duplicates by the hash (<= {NEAR_DUPLICATE_BITS} bits) | | recall "
                f"{sum(hashed.values()) / len(pairs):.2f} | "
                + ", ".join(f"{k} {hashed[k]}" for k in PAIR_KINDS) + " |")
    for z in OUTLIER_ZS:
        report = feature_findings(paths, labels, class_names, features, outlier_z=z)
        finding = report.finding("model_outlier")
        flagged = {item.files[0] for item in finding.items} if finding else set()
        hits = len(flagged & planted)
        false = len(flagged - planted - {copy for _, copy in pairs})
        mark = " (default)" if z == OUTLIER_Z else ""
        rows.append(f"| | outliers, robust z > {z}{mark} | recall {hits / len(planted):.2f} "
                    f"({hits}/{len(planted)}) | false positives {false / clean:.3f} "
                    f"({false}/{clean}) | |")
    return rows


def planted_set(name: str, root: Path, copies: int, outliers: int, seed: int
                ) -> tuple[Path, dict[tuple[str, str], str], set[str]]:
    """``name`` written under ``root`` with problems planted in its validation folder."""
    if name == "shapes":
        data = write_shape_dataset(root / name, per_class=60, size=(48, 48), layout="train_val",
                                   val_per_class=20, seed=seed)
    elif name == "clipart":
        data = write_clipart_set(root / name, seed=seed)
    else:
        data = write_real_set(name, root / name, seed=seed)
    pairs, planted = plant_problems(Path(data) / "val", copies, outliers, seed)
    return Path(data), pairs, planted


def sweep_set(name: str, root: Path, epochs_list: list[int], copies: int, outliers: int,
              seed: int, max_steps: int = 0) -> Iterator[str]:
    """Markdown rows, one as each run ends: per number of epochs (of at most ``max_steps``
    steps, 0: whole epochs), the validation accuracy and the precision of each finding kind
    at the default thresholds."""
    data, pairs, planted = planted_set(name, root, copies, outliers, seed)
    paths = sorted(str(p) for p in (data / "val").rglob("*.png"))
    class_names = sorted(p.name for p in (data / "val").iterdir() if p.is_dir())
    labels = [class_names.index(Path(p).parent.name) for p in paths]
    pairs.update({pair: "in the set" for pair in _identical_pairs(paths)
                  if pair not in pairs and pair[::-1] not in pairs})
    truth = {frozenset(pair) for pair in pairs}
    for epochs in epochs_list:
        settings = {**SETS[name], "epochs": epochs, "max_steps_per_epoch": max_steps}
        config = apply_model_defaults(TrainConfig(
            data_root=str(data), output_dir=str(root / "runs"), workers=0, device="cpu",
            seed=seed, **settings), explicit=settings)
        end = train(config, Callback())
        if end.status != "completed":
            raise RuntimeError(f"{name}: the run ended {end.status}: {end.error}")
        features = validation_features(Path(end.run_dir) / "best_model.pt", paths)
        report = feature_findings(paths, labels, class_names, features)
        near = report.finding("model_near_duplicate")
        found = _found_pairs(near.items if near else ())
        right = len(found & truth)
        outlier = report.finding("model_outlier")
        flagged = {item.files[0] for item in outlier.items} if outlier else set()
        hits = len(flagged & planted)
        steps = f" of {max_steps} steps" if max_steps else ""
        yield (f"| {name} | {config.model}, {epochs} epochs{steps} | "
               f"{end.best_val_accuracy:.3f} (chance {1 / len(class_names):.2f}) | "
               f"{_share(right, len(found))} | {_share(hits, len(flagged))} |")


def _share(right: int, found: int) -> str:
    return f"{right / found:.2f} ({right}/{found})" if found else "none found"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS), choices=list(SETS))
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--outliers", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sweep", type=int, nargs="*", metavar="EPOCHS",
                        help="train each set for each of these numbers of epochs and print "
                             "the precision of each finding kind beside the model's accuracy")
    parser.add_argument("--max-steps", type=int, default=0,
                        help="with --sweep: at most this many steps an epoch (weaker models)")
    args = parser.parse_args(argv)
    if args.sweep:
        print("| set | model | val accuracy | near duplicates (model): precision "
              "| outliers (model): precision |")
        print("| --- | --- | --- | --- | --- |")
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.sets:
                for row in sweep_set(name, Path(tmp), args.sweep, args.copies, args.outliers,
                                     args.seed, args.max_steps):
                    print(row, flush=True)
        return
    print("| set | what | precision / recall | recall / false positives | per kind of copy |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            for row in measure_set(name, Path(tmp), args.copies, args.outliers, args.seed):
                print(row, flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
