"""Error analysis of a run's predictions.csv: per-class figures, a confusion cell's images,
the top losses and the images that are possibly mislabeled (the model gives another class
at least a stated probability).

Everything here works on ``PredictionRow`` lists, so a notebook can use it as well as the app.
The predictions are of the validation images, which the model never trained on: the
mislabeled suggestions are out of sample, as confident learning asks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.core.runs.predictions_file import PredictionRow

MISLABEL_THRESHOLD = 0.8
"""Default probability another class must reach for an image's label to be doubted."""


@dataclass(frozen=True)
class ClassFigures:
    """Precision, recall and F1 of one class (NaN where undefined), and its support."""

    name: str
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class LabelIssue:
    """An image whose label the model disputes: it gives another class a high probability.

    Attributes:
        row: the image's prediction.
        suggested_class: the most probable class other than its label.
        suggested_probability: that class's probability.
    """

    row: PredictionRow
    suggested_class: str
    suggested_probability: float


def class_figures(confusion: Sequence[Sequence[int]],
                  class_names: Sequence[str]) -> list[ClassFigures]:
    """Per-class precision, recall, F1 and support from a confusion matrix (rows: true class).

    Precision is NaN for a class never predicted, recall for a class with no images; F1 is
    NaN when either is, and 0 when both are 0.
    """
    figures = []
    for index, row in enumerate(confusion):
        true_positive = row[index]
        support = sum(row)
        predicted = sum(other[index] for other in confusion)
        precision = true_positive / predicted if predicted else math.nan
        recall = true_positive / support if support else math.nan
        if math.isnan(precision) or math.isnan(recall):
            f1 = math.nan
        elif precision + recall == 0:
            f1 = 0.0
        else:
            f1 = 2 * precision * recall / (precision + recall)
        name = class_names[index] if index < len(class_names) else str(index)
        figures.append(ClassFigures(name, precision, recall, f1, support))
    return figures


def cell_rows(rows: Sequence[PredictionRow], true_class: str,
              predicted_class: str) -> list[PredictionRow]:
    """The images of one confusion-matrix cell, least confident first for a correct cell and
    most confident first for a mistake (the surprising ones lead either way)."""
    cell = [r for r in rows if r.true_class == true_class and r.predicted_class == predicted_class]
    mistaken = true_class != predicted_class
    return sorted(cell, key=lambda r: -r.confidence if mistaken else r.confidence)


def top_losses(rows: Sequence[PredictionRow], count: int = 16) -> list[PredictionRow]:
    """The ``count`` images with the highest loss, highest first (fastai's plot_top_losses)."""
    finite = [r for r in rows if math.isfinite(r.loss)]
    return sorted(finite, key=lambda r: -r.loss)[:count]


def possibly_mislabeled(rows: Sequence[PredictionRow],
                        threshold: float = MISLABEL_THRESHOLD) -> list[LabelIssue]:
    """Images whose label the model confidently disputes, most confident first.

    The rule: an image is listed when the model gives a class other than its label a
    probability of at least ``threshold``. The probabilities are out of sample (validation
    images the model never trained on), as confident learning asks. An image the model
    predicts as its own label is never listed.
    """
    issues = []
    for row in rows:
        if row.correct:
            continue
        others = [(p, name) for name, p in row.top if name != row.true_class]
        if not others:
            continue
        probability, name = max(others)
        if probability >= threshold:
            issues.append(LabelIssue(row, name, probability))
    return sorted(issues, key=lambda issue: -issue.suggested_probability)
