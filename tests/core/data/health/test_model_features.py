"""After training: near duplicates and outliers from the model's own penultimate features,
kept during the best epoch's evaluation (no second pass) and written beside predictions.csv."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.health.model_features import (
    FEATURE_FINDINGS_FILE,
    feature_findings,
    read_feature_findings,
    write_feature_findings,
)
from workbench.core.models.building import SmallCNN
from workbench.core.models.prediction_records import (
    PredictionCollector,
    write_best_feature_findings,
)
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train


def clustered_features(rng: np.random.Generator, per_class: int = 12) -> np.ndarray:
    """Two classes whose features scatter around two directions, in 16 dimensions."""
    centres = np.eye(16)[:2] * 4.0
    return np.concatenate([centre + rng.normal(0, 0.5, (per_class, 16)) for centre in centres])


def test_near_duplicates_and_outliers_by_known_answer():
    rng = np.random.default_rng(0)
    features = clustered_features(rng)
    labels = [0] * 12 + [1] * 12
    paths = [f"/data/{'ab'[label]}/{i}.png" for i, label in enumerate(labels)]
    features[5] = features[3] * 1.01 + 0.001  # a copy of image 3, a shade brighter
    features[20] = features[0]  # an 'a' image filed under 'b': the same features as image 0
    report = feature_findings(paths, labels, ["a", "b"], features)

    near = report.finding("model_near_duplicate")
    assert near is not None
    assert {item.files for item in near.items} == {(paths[0], paths[20]), (paths[3], paths[5])}
    reasons = {item.files: item.reason for item in near.items}
    assert "all 'a'" in reasons[(paths[3], paths[5])]
    assert "labelled 'a' and 'b'" in reasons[(paths[0], paths[20])]
    assert all(item.leave_out == item.files[1:] for item in near.items)
    outliers = report.finding("model_outlier")
    assert outliers is not None and [item.files for item in outliers.items] == [(paths[20],)]
    assert "far from the other 'b' images" in outliers.items[0].reason


def test_distinct_images_are_not_flagged():
    # 400 images in 4 well separated clusters of independent noise: no pair is near and no
    # point lies beyond the robust z of its class (measured false positives: 0 of 400).
    rng = np.random.default_rng(1)
    centres = np.eye(64)[:4] * 6.0
    features = np.concatenate([c + rng.normal(0, 1.0, (100, 64)) for c in centres])
    labels = [label for label in range(4) for _ in range(100)]
    report = feature_findings([f"{i}.png" for i in range(400)], labels, list("abcd"), features)
    assert report.findings == []


def test_features_are_the_heads_input_averaged_over_crops():
    torch.manual_seed(0)
    model = SmallCNN(num_classes=3).eval()
    images = torch.rand(4 * 5, 1, 28, 28)  # 4 images, 5 crops each
    labels = torch.tensor([0, 1, 2, 1])
    collector = PredictionCollector(crops=5, strategy="average_logits")
    watching = collector.watch_head(model.fc)
    with torch.no_grad():
        collector.add(model(images), labels)
    watching.remove()
    expected = model.features(images).view(4, 5, -1).mean(dim=1)
    torch.testing.assert_close(collector.features(), expected)


@pytest.fixture(scope="module")
def run_with_a_copy(tmp_path_factory):
    """A real run whose validation folder holds a renamed copy of one of its images."""
    root = tmp_path_factory.mktemp("model-features")
    data = write_shape_dataset(root / "shapes", per_class=10, size=(32, 32), layout="train_val",
                               val_per_class=4)
    original = sorted((data / "val" / "circle").glob("*.png"))[0]
    copy = original.with_name("copy_of_first.png")
    shutil.copyfile(original, copy)
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none", epochs=2,
                         batch_size=8, workers=0, output_dir=str(root / "runs"), device="cpu",
                         crop_mode="five_crop", resize_size=32, crop_size=28)
    end = train(config, Callback())
    assert end.status == "completed", end.error
    return data, original, copy, Path(end.run_dir)


def test_a_weak_run_writes_why_its_features_found_nothing(run_with_a_copy):
    # Two epochs from random weights: far below the rule, so the renamed copy is not listed
    # and the file says why, with the run's own best validation accuracy.
    data, _original, _copy, run_dir = run_with_a_copy
    report = read_feature_findings(run_dir)
    assert report is not None and report.report_path == str(run_dir / FEATURE_FINDINGS_FILE)
    assert report.images == 4 * 4 + 1 and report.root == str(data)
    best = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert best["best_val_accuracy"] < 0.625  # 4 classes: half-way from chance to all right
    assert report.findings == []
    assert f"right on {best['best_val_accuracy']:.1%} of the validation images of 4 classes" \
        in report.withheld


def test_a_strong_models_features_are_written_with_their_findings(tmp_path):
    # Every image predicted right; image 2 is a renamed copy of image 0 (the same features).
    samples = [(f"/data/{c}/{i}.png", label) for i, (c, label) in
               enumerate([("a", 0), ("b", 1), ("a", 0), ("b", 1), ("a", 0), ("b", 1)])]
    collector = PredictionCollector(crops=1, strategy="average_logits")
    head = torch.nn.Identity()
    watching = collector.watch_head(head)
    rng = np.random.default_rng(2)
    features = torch.tensor(rng.normal(0, 1, (6, 8)), dtype=torch.float32)
    features[2] = features[0]
    head(features)
    labels = torch.tensor([label for _, label in samples])
    collector.add(torch.nn.functional.one_hot(labels, 2).float() * 5, labels)
    watching.remove()
    assert collector.accuracy() == 1.0

    assert write_best_feature_findings(collector, tmp_path, samples, ["a", "b"], "/data") is None
    report = read_feature_findings(tmp_path)
    assert report is not None and report.withheld == ""
    near = report.finding("model_near_duplicate")
    assert near is not None and [item.files for item in near.items] == [
        ("/data/a/0.png", "/data/a/2.png")]

def test_a_model_below_the_accuracy_rule_gets_one_line_instead_of_findings(tmp_path):
    # The same known-answer features as above, which hold a near-duplicate pair and an
    # outlier: from a model right on 48.8% of 4 classes they are withheld, with the reason.
    rng = np.random.default_rng(0)
    features = clustered_features(rng)
    features[5] = features[3] * 1.01 + 0.001
    labels = [0] * 12 + [1] * 12
    paths = [f"/data/{'ab'[label]}/{i}.png" for i, label in enumerate(labels)]
    names = ["a", "b", "c", "d"]

    # Half-way from chance (1/4) to every image right: 0.25 + 0.5 * 0.75 = 62.5%.
    weak = feature_findings(paths, labels, names, features, root="/data", accuracy=0.488)
    assert weak.findings == []
    assert weak.withheld.startswith("Model findings withheld: the best model is right on "
                                    "48.8% of the validation images of 4 classes (chance 25%); "
                                    "below 62.5%")
    assert feature_findings(paths, labels, names, features, accuracy=0.62).withheld
    strong = feature_findings(paths, labels, names, features, root="/data", accuracy=0.625)
    assert strong.withheld == "" and strong.finding("model_near_duplicate") is not None
    # Ten classes: chance is 10%, so 0.1 + 0.5 * 0.9 = 55% is enough.
    ten = [str(i) for i in range(10)]
    assert feature_findings(paths, labels, ten, features, accuracy=0.55).withheld == ""
    assert "below 55.0%" in feature_findings(paths, labels, ten, features, accuracy=0.54).withheld

    write_feature_findings(weak, tmp_path)  # read back as the panel and the report read it
    again = read_feature_findings(tmp_path)
    assert again is not None and again.findings == [] and again.withheld == weak.withheld
    html = run_report_section(tmp_path)
    assert weak.withheld in html and "found no near duplicate" not in html


def run_report_section(folder: Path) -> str:
    from workbench.core.runs.run_report import _model_findings_section

    return _model_findings_section(folder)


def test_the_collector_measures_the_accuracy_the_rule_reads():
    # Three decoded images, two predicted right, and one that failed to decode (label -1).
    collector = PredictionCollector(crops=1, strategy="average_logits")
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 1.0], [5.0, 0.0, 0.0]])
    collector.add(logits, torch.tensor([0, 2, 2, -1]))
    assert collector.accuracy() == pytest.approx(2 / 3)
