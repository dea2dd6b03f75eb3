"""The run report of run folders written by hand, whose right answers are known: every row of
the summary and configuration, the curves' points where the chart draws them, the confusion
matrix rows (the true classes) and their shading, per-class figures from known counts, the
thumbnails and their captions, and the health, model-findings and exports tables."""

from __future__ import annotations

import base64
import io
import json
import re
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from workbench.core.runs.predictions_file import PredictionRow, write_predictions
from workbench.core.runs.run_report import (
    REPORT_FILE,
    _svg_chart,
    run_report_html,
    write_run_report,
)
from workbench.core.transparency import TRANSPARENT_BACKGROUND

SVG = "{http://www.w3.org/2000/svg}"


# The elements whose text a reader sees where it belongs; text anywhere else (between table
# rows, figures or sections) is shown by a browser out of place, above its table.
# (a div holds text only as a note in place of a thumbnail: class 'muted').
_TEXT_ELEMENTS = {"title", "style", "h1", "h2", "p", "td", "th", "figcaption", "text"}


class _Report(HTMLParser):
    """Each section of the report: its heading, table rows (cell texts), paragraphs (class,
    text), cell styles and classes, images (alt, src) and figure captions; ``stray``: text
    outside the elements meant to hold it."""

    def __init__(self, document: str) -> None:
        super().__init__()
        self.sections: dict[str, dict] = {}
        self.stray: list[str] = []
        self._section: dict | None = None
        self._text: list[str] | None = None
        self._kind = ""
        self._inside = 0
        self._divs: list[bool] = []
        self.feed(document)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attributes = dict(attrs)
        self._inside += tag in _TEXT_ELEMENTS
        if tag == "div":
            self._divs.append(attributes.get("class") == "muted")
            self._inside += self._divs[-1]
        if tag == "section":
            self._section = {"rows": [], "paragraphs": [], "cells": [], "images": [],
                             "captions": [], "heading": ""}
            self.sections[attributes["id"]] = self._section
        section = self._section
        if section is None:
            return
        if tag == "tr":
            section["rows"].append([])
        elif tag in ("td", "th", "p", "h2", "figcaption"):
            self._text, self._kind = [], tag
            if tag in ("td", "th"):
                section["cells"].append((attributes.get("class"), attributes.get("style")))
            if tag == "p":
                self._class = attributes.get("class")
        elif tag == "img":
            section["images"].append((attributes["alt"], attributes["src"]))
        elif tag == "br" and self._text is not None:
            self._text.append("|")

    def handle_endtag(self, tag: str) -> None:
        self._inside -= tag in _TEXT_ELEMENTS
        if tag == "div":
            self._inside -= self._divs.pop()
        if self._text is None or tag != self._kind:
            return
        text, self._text = "".join(self._text), None
        if tag in ("td", "th"):
            self._section["rows"][-1].append(text)
        elif tag == "p":
            self._section["paragraphs"].append((self._class, text))
        elif tag == "h2":
            self._section["heading"] = text
        else:
            self._section["captions"].append(text)

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        if not self._inside and data.strip():
            self.stray.append(data)


def _epoch(number: int, train_loss: float, val_loss: float, train_accuracy: float,
           val_accuracy: float, best_epoch: int, confusion: list, speed: float = 100.0) -> dict:
    return {"event": "EpochEnd", "epoch": number, "epochs": 5, "train_loss": train_loss,
            "train_accuracy": train_accuracy, "val_loss": val_loss,
            "val_accuracy": val_accuracy, "per_class_accuracy": [0.5, 0.5],
            "confusion": confusion, "lr": 0.01, "epoch_seconds": 2.0,
            "images_per_second": speed, "is_best": False, "best_epoch": best_epoch,
            "best_val_accuracy": 0.0, "checkpoint_path": ""}


START = {"event": "RunStart", "run_dir": "", "device": "cuda:0", "device_name": "Test Card 9",
         "memory_total": None, "amp": True, "class_names": ["cat", "dog"], "train_samples": 8,
         "val_samples": 10, "epochs": 5, "start_epoch": 0, "steps_per_epoch": 2,
         "crops_per_sample": 1, "feature_cache": False,
         "dataset_summary": "pets: 2 classes, 8 train / 10 val images",
         "precision": "mixed bfloat16"}
# Epoch 2 is best; it was re-run after a stop (the last report of an epoch counts).
BEST_CONFUSION = [[3, 1], [2, 4]]
EPOCHS = [
    _epoch(1, 2.0, 1.5, 0.25, 0.4, 1, [[1, 3], [3, 3]]),
    _epoch(2, 9.0, 9.0, 0.0, 0.1, 1, [[0, 4], [4, 2]]),  # the attempt that was stopped
    _epoch(2, 1.0, 1.25, 0.5, 0.7, 2, BEST_CONFUSION, speed=1234.4),
    _epoch(3, 0.5, 1.0, 0.75, 0.6, 2, [[2, 2], [2, 4]]),
]
END = {"event": "RunEnd", "status": "completed", "epochs_completed": 3, "best_epoch": 2,
       "best_val_accuracy": 0.7, "run_dir": "", "best_model_path": "",
       "last_checkpoint_path": "", "error": "", "seconds": 4321.0}
CONFIG = {"model": "resnet18", "data_root": "/data/pets", "epochs": 5, "amp": True,
          "channels_last": True, "pin_memory": True, "lr": 0.01, "device": "cuda"}
RAN = {"device": "cpu", "precision": "float32", "memory_format": "contiguous",
       "pin_memory": False}


def _run(folder: Path, lines: list | None = None, ran: object = RAN,
         config: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    document = {"created": "2026-03-04T05:06:07", "config": CONFIG if config is None else config,
                "dataset": {"split_fingerprint": "abc123"}}
    if ran is not None:
        document["ran"] = ran
    (folder / "config.json").write_text(json.dumps(document))
    lines = [START, *EPOCHS, END] if lines is None else lines
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def _report(folder: Path, health: Path | None = None) -> _Report:
    report = _Report(run_report_html(folder, health))
    assert report.stray == []  # no text out of place
    return report


def _key_values(section: dict) -> dict[str, str]:
    return {row[0]: row[1] for row in section["rows"]}


def test_the_summary_says_the_best_epoch_its_accuracy_speed_device_and_time(tmp_path):
    report = _report(_run(tmp_path / "run1"))
    summary = report.sections["summary"]
    assert summary["heading"] == "Summary"
    assert _key_values(summary) == {
        "Status": "completed, 3/5 epochs",
        "Model": "resnet18",
        "Dataset": "pets: 2 classes, 8 train / 10 val images",
        "Validation split": "abc123",
        "Best validation accuracy": "70.0% at epoch 2",
        "Device": "Test Card 9",
        "Precision": "mixed bfloat16",
        "Training throughput": "1,234 images/s over the best epoch, its first steps included",
        "Wall time": "4,321 s",
    }


def test_a_run_without_epochs_or_a_start_says_so_and_falls_back_to_the_config(tmp_path):
    config = {**CONFIG, "epochs": 2}
    folder = _run(tmp_path / "run2", lines=[], ran=None, config=config)
    document = json.loads((folder / "config.json").read_text())
    del document["dataset"]
    (folder / "config.json").write_text(json.dumps(document))
    report = _report(folder)
    rows = _key_values(report.sections["summary"])
    assert {key: rows[key] for key in rows if key not in ("Status", "Wall time")} == {
        "Model": "resnet18", "Dataset": "pets", "Validation split": "not recorded",
        "Best validation accuracy": "no epoch finished", "Device": "cuda",
        "Precision": "unknown", "Training throughput": "not measured"}
    assert _key_values(report.sections["summary"])["Status"].endswith(", 0/2 epochs")
    for anchor, heading in (("curves", "Curves"), ("confusion", "Confusion matrix"),
                            ("class-metrics", "Per-class precision, recall and F1")):
        assert report.sections[anchor]["heading"] == heading
        assert report.sections[anchor]["paragraphs"] == [("muted", "No epoch finished.")]
    # No "ran" in config.json (an older run): the settings as asked, nothing beside them.
    rows = _key_values(report.sections["config"])
    assert "What ran" not in rows and rows["amp"] == "true" and rows["pin_memory"] == "true"


def test_the_configuration_says_what_ran_beside_the_settings_that_took_no_effect(tmp_path):
    ran = {**RAN, "precision": "float32"}
    del ran["memory_format"]  # a setting "ran" does not record stays as asked
    report = _report(_run(tmp_path / "run3", ran=ran))
    config = report.sections["config"]
    assert config["heading"] == "Configuration"
    assert config["rows"] == [
        ["What ran", "float32, None memory format, pinned memory no on cpu"],
        ["model", '"resnet18"'], ["data_root", '"/data/pets"'], ["epochs", "5"],
        ["amp", "true asked; ran: float32"], ["channels_last", "true"],
        ["pin_memory", "true asked; ran: no"], ["lr", "0.01"], ["device", '"cuda"']]
    report = _report(_run(tmp_path / "run4", ran={**RAN, "pin_memory": True}))
    rows = _key_values(report.sections["config"])
    assert rows["What ran"] == "float32, contiguous memory format, pinned memory yes on cpu"
    assert rows["pin_memory"] == "true asked; ran: yes"
    assert rows["channels_last"] == "true asked; ran: contiguous"
    # A "ran" that is not an object is ignored, as is an unparsable config.json.
    assert "What ran" not in _key_values(_report(_run(tmp_path / "run5", ran=[1]))
                                         .sections["config"])
    folder = _run(tmp_path / "run5b")
    (folder / "config.json").write_text("{not json")
    assert _report(folder).sections["config"]["rows"] == []


def _points(polyline: ElementTree.Element) -> list[tuple[float, float]]:
    return [tuple(float(v) for v in pair.split(",")) for pair in polyline.get("points").split()]


def test_the_chart_puts_each_value_where_its_axes_say(tmp_path):
    chart = ElementTree.fromstring(_svg_chart("Loss", [1, 2, 3], {
        "train": [2.0, 1.0, 0.5], "validation": [1.5, float("nan"), 1.0]}))
    assert chart.tag == SVG + "svg"
    assert (chart.get("width"), chart.get("height"), chart.get("aria-label")) == (
        "460", "240", "Loss")
    # Plot area: x from 50 (first epoch) to 450 (last), y from 210 (lowest) to 24 (highest).
    train, validation = chart.findall(SVG + "polyline")
    assert _points(train) == [(50.0, 24.0), (250.0, 148.0), (450.0, 210.0)]
    assert _points(validation) == [(50.0, 86.0), (450.0, 148.0)]  # the NaN is left out
    assert [(p.get("stroke"), p.get("fill"), p.get("stroke-width")) for p in (train, validation)
            ] == [("#1f77b4", "none", "2"), ("#ff7f0e", "none", "2")]
    lines = [(line.get("x1"), line.get("y1"), line.get("x2"), line.get("y2"), line.get("stroke"))
             for line in chart.findall(SVG + "line")]
    assert lines == [("50", "210", "450", "210", "#999"), ("50", "24", "50", "210", "#999")]
    texts = [(t.text, t.get("x"), t.get("y"), t.get("font-size"), t.get("fill"))
             for t in chart.findall(SVG + "text")]
    assert texts == [("Loss", "50", "16", "13", None), ("2", "4", "28", "10", None),
                     ("0.5", "4", "210", "10", None), ("epoch 1", "50", "228", "10", None),
                     ("epoch 3", "400", "228", "10", None),
                     ("train", "360", "38", "11", "#1f77b4"),
                     ("validation", "360", "52", "11", "#ff7f0e")]


def test_a_flat_or_single_epoch_chart_centres_its_value(tmp_path):
    chart = ElementTree.fromstring(_svg_chart("Accuracy", [4], {"a": [0.5], "b": [0.5],
                                                                "c": [0.5], "d": [0.5],
                                                                "e": [0.5]},
                                              width=100, height=100))
    # One value: the axis runs from 0.5 - 0.5 to 0.5 + 0.5; y is half-way, x at the left.
    assert {tuple(_points(p)) for p in chart.findall(SVG + "polyline")} == {((50.0, 47.0),)}
    assert [p.get("stroke") for p in chart.findall(SVG + "polyline")] == [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#1f77b4"]
    texts = [t.text for t in chart.findall(SVG + "text")]
    assert texts[1:5] == ["1", "0", "epoch 4", "epoch 4"]
    # Two epochs one apart: the first at the left, the second at the right.
    two = ElementTree.fromstring(_svg_chart("Loss", [1, 2], {"a": [1.0, 2.0]}))
    assert _points(two.find(SVG + "polyline")) == [(50.0, 210.0), (450.0, 24.0)]
    nothing = ElementTree.fromstring(_svg_chart("Loss", [1, 2], {"a": [float("nan")] * 2}))
    assert [t.text for t in nothing.findall(SVG + "text")][1:3] == ["1", "0"]
    assert nothing.find(SVG + "polyline").get("points") == ""


def test_the_reports_curves_show_the_rerun_epoch_and_the_lowest_loss_lowest(tmp_path):
    html = run_report_html(_run(tmp_path / "run6"))
    report = _Report(html)
    assert report.sections["curves"]["heading"] == "Curves" and report.stray == []
    charts = [ElementTree.fromstring(svg) for svg in re.findall(r"<svg.*?</svg>", html)]
    assert [c.get("aria-label") for c in charts] == ["Loss", "Accuracy"]
    loss, accuracy = ([_points(p) for p in c.findall(SVG + "polyline")] for c in charts)
    # Loss from 0.5 to 2.0 over epochs 1 to 3; epoch 2 is the re-run's 1.0 and 1.25, not 9.0.
    assert loss == [[(50.0, 24.0), (250.0, 148.0), (450.0, 210.0)],
                    [(50.0, 86.0), (250.0, 117.0), (450.0, 148.0)]]
    # Accuracy from 0.25 to 0.75: the highest accuracy is the top of the chart.
    assert accuracy == [[(50.0, 210.0), (250.0, 117.0), (450.0, 24.0)],
                        [(50.0, 154.2), (250.0, 42.6), (450.0, 79.8)]]
    assert [[t.text for t in c.findall(SVG + "text")][1:] for c in charts] == [
        ["2", "0.5", "epoch 1", "epoch 3", "train", "validation"],
        ["0.75", "0.25", "epoch 1", "epoch 3", "train", "validation"]]


def test_the_confusion_matrix_rows_are_the_true_classes_of_the_best_epoch(tmp_path):
    report = _report(_run(tmp_path / "run7"))
    confusion = report.sections["confusion"]
    assert confusion["heading"] == "Confusion matrix"
    assert confusion["rows"] == [["true \\ predicted", "cat", "dog"], ["cat", "3", "1"],
                                 ["dog", "2", "4"]]
    styles = [style for _, style in confusion["cells"] if style]
    # Shaded by the share of the largest count (4): 0.85 * count / 4.
    assert styles == [f"background:rgba(31,119,180,{a})" for a in ("0.64", "0.21", "0.42",
                                                                   "0.85")]
    assert [c for c, _ in confusion["cells"]] == ["l", None, None, "l", None, None, "l", None,
                                                  None]
    assert confusion["paragraphs"] == [("muted", "Best epoch (2); rows are the true class.")]


def test_a_confusion_matrix_without_class_names_or_counts_numbers_its_rows(tmp_path):
    start = {**START, "class_names": []}
    epoch = _epoch(1, 1.0, 1.0, 0.5, 0.0, 1, [[0, 0], [0, 0]])
    report = _report(_run(tmp_path / "run8", lines=[start, epoch]))
    confusion = report.sections["confusion"]
    assert confusion["rows"] == [["true \\ predicted", "0", "1"], ["0", "0", "0"],
                                 ["1", "0", "0"]]
    assert {style for _, style in confusion["cells"] if style} == {
        "background:rgba(31,119,180,0.00)"}
    figures = report.sections["class-metrics"]["rows"]
    assert figures[1:] == [["0", "–", "–", "–", "0"], ["1", "–", "–", "–", "0"]]


def test_per_class_precision_recall_and_f1_from_known_counts(tmp_path):
    report = _report(_run(tmp_path / "run9"))
    metrics = report.sections["class-metrics"]
    assert metrics["heading"] == "Per-class precision, recall and F1"
    # cat: 3 of 5 predicted cats are cats (60%), 3 of 4 cats found (75%), F1 2*.6*.75/1.35.
    # dog: 4 of 5 (80%), 4 of 6 (66.7%), F1 2*.8*.667/1.467 = 72.7%.
    assert metrics["rows"] == [["class", "precision", "recall", "F1", "images"],
                               ["cat", "60.0%", "75.0%", "66.7%", "4"],
                               ["dog", "80.0%", "66.7%", "72.7%", "6"]]
    assert [c for c, _ in metrics["cells"]][:6] == ["l", None, None, None, None, "l"]


def _image(path: Path, mode: str = "RGB", size: tuple[int, int] = (200, 100)) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    colour = (0, 0, 0, 0) if mode == "RGBA" else (10, 200, 30)
    Image.new(mode, size, colour).save(path)
    return str(path)


def _row(path: str, true: str, predicted: str, loss: float, confidence: float) -> PredictionRow:
    true_probability = confidence if true == predicted else 1 - confidence
    return PredictionRow(path, true, predicted, confidence, true_probability, loss,
                         ((predicted, confidence), (true, true_probability))
                         if true != predicted else ((predicted, confidence),))


def test_top_losses_and_possibly_mislabeled_images_with_their_captions(tmp_path):
    folder = _run(tmp_path / "run10")
    clear = _image(tmp_path / "images" / "clear.png", "RGBA", (50, 20))
    wide = _image(tmp_path / "images" / "wide.png")
    gone = str(tmp_path / "images" / "gone.png")
    rows = [_row(wide, "cat", "dog", 2.302, 0.9), _row(clear, "dog", "dog", 0.1, 0.9),
            _row(gone, "dog", "cat", 1.5, 0.6)]
    rows += [_row(wide, "cat", "cat", 0.01 * i, 0.99) for i in range(20)]
    write_predictions(folder, rows)
    report = _report(folder)
    losses = report.sections["top-losses"]
    assert losses["heading"] == "Top losses"
    assert losses["paragraphs"][0] == (
        None, "The validation images the best model got most wrong (highest loss).")
    # Sixteen thumbnails, highest loss first.
    assert len(losses["captions"]) == 16
    assert losses["captions"][:4] == ["cat → dog, loss 2.30|wide.png",
                                      "dog → cat, loss 1.50|gone.png",
                                      "cat → cat, loss 0.19|wide.png",
                                      "cat → cat, loss 0.18|wide.png"]
    # The image that is gone says so in place of its thumbnail.
    assert len(losses["images"]) == 15 and losses["images"][0][0] == "wide.png"
    assert "image not readable (FileNotFoundError)" in run_report_html(folder)
    mislabeled = report.sections["mislabeled"]
    assert mislabeled["heading"] == "Possibly mislabeled"
    assert mislabeled["captions"] == ["labelled cat, model: dog 90%|wide.png"]
    assert mislabeled["paragraphs"][0][1] == (
        "Validation images the model confidently puts in another class.")
    # The thumbnail: a PNG at most 96 pixels a side, in RGB, its shape kept.
    with Image.open(io.BytesIO(base64.b64decode(
            mislabeled["images"][0][1].removeprefix("data:image/png;base64,")))) as thumb:
        assert (thumb.format, thumb.mode, thumb.size) == ("PNG", "RGB", (96, 48))
        assert thumb.getpixel((0, 0)) == (10, 200, 30)


def test_a_transparent_thumbnail_shows_the_grey_training_saw(tmp_path):
    folder = _run(tmp_path / "run11")
    clear = _image(tmp_path / "images" / "clear.png", "RGBA", (50, 20))
    write_predictions(folder, [_row(clear, "dog", "cat", 3.0, 0.95)])
    mislabeled = _report(folder).sections["mislabeled"]
    alt, src = mislabeled["images"][0]
    assert alt == "clear.png" and src.startswith("data:image/png;base64,")
    with Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))) as thumb:
        assert thumb.size == (50, 20)  # smaller than 96: not enlarged
        assert thumb.getpixel((3, 3)) == tuple(TRANSPARENT_BACKGROUND)
    assert mislabeled["captions"] == ["labelled dog, model: cat 95%|clear.png"]


def test_a_cmyk_jpeg_thumbnail_is_an_rgb_png(tmp_path):
    folder = _run(tmp_path / "run11b")
    photo = tmp_path / "photo.jpg"
    Image.new("CMYK", (40, 30), (0, 255, 255, 0)).save(photo)  # red, as printers mix it
    write_predictions(folder, [_row(str(photo), "dog", "cat", 3.0, 0.95)])
    ((_alt, src),) = _report(folder).sections["mislabeled"]["images"]
    with Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))) as thumb:
        assert (thumb.format, thumb.mode, thumb.size) == ("PNG", "RGB", (40, 30))
        red, green, blue = thumb.getpixel((20, 15))
        assert red > 200 and green < 60 and blue < 60


def test_predictions_with_no_mislabeled_image_say_none_and_no_file_says_so(tmp_path):
    folder = _run(tmp_path / "run12")
    write_predictions(folder, [_row(_image(tmp_path / "a.png"), "cat", "cat", 0.2, 0.8)])
    report = _report(folder)
    assert report.sections["mislabeled"]["paragraphs"] == [
        (None, "Validation images the model confidently puts in another class."),
        ("muted", "None.")]
    assert len(report.sections["top-losses"]["captions"]) == 1
    (folder / "predictions.csv").write_text("not,a,predictions,file\n")
    report = _report(folder)
    for anchor in ("top-losses", "mislabeled"):
        assert report.sections[anchor]["paragraphs"] == [
            ("muted", "This run has no predictions.csv.")]


def test_the_data_health_table_counts_each_findings_cases(tmp_path):
    folder = _run(tmp_path / "run13")
    report = _report(folder)
    health = report.sections["health"]
    assert health["heading"] == "Data health"
    assert health["paragraphs"] == [("muted", "No health check of the data folder was found "
                                              "(workbench scan --health, or Check health in "
                                              "the app).")]
    path = tmp_path / "health.json"
    path.write_text(json.dumps({"findings": [
        {"title": "Exact duplicates", "kind": "duplicate", "items": [1, 2, 3],
         "explanation": "The same image <twice>"},
        {"kind": "outlier", "items": [1]}, {}]}))
    health = _report(folder, path).sections["health"]
    assert health["rows"] == [["finding", "cases", "why it matters"],
                              ["Exact duplicates", "3", "The same image <twice>"],
                              ["outlier", "1", ""], ["", "0", ""]]
    assert [c for c, _ in health["cells"]][3:6] == ["l", None, "l"]
    assert health["paragraphs"] == [("muted", f"From {path}.")]
    for nothing in ({"findings": []}, {}):
        path.write_text(json.dumps(nothing))
        assert _report(folder, path).sections["health"]["paragraphs"] == [
            ("good", "The health check found no problem.")]
    for text in ("{not json", json.dumps([1]), json.dumps({"findings": [{"items": 3}]})):
        path.write_text(text)
        paragraphs = _report(folder, path).sections["health"]["paragraphs"]
        assert len(paragraphs) == 1 and paragraphs[0][0] == "bad"
        assert paragraphs[0][1].startswith(f"{path} is unreadable (")
    path.write_text("{not json")
    assert _report(folder, path).sections["health"]["paragraphs"][0][1].endswith(
        "(JSONDecodeError)")


def test_the_model_findings_say_why_they_were_withheld_or_what_was_found(tmp_path):
    folder = _run(tmp_path / "run14")
    findings = _report(folder).sections["model-findings"]
    assert findings["heading"] == "What the model's features found"
    assert findings["paragraphs"] == [("muted", "No findings from the model's features were "
                                                "written (no epoch finished).")]
    path = folder / "feature_health.json"
    path.write_text(json.dumps({"withheld": "Model findings withheld: too weak", "findings": []}))
    findings = _report(folder).sections["model-findings"]
    assert (findings["heading"], findings["paragraphs"]) == (
        "What the model's features found", [("muted", "Model findings withheld: too weak")])
    path.write_text(json.dumps({"withheld": "", "findings": []}))
    findings = _report(folder).sections["model-findings"]
    assert findings["heading"] == "What the model's features found"
    assert findings["paragraphs"] == [("good", "The best model's features found no near "
                                               "duplicate and no outlier among the validation "
                                               "images.")]
    path.write_text(json.dumps({"findings": [{"title": "Near duplicates", "items": [1, 2]}]}))
    assert _report(folder).sections["model-findings"]["rows"][1] == ["Near duplicates", "2", ""]
    path.write_text(json.dumps([1, 2]))  # not an object: the table says it is unreadable
    findings = _report(folder).sections["model-findings"]
    assert findings["paragraphs"] == [("bad", f"{path} is unreadable (AttributeError)")]


def test_the_exports_table_gives_each_files_figures(tmp_path):
    folder = _run(tmp_path / "run15")
    exports = _report(folder).sections["exports"]
    assert exports["heading"] == "Exports"
    assert exports["paragraphs"] == [("muted", "No export was measured.")]
    (folder / "export_report.json").write_text(json.dumps({"exports": {
        "model.onnx": {"export_format": "onnx", "size_bytes": 3 * 2**20 // 2,
                       "val_accuracy": 0.8125, "top1_agreement": 1.0,
                       "latency_ms_median": 1234.567, "images_per_second": 2345.6,
                       "verified": True, "verdict": "verified", "verification": "checked"},
        "model.pt2": {}}}))
    exports = _report(folder).sections["exports"]
    assert exports["heading"] == "Exports"
    assert exports["rows"][0] == [
        "file", "verdict", "format", "size", "val accuracy", "agreement with float32",
        "batch-1 latency", "images/s (batch 32)", "how it was made and checked"]
    assert exports["rows"][1:] == [
        ["model.onnx", "verified", "onnx", "1.50 MiB", "81.2%", "100.0%", "1,234.57 ms",
         "2,346", "checked"],
        ["model.pt2", "", "None", "0.00 MiB", "–", "–", "– ms", "–", ""]]
    classes = [c for c, _ in exports["cells"]]
    assert classes[:9] == ["l", "l", "l", None, None, None, None, None, "l"]
    assert classes[9:18] == ["l", "l good", "l", None, None, None, None, None, "l"]
    assert classes[19] == "l bad"
    (folder / "export_report.json").write_text("{}")
    assert len(_report(folder).sections["exports"]["rows"]) == 1  # the header alone
    (folder / "export_report.json").write_text("[1]")
    exports = _report(folder).sections["exports"]
    assert exports["heading"] == "Exports" and exports["paragraphs"] == [
        ("bad", f"{folder / 'export_report.json'} is unreadable (AttributeError)")]


def test_write_run_report_writes_one_file_where_asked(tmp_path):
    folder = _run(tmp_path / "run16")
    path = write_run_report(folder)
    assert path == folder / REPORT_FILE == folder / "report.html"
    html = path.read_text(encoding="utf-8")
    assert html == run_report_html(folder)
    assert html.startswith("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
                           "<title>Run run16</title><style>")
    assert f"<h1>Run run16</h1><p class='muted'>{folder}</p>" in html
    assert html.endswith("</body></html>\n")
    elsewhere = write_run_report(folder, tmp_path / "out.html")
    assert elsewhere == tmp_path / "out.html" and elsewhere.read_text() == html
    health = tmp_path / "health.json"
    health.write_text(json.dumps({"findings": []}))
    assert "The health check found no problem." in write_run_report(
        folder, None, health).read_text()
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'empty'} is not a run folder "
                                                r"\(it has no config.json\)"):
        write_run_report(tmp_path / "empty")


def test_names_are_escaped_and_undecodable_bytes_shown(tmp_path):
    start = {**START, "class_names": ["<b>a</b>", "it's"]}
    folder = _run(tmp_path / "run17", lines=[start, EPOCHS[0]])
    html = run_report_html(folder)
    assert "<th>&lt;b&gt;a&lt;/b&gt;</th><th>it&#x27;s</th>" in html
    write_predictions(folder, [_row(str(tmp_path / "bad\udcffname.png"), "<b>a</b>", "it's",
                                    2.0, 0.9)])
    report = _report(folder)
    assert report.sections["top-losses"]["captions"] == [
        "<b>a</b> → it's, loss 2.00|bad\\xffname.png"]
