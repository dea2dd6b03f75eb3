"""Error analysis over predictions.csv rows written and read back from disk."""

from __future__ import annotations

import math

import pytest

from workbench.core.runs.prediction_analysis import (
    cell_rows,
    class_figures,
    class_thresholds,
    possibly_mislabeled,
    top_losses,
)
from workbench.core.runs.predictions_file import (
    PredictionRow,
    PredictionsFileError,
    read_predictions,
    write_predictions,
)


def _row(path: str, true: str, probabilities: dict[str, float]) -> PredictionRow:
    top = tuple(sorted(probabilities.items(), key=lambda item: -item[1]))
    return PredictionRow(path, true, top[0][0], top[0][1], probabilities[true],
                         -math.log(probabilities[true]), top)


@pytest.fixture
def rows(tmp_path) -> list[PredictionRow]:
    written = [
        _row("cat1.png", "cat", {"cat": 0.9, "dog": 0.1}),
        _row("cat2.png", "cat", {"cat": 0.8, "dog": 0.2}),
        _row("cat3.png", "cat", {"cat": 0.05, "dog": 0.95}),  # a dog filed under cat
        _row("dog1.png", "dog", {"cat": 0.3, "dog": 0.7}),
        _row("dog2.png", "dog", {"cat": 0.6, "dog": 0.4}),  # unsure: not confidently a cat
        _row("dog3.png", "dog", {"cat": 0.1, "dog": 0.9}),
    ]
    write_predictions(tmp_path, written)
    return read_predictions(tmp_path)


def test_rows_survive_the_file(rows):
    assert [r.path for r in rows] == ["cat1.png", "cat2.png", "cat3.png", "dog1.png",
                                      "dog2.png", "dog3.png"]
    assert rows[2].top == (("dog", 0.95), ("cat", 0.05)) and not rows[2].correct


def test_class_figures_from_the_confusion_matrix():
    cat, dog = class_figures([[2, 1], [1, 2]], ["cat", "dog"])
    assert (cat.precision, cat.recall, cat.support) == (2 / 3, 2 / 3, 3)
    assert cat.f1 == pytest.approx(2 / 3)
    never_predicted = class_figures([[1, 0], [2, 0]], ["a", "b"])[1]
    assert math.isnan(never_predicted.precision) and never_predicted.recall == 0.0


def test_cell_top_losses_and_mislabeled(rows):
    assert [r.path for r in cell_rows(rows, "dog", "cat")] == ["dog2.png"]
    assert [r.path for r in cell_rows(rows, "cat", "cat")] == ["cat2.png", "cat1.png"]
    assert [r.path for r in top_losses(rows, 2)] == ["cat3.png", "dog2.png"]
    assert class_thresholds(rows)["dog"] == pytest.approx((0.7 + 0.4 + 0.9) / 3)
    issues = possibly_mislabeled(rows)
    # cat3: 0.95 dog reaches dog's threshold (0.667). dog2: 0.6 cat reaches cat's threshold
    # (0.583) while 0.4 dog does not. dog1's 0.3 cat reaches nothing: its label stands.
    assert [(i.row.path, i.suggested_class) for i in issues] == [("cat3.png", "dog"),
                                                                 ("dog2.png", "cat")]


def test_a_damaged_file_is_named(tmp_path):
    (tmp_path / "predictions.csv").write_text("path,true_class\nx.png,cat\n")
    with pytest.raises(PredictionsFileError, match="predictions.csv: not a predictions file"):
        read_predictions(tmp_path)
    with pytest.raises(PredictionsFileError, match="no predictions yet"):
        read_predictions(tmp_path / "missing")
