"""After training: what the model's own features find that pixel hashes miss.

The best epoch's evaluation already computes, for every validation image, the features its
classifier head receives (the penultimate layer, averaged over the image's crops like its
logits). Two rules read them, with no second pass over the images:

- near duplicates: two images whose features, each dimension standardised over the
  validation set, point the same way (cosine similarity at least
  ``NEAR_DUPLICATE_SIMILARITY``): the same subject shot twice, a crop, a recolouring, which a
  perceptual hash of the pixels may call different;
- outliers: an image far from the centre of its own class's features, by the robust z-score of
  Iglewicz and Hoaglin (the median and the median absolute deviation of the class's distances,
  flagged above ``OUTLIER_Z``): a wrong folder, a blank frame, an unusual view. Classes with
  fewer than ``MIN_CLASS_IMAGES`` validation images have no centre worth the name and are
  skipped.

The findings are a ``HealthReport`` like the folder's own check, so the same panel and report
show them, and leaving their files out writes the same exclusion list.

Both rules read what the model learnt: a model that has not learnt the classes (from random
weights after a few epochs, on a small folder) has features that call unlike images alike and
ordinary images far. Below ``least_accuracy`` on the validation images (half-way from chance
to every image right) the findings are withheld, and the report says why in one line
(``withheld``); ``python -m workbench.bench.feature_health_benchmark --sweep`` measures the
findings' precision against the model's accuracy (docs/data-health.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.core.data.health.duplicate_groups import connected_groups
from workbench.core.data.health.findings import (
    Finding,
    FindingItem,
    HealthReport,
    report_from_dict,
    write_report,
)
from workbench.core.runs.run_folder import FEATURE_FINDINGS_FILE

# Measured by ``python -m workbench.bench.feature_health_benchmark`` (README): at 0.995 the
# found pairs were right 0.93-1.00 of the time on real digit scans, real faces and generated
# shapes; at 0.99 digits fell to 0.64.
NEAR_DUPLICATE_SIMILARITY = 0.995
OUTLIER_Z = 3.5
MIN_CLASS_IMAGES = 5
# How far from chance to every image right the validation accuracy must be for the
# findings (docs/data-health.md: the sweep and the case that set it).
MIN_LEARNT = 0.5
_CHUNK = 1024  # rows of the similarity matrix computed at once: 1024 x N floats


@dataclass
class ModelFeatureReport(HealthReport):
    """A ``HealthReport`` of the model's features; ``withheld`` says why it holds no findings
    when the model is too weak for them ('' when they were looked for)."""

    withheld: str = ""

    def to_dict(self) -> dict:
        document = super().to_dict()
        if self.withheld:
            document["withheld"] = self.withheld
        return document


def least_accuracy(classes: int) -> float:
    """The validation accuracy a model of ``classes`` classes needs for feature findings:
    ``MIN_LEARNT`` of the way from chance (1 / classes) to every image right (62.5% for 4
    classes, 55% for 10)."""
    chance = 1 / max(classes, 1)
    return chance + MIN_LEARNT * (1 - chance)


def withheld_reason(accuracy: float, classes: int) -> str:
    """Why a model of this validation ``accuracy`` on ``classes`` classes is too weak for
    feature findings, or '' when it is not (``least_accuracy``)."""
    needed = least_accuracy(classes)
    if accuracy >= needed - 1e-9:
        return ""
    return (f"Model findings withheld: the best model is right on {accuracy:.1%} of the "
            f"validation images of {classes} classes (chance {1 / max(classes, 1):.0%}); "
            f"below {needed:.1%} its features can call unlike images near duplicates and "
            "ordinary images outliers. Train longer or from pretrained weights for them.")


def feature_findings(
    paths: Sequence[str],
    labels: Sequence[int],
    class_names: Sequence[str],
    features: np.ndarray,
    root: str = "",
    near_similarity: float = NEAR_DUPLICATE_SIMILARITY,
    outlier_z: float = OUTLIER_Z,
    accuracy: float | None = None,
) -> ModelFeatureReport:
    """Near duplicates and outliers among ``paths`` by their ``features`` ([N, D], any scale).

    Args:
        accuracy: the model's validation accuracy: below ``least_accuracy`` no finding is
            looked for and the report's ``withheld`` says why (None: always looked for).

    Raises:
        ValueError: ``features`` does not have one row per path.
    """
    if features.ndim != 2 or features.shape[0] != len(paths) or len(labels) != len(paths):
        raise ValueError(f"features of shape {list(features.shape)} for {len(paths)} images "
                         f"and {len(labels)} labels")
    layout = "validation images, by the trained model's features"
    withheld = withheld_reason(accuracy, len(class_names)) if accuracy is not None else ""
    if withheld:
        return ModelFeatureReport(root, layout, len(paths), [], withheld=withheld)
    features = features.astype(np.float64, copy=False)
    unit = _unit_rows(features)
    # Near duplicates compare standardised features: a trained classifier's features of one
    # class all point much the same way (and after a ReLU every feature is >= 0), so raw
    # cosine similarity calls most same-class pairs alike; scaled per dimension over the set,
    # what is left is what sets one image apart from the others.
    spread = features.std(axis=0) + 1e-6
    standardised = _unit_rows((features - features.mean(axis=0)) / spread)
    label_array = np.asarray(labels, dtype=np.int64)
    findings = [
        Finding("model_near_duplicate", tuple(_near_items(
            standardised, paths, label_array, class_names, near_similarity))),
        Finding("model_outlier",
                tuple(_outlier_items(unit, paths, label_array, class_names, outlier_z))),
    ]
    return ModelFeatureReport(root, layout, len(paths), [f for f in findings if f.items])


def write_feature_findings(report: HealthReport, run_dir: str | os.PathLike[str]) -> Path:
    """``feature_health.json`` in the run folder (never in the user's image folder)."""
    return write_report(report, Path(run_dir) / FEATURE_FINDINGS_FILE)


def read_feature_findings(run_dir: str | os.PathLike[str]) -> ModelFeatureReport | None:
    """The run's ``feature_health.json``; None when it has none or it cannot be read."""
    path = Path(run_dir) / FEATURE_FINDINGS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        base = report_from_dict(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    report = ModelFeatureReport(base.root, base.layout, base.images, base.findings, base.seconds,
                                base.reused, base.near_threshold,
                                withheld=str(data.get("withheld", "")))
    report.report_path = str(path)
    return report


def _unit_rows(features: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    return features / np.maximum(norms, 1e-12)


def _near_items(unit: np.ndarray, paths: Sequence[str], labels: np.ndarray,
                class_names: Sequence[str], threshold: float) -> list[FindingItem]:
    """One item per group of images joined by pairs at or above ``threshold``."""
    pairs: list[tuple[int, int]] = []
    similarity_of: dict[int, float] = {}  # an image -> its highest similarity to another
    for start in range(0, len(paths), _CHUNK):
        similarity = unit[start:start + _CHUNK] @ unit.T
        rows, columns = np.nonzero(similarity >= threshold)
        for row, column in zip(rows.tolist(), columns.tolist(), strict=True):
            if column > start + row:
                pairs.append((start + row, column))
                for index in (start + row, column):
                    similarity_of[index] = max(similarity_of.get(index, -1.0),
                                               float(similarity[row, column]))
    items = []
    for members in connected_groups(len(paths), pairs):
        classes = sorted({class_names[labels[m]] for m in members})
        where = (f"all '{classes[0]}'" if len(classes) == 1 else
                 "labelled " + " and ".join(f"'{c}'" for c in classes))
        files = tuple(paths[m] for m in members)
        highest = max(similarity_of[m] for m in members)
        items.append(FindingItem(
            files, f"{len(files)} images the model sees as one (feature similarity up to "
                   f"{highest:.3f}), {where}", leave_out=files[1:]))
    return sorted(items, key=lambda item: item.files)


def _outlier_items(unit: np.ndarray, paths: Sequence[str], labels: np.ndarray,
                   class_names: Sequence[str], threshold: float) -> list[FindingItem]:
    """Images whose distance to their class's centre has a robust z-score above
    ``threshold``, most extreme first."""
    found: list[tuple[float, FindingItem]] = []
    for label in np.unique(labels):
        members = np.nonzero(labels == label)[0]
        if len(members) < MIN_CLASS_IMAGES:
            continue
        centre = _unit_rows(unit[members].mean(axis=0, keepdims=True))[0]
        distance = 1.0 - unit[members] @ centre
        median = float(np.median(distance))
        spread = float(np.median(np.abs(distance - median)))
        if spread <= 0.0:
            continue  # most of the class sits on its centre: no scale to measure against
        scores = 0.6745 * (distance - median) / spread
        for index, score in zip(members.tolist(), scores.tolist(), strict=True):
            if score > threshold:
                name = class_names[int(label)]
                found.append((score, FindingItem(
                    (paths[index],), f"far from the other '{name}' images in the model's "
                                     f"eyes (robust z {score:.1f})", leave_out=(paths[index],))))
    return [item for _, item in sorted(found, key=lambda pair: -pair[0])]
