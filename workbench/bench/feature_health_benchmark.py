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
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import time
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
    "faces": dict(model="resnet18", weights="none", finetune="full", epochs=15, resize_size=64,
                  crop_size=56, batch_size=16, crop_mode="standard"),
    "shapes": dict(model="resnet18", weights="none", finetune="full", epochs=6, resize_size=48,
                   crop_size=40, batch_size=16, crop_mode="standard"),
}


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
    if name == "shapes":
        data = write_shape_dataset(root / name, per_class=60, size=(48, 48), layout="train_val",
                                   val_per_class=20, seed=seed)
    else:
        data = write_real_set(name, root / name, seed=seed)
    pairs, planted = plant_problems(Path(data) / "val", copies, outliers, seed)
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS), choices=list(SETS))
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--outliers", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print("| set | what | precision / recall | recall / false positives | per kind of copy |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            for row in measure_set(name, Path(tmp), args.copies, args.outliers, args.seed):
                print(row, flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
