"""predictions.csv of real tiny runs: one row per validation image, matching the best epoch."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import torch

from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.multicrop import multicrop_loss
from workbench.core.models.prediction_records import PredictionCollector
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.predictions_file import read_predictions
from workbench.core.training.engine import train


class EpochRecorder(Callback):
    def __init__(self) -> None:
        self.epochs = []

    def on_epoch_end(self, event):
        self.epochs.append(event)


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    return write_shape_dataset(tmp_path_factory.mktemp("shapes"), per_class=6, size=(40, 32),
                               layout="train_val", val_per_class=3)


def _config(data_root: Path, output: Path, **changes) -> TrainConfig:
    return TrainConfig(
        data_root=str(data_root), model="small_cnn", weights="none", finetune="full",
        crop_mode="five_crop", resize_size=32, crop_size=28, batch_size=8, epochs=2,
        optimizer="adamw", lr=2e-3, scheduler="none", workers=0, output_dir=str(output),
        cache_images=False, seed=5, device="cpu", amp=False,
    ).replace(**changes)


def _best(recorder: EpochRecorder):
    return [e for e in recorder.epochs if e.epoch == max(x.best_epoch for x in recorder.epochs)][0]


@pytest.mark.parametrize("changes", [
    {},  # five crops through the whole model, labels repeated over crops
    {"finetune": "last_layer", "cache_features": True, "crop_strategy": "average_logits"},
])
def test_best_epoch_predictions_match_its_confusion_matrix(shapes, tmp_path, changes):
    recorder = EpochRecorder()
    end = train(_config(shapes, tmp_path, **changes), recorder)
    rows = read_predictions(end.run_dir)

    scan = scan_dataset(str(shapes))
    assert [r.path for r in rows] == [p for p, _ in scan.val]  # every val image, in order
    assert [r.true_class for r in rows] == [scan.class_names[c] for _, c in scan.val]
    best = _best(recorder)
    index = {name: i for i, name in enumerate(scan.class_names)}
    confusion = [[0] * 4 for _ in range(4)]
    for row in rows:
        confusion[index[row.true_class]][index[row.predicted_class]] += 1
    assert tuple(tuple(r) for r in confusion) == best.confusion
    assert sum(r.correct for r in rows) / len(rows) == pytest.approx(best.val_accuracy)
    assert sum(r.loss for r in rows) / len(rows) == pytest.approx(best.val_loss, rel=1e-4)
    for row in rows:
        assert len(row.top) == 4 and row.top[0] == (row.predicted_class, row.confidence)
        assert sum(p for _, p in row.top) == pytest.approx(1.0, abs=1e-4)
        assert row.probability_of(row.true_class) == row.true_class_probability


def test_predictions_csv_is_plain_csv(shapes, tmp_path):
    end = train(_config(shapes, tmp_path, epochs=1, crop_mode="standard"), EpochRecorder())
    with open(Path(end.run_dir) / "predictions.csv", newline="") as handle:
        records = list(csv.DictReader(handle))
    assert len(records) == 12
    assert list(records[0])[:6] == ["path", "true_class", "predicted_class", "confidence",
                                    "true_class_probability", "loss"]
    assert all(Path(r["path"]).is_file() and 0 <= float(r["confidence"]) <= 1 for r in records)


def test_collector_loss_per_image_averages_to_the_batch_loss():
    torch.manual_seed(0)
    logits = torch.randn(3 * 5, 4)
    labels = torch.tensor([0, 2, 3])
    for strategy in ("repeat_labels", "average_logits"):
        collector = PredictionCollector(crops=5, strategy=strategy)
        collector.add(logits, labels)
        rows = collector.rows([("a", 0), ("b", 2), ("c", 3)], ["w", "x", "y", "z"])
        batch_loss, _ = multicrop_loss(logits, labels, 5, strategy)
        assert sum(r.loss for r in rows) / 3 == pytest.approx(float(batch_loss), rel=1e-5)


def test_an_undecodable_image_has_no_row():
    collector = PredictionCollector(crops=1, strategy="repeat_labels")
    collector.add(torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, -1]))
    rows = collector.rows([("good.png", 0), ("broken.png", 1)], ["a", "b"])
    assert [r.path for r in rows] == ["good.png"]
    assert rows[0].confidence == pytest.approx(1 / (1 + math.exp(-2.0)))


def test_true_class_probability_is_the_softmax_at_the_label_through_the_file(tmp_path):
    # A fixed logits table, not a model: rows 1 and 4 are confidently wrong (their argmax is
    # not their label), as a mislabelled image would be.
    logits = torch.tensor([[3.0, 0.5, -1.0, 0.0],
                           [2.5, -0.5, 0.2, 0.1],
                           [0.1, 0.2, 2.2, -0.3],
                           [-1.0, 0.0, 0.5, 1.5],
                           [0.0, 0.3, 0.1, 4.0],
                           [0.4, 1.9, 0.0, 0.2]])
    labels = torch.tensor([0, 2, 2, 3, 1, 1])
    names = ["ant", "bee", "cat", "dog"]
    samples = [(f"image{i}.png", int(label)) for i, label in enumerate(labels)]
    collector = PredictionCollector(crops=1, strategy="repeat_labels")
    collector.add(logits[:4], labels[:4])  # two batches, as an evaluation pass hands them
    collector.add(logits[4:], labels[4:])
    collector.write(tmp_path, samples, names)
    rows = read_predictions(tmp_path)

    probabilities = torch.softmax(logits, dim=1)
    expected = probabilities[torch.arange(6), labels].tolist()
    assert [r.true_class_probability for r in rows] == pytest.approx(expected, rel=1e-5)
    assert [r.confidence for r in rows] == pytest.approx(
        probabilities.max(dim=1).values.tolist(), rel=1e-5)
    assert [r.loss for r in rows] == pytest.approx([-math.log(p) for p in expected], rel=1e-5)
    wrong = [r for r in rows if not r.correct]
    assert [r.path for r in wrong] == ["image1.png", "image4.png"]
    assert all(r.true_class_probability < r.confidence for r in wrong)
    least_sure = sorted(rows, key=lambda r: r.true_class_probability)
    assert {r.path for r in least_sure[:2]} == {"image1.png", "image4.png"}
