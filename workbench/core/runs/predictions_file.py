"""predictions.csv: the best epoch's prediction for every validation image of a run.

One row per original image (five or ten crops of an image make one row: their averaged
logits give the probabilities). Columns, readable by ``csv`` or ``pandas.read_csv``:

``path, true_class, predicted_class, confidence, true_class_probability, loss,
top1_class, top1_probability, ... topK_class, topK_probability``

The path and class cells hold a name as ``workbench.core.file_names.stored_name`` writes it: as
it is, or as a JSON string when it holds a newline or bytes that are not UTF-8.
``confidence`` is the probability of the predicted class; ``loss`` is the image's own
cross-entropy (the mean over its crops when the run repeats labels over crops). The module
needs no torch, so the app reads the file without loading a model.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from workbench.core.file_names import read_stored_name, stored_name
from workbench.core.runs.atomic_io import atomic_write_text

PREDICTIONS_FILE = "predictions.csv"
FIXED_COLUMNS = ("path", "true_class", "predicted_class", "confidence",
                 "true_class_probability", "loss")


class PredictionsFileError(Exception):
    """predictions.csv is missing or unreadable; the message names the file and the reason."""


@dataclass(frozen=True)
class PredictionRow:
    """The prediction for one validation image.

    Attributes:
        path: the image file.
        true_class: the class folder it came from.
        predicted_class: the class with the highest probability.
        confidence: the probability of ``predicted_class``.
        true_class_probability: the probability the model gave ``true_class``.
        loss: the image's cross-entropy.
        top: the most probable classes, most probable first, with their probabilities.
    """

    path: str
    true_class: str
    predicted_class: str
    confidence: float
    true_class_probability: float
    loss: float
    top: tuple[tuple[str, float], ...]

    @property
    def correct(self) -> bool:
        """True when the prediction is the true class."""
        return self.true_class == self.predicted_class

    def probability_of(self, class_name: str) -> float:
        """The probability of ``class_name`` if it is among the top classes (or true), else 0."""
        if class_name == self.true_class:
            return self.true_class_probability
        return dict(self.top).get(class_name, 0.0)


def predictions_path(run_dir: Path | str) -> Path:
    """Where a run folder keeps its predictions."""
    return Path(run_dir) / PREDICTIONS_FILE


def write_predictions(run_dir: Path | str, rows: list[PredictionRow]) -> Path:
    """Write ``rows`` to ``run_dir``/predictions.csv atomically (readers never see half a file).

    Raises:
        OSError: The file could not be written; an earlier predictions.csv is unchanged.
    """
    top_k = max((len(row.top) for row in rows), default=0)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = list(FIXED_COLUMNS)
    for rank in range(1, top_k + 1):
        header += [f"top{rank}_class", f"top{rank}_probability"]
    writer.writerow(header)
    for row in rows:
        cells = [stored_name(row.path), stored_name(row.true_class),
                 stored_name(row.predicted_class), _number(row.confidence),
                 _number(row.true_class_probability), _number(row.loss)]
        for name, probability in row.top:
            cells += [stored_name(name), _number(probability)]
        cells += [""] * (len(header) - len(cells))
        writer.writerow(cells)
    path = predictions_path(run_dir)
    atomic_write_text(path, buffer.getvalue())
    return path


def read_predictions(run_dir: Path | str) -> list[PredictionRow]:
    """The rows of ``run_dir``/predictions.csv, in file order.

    Raises:
        PredictionsFileError: the file is missing, or a row or the header is malformed.
    """
    path = predictions_path(run_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PredictionsFileError(
            f"{path}: no predictions yet (a run writes them after its first epoch)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PredictionsFileError(f"{path}: cannot be read ({exc})") from exc
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in FIXED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise PredictionsFileError(f"{path}: not a predictions file (no column "
                                   f"{', '.join(missing)})")
    rows = []
    for line, record in enumerate(reader, start=2):
        try:
            rows.append(_row_from(record))
        except (TypeError, ValueError) as exc:
            raise PredictionsFileError(f"{path}, line {line}: {exc}") from exc
    return rows


def _row_from(record: dict[str, str]) -> PredictionRow:
    top = []
    rank = 1
    while f"top{rank}_class" in record:
        name = record[f"top{rank}_class"]
        if name:
            top.append((read_stored_name(name), float(record[f"top{rank}_probability"])))
        rank += 1
    return PredictionRow(
        path=read_stored_name(record["path"]),
        true_class=read_stored_name(record["true_class"]),
        predicted_class=read_stored_name(record["predicted_class"]),
        confidence=float(record["confidence"]),
        true_class_probability=float(record["true_class_probability"]),
        loss=float(record["loss"]), top=tuple(top),
    )


def _number(value: float) -> str:
    return f"{value:.6g}" if math.isfinite(value) else "nan"
