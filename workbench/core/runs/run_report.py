"""One self-contained HTML file that tells a run's story, to open in any browser or mail.

Everything comes from the run folder: ``config.json``, ``metrics.jsonl``, ``predictions.csv``,
``export_report.json`` and ``health.json`` where they exist. Curves are inline SVG and image
thumbnails inline PNG (``data:`` URIs), so the file needs nothing beside it.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.core.file_names import shown_name
from workbench.core.runs.atomic_io import atomic_write_text
from workbench.core.runs.prediction_analysis import class_figures, possibly_mislabeled, top_losses
from workbench.core.runs.predictions_file import (
    PredictionRow,
    PredictionsFileError,
    read_predictions,
)
from workbench.core.runs.run_folder import FEATURE_FINDINGS_FILE
from workbench.core.runs.run_index import best_epoch_events, read_run_summary, run_curves
from workbench.core.transparency import composite_transparency

REPORT_FILE = "report.html"
THUMBNAIL_PX = 96
THUMBNAILS = 16
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{margin-bottom:0}h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:2em}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}
.muted{color:#777}.grid{display:flex;flex-wrap:wrap;gap:10px}
figure{margin:0;width:120px;font-size:11px;overflow-wrap:anywhere}
figure img{display:block;border:1px solid #ccc;max-width:118px;margin-bottom:2px}
.bad{color:#b00020;font-weight:bold}.good{color:#1b7a1b}
"""
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")


def write_run_report(run_dir: str | Path, out_path: str | Path | None = None,
                     health_file: str | Path | None = None) -> Path:
    """Write the report of ``run_dir`` (default: ``run_dir/report.html``) and return its path.

    ``health_file``: the data folder's ``health.json`` (its place in the cache is the data
    layer's to say), shown when it exists.

    Raises:
        FileNotFoundError: ``run_dir`` is not a run folder (it has no config.json).
        OSError: the file cannot be written.
    """
    folder = Path(run_dir)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{folder} is not a run folder (it has no config.json)")
    path = Path(out_path) if out_path else folder / REPORT_FILE
    atomic_write_text(path, run_report_html(folder, health_file))
    return path


def run_report_html(run_dir: str | Path, health_file: str | Path | None = None) -> str:
    """The report of a run folder as one HTML document."""
    folder = Path(run_dir)
    summary = read_run_summary(folder)
    start, best, _end = best_epoch_events(folder)
    class_names = list(getattr(start, "class_names", ()) or ())
    try:
        rows = read_predictions(folder)
    except PredictionsFileError:
        rows = []
    title = f"Run {summary.name}"
    sections = [
        _summary_section(summary, start, best),
        _config_section(summary.config, _what_ran(folder)),
        _curves_section(folder),
        _confusion_section(best, class_names),
        _class_metrics_section(best, class_names),
        _images_section("top-losses", "Top losses",
                        "The validation images the best model got most wrong (highest loss).",
                        [(r, f"{r.true_class} → {r.predicted_class}, loss {r.loss:.2f}")
                         for r in top_losses(rows, THUMBNAILS)], bool(rows)),
        _images_section("mislabeled", "Possibly mislabeled",
                        "Validation images the model confidently puts in another class.",
                        [(i.row, f"labelled {i.row.true_class}, model: {i.suggested_class} "
                                 f"{i.suggested_probability:.0%}")
                         for i in possibly_mislabeled(rows)[:THUMBNAILS]], bool(rows)),
        _health_section(Path(health_file) if health_file else None),
        _model_findings_section(folder),
        _exports_section(folder),
    ]
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{_e(title)}</h1><p class='muted'>{_e(summary.run_dir)}</p>"
            + "".join(sections) + "</body></html>\n")


def _section(anchor: str, heading: str, body: str) -> str:
    return f"<section id='{anchor}'><h2>{_e(heading)}</h2>{body}</section>"


def _summary_section(summary: Any, start: Any, best: Any) -> str:
    speed = (f"{best.images_per_second:,.0f} images/s over the best epoch, its first steps "
             "included" if best else "not measured")
    best_text = (f"{summary.best_val_accuracy:.1%} at epoch {best.best_epoch}" if best
                 else "no epoch finished")
    rows = [("Status", f"{summary.status}, {summary.epochs_completed}/{summary.epochs} epochs"),
            ("Model", summary.model), ("Dataset", getattr(start, "dataset_summary", "") or
                                       summary.dataset),
            ("Validation split", summary.split_fingerprint or "not recorded"),
            ("Best validation accuracy", best_text),
            ("Device", getattr(start, "device_name", "") or summary.device),
            ("Precision", getattr(start, "precision", "") or "unknown"),
            ("Training throughput", speed), ("Wall time", f"{summary.seconds:,.0f} s")]
    return _section("summary", "Summary", _key_value_table(rows))


# The settings that only take effect on some devices, and what config.json's "ran" says of each.
_DEVICE_SETTINGS = {"amp": "precision", "channels_last": "memory_format",
                    "pin_memory": "pin_memory"}


def _config_section(config: dict[str, Any], ran: dict[str, Any] | None) -> str:
    """The settings as asked; where the device made a setting take no effect (amp,
    channels_last, pin_memory on a CPU), what ran beside it."""
    rows = []
    if ran:
        pinned = "yes" if ran.get("pin_memory") else "no"
        rows.append(("What ran", f"{ran.get('precision')}, {ran.get('memory_format')} memory "
                                 f"format, pinned memory {pinned} on {ran.get('device')}"))
    for key, value in config.items():
        shown = json.dumps(value)
        if ran and key in _DEVICE_SETTINGS and _DEVICE_SETTINGS[key] in ran:
            took = ran[_DEVICE_SETTINGS[key]]
            took = ("yes" if took else "no") if isinstance(took, bool) else took
            shown = f"{shown} asked; ran: {took}"
        rows.append((key, shown))
    return _section("config", "Configuration", _key_value_table(rows))


def _what_ran(folder: Path) -> dict[str, Any] | None:
    """config.json's "ran" (None for runs written before it was recorded)."""
    try:
        ran = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("ran")
    except (OSError, ValueError):
        return None
    return ran if isinstance(ran, dict) else None


def _curves_section(folder: Path) -> str:
    curves = run_curves(folder)
    if not curves.epochs:
        return _section("curves", "Curves", "<p class='muted'>No epoch finished.</p>")
    loss = _svg_chart("Loss", curves.epochs, {"train": curves.train_loss,
                                               "validation": curves.val_loss})
    accuracy = _svg_chart("Accuracy", curves.epochs, {"train": curves.train_accuracy,
                                                       "validation": curves.val_accuracy})
    return _section("curves", "Curves", f"<div class='grid'>{loss}{accuracy}</div>")


def _svg_chart(title: str, epochs: Sequence[int], series: dict[str, Sequence[float]],
               width: int = 460, height: int = 240) -> str:
    """A line chart of ``series`` against ``epochs`` as inline SVG, with its axis ranges."""
    values = [v for ys in series.values() for v in ys if math.isfinite(v)]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if high - low < 1e-12:
        low, high = low - 0.5, high + 0.5
    first, last = min(epochs), max(epochs)
    span = max(last - first, 1)
    left, right, top, bottom = 50, width - 10, 24, height - 30

    def point(epoch: int, value: float) -> str:
        x = left + (epoch - first) / span * (right - left)
        y = bottom - (value - low) / (high - low) * (bottom - top)
        return f"{x:.1f},{y:.1f}"

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
             f"role='img' aria-label='{_e(title)}'>",
             f"<text x='{left}' y='16' font-size='13'>{_e(title)}</text>",
             f"<line x1='{left}' y1='{bottom}' x2='{right}' y2='{bottom}' stroke='#999'/>",
             f"<line x1='{left}' y1='{top}' x2='{left}' y2='{bottom}' stroke='#999'/>",
             f"<text x='4' y='{top + 4}' font-size='10'>{high:.3g}</text>",
             f"<text x='4' y='{bottom}' font-size='10'>{low:.3g}</text>",
             f"<text x='{left}' y='{height - 12}' font-size='10'>epoch {first}</text>",
             f"<text x='{right - 50}' y='{height - 12}' font-size='10'>epoch {last}</text>"]
    for index, (name, ys) in enumerate(series.items()):
        colour = _COLOURS[index % len(_COLOURS)]
        points = " ".join(point(e, v) for e, v in zip(epochs, ys, strict=True)
                          if math.isfinite(v))
        parts.append(f"<polyline fill='none' stroke='{colour}' stroke-width='2' "
                     f"points='{points}'/>")
        parts.append(f"<text x='{right - 90}' y='{top + 14 * (index + 1)}' font-size='11' "
                     f"fill='{colour}'>{_e(name)}</text>")
    return "".join(parts) + "</svg>"


def _confusion_section(best: Any, class_names: list[str]) -> str:
    if best is None or not best.confusion:
        return _section("confusion", "Confusion matrix", "<p class='muted'>No epoch finished.</p>")
    names = class_names or [str(i) for i in range(len(best.confusion))]
    peak = max((max(row) for row in best.confusion), default=1) or 1
    head = "".join(f"<th>{_e(n)}</th>" for n in names)
    body = []
    for name, row in zip(names, best.confusion, strict=False):
        cells = "".join(f"<td style='background:rgba(31,119,180,{0.85 * v / peak:.2f})'>{v}</td>"
                        for v in row)
        body.append(f"<tr><th class='l'>{_e(name)}</th>{cells}</tr>")
    table = (f"<table><tr><th class='l'>true \\ predicted</th>{head}</tr>{''.join(body)}"
             f"</table><p class='muted'>Best epoch ({best.best_epoch}); rows are the true "
             "class.</p>")
    return _section("confusion", "Confusion matrix", table)


def _class_metrics_section(best: Any, class_names: list[str]) -> str:
    if best is None or not best.confusion:
        return _section("class-metrics", "Per-class precision, recall and F1",
                        "<p class='muted'>No epoch finished.</p>")
    rows = "".join(f"<tr><td class='l'>{_e(f.name)}</td><td>{_pct(f.precision)}</td>"
                   f"<td>{_pct(f.recall)}</td><td>{_pct(f.f1)}</td><td>{f.support}</td></tr>"
                   for f in class_figures(best.confusion, class_names))
    table = ("<table><tr><th class='l'>class</th><th>precision</th><th>recall</th><th>F1</th>"
             f"<th>images</th></tr>{rows}</table>")
    return _section("class-metrics", "Per-class precision, recall and F1", table)


def _images_section(anchor: str, heading: str, text: str,
                    items: list[tuple[PredictionRow, str]], have_predictions: bool) -> str:
    if not have_predictions:
        body = "<p class='muted'>This run has no predictions.csv.</p>"
    elif not items:
        body = f"<p>{_e(text)}</p><p class='muted'>None.</p>"
    else:
        figures = "".join(f"<figure>{_thumbnail(row.path)}<figcaption>{_e(caption)}<br>"
                          f"<span class='muted'>{_e(Path(row.path).name)}</span></figcaption>"
                          "</figure>" for row, caption in items)
        body = f"<p>{_e(text)}</p><div class='grid'>{figures}</div>"
    return _section(anchor, heading, body)


def _thumbnail(path: str) -> str:
    """The image as an inline PNG thumbnail, or a note when it cannot be read any more.

    Transparent pixels show the grey training composited them on, as the app's views do.
    """
    from PIL import Image, ImageOps

    try:
        with Image.open(path) as image:
            image = composite_transparency(ImageOps.exif_transpose(image))
            image.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
            buffer = io.BytesIO()
            image.convert("RGB").save(buffer, format="PNG")
    except (OSError, ValueError) as exc:
        return f"<div class='muted'>image not readable ({_e(type(exc).__name__)})</div>"
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"<img alt='{_e(Path(path).name)}' src='data:image/png;base64,{data}'>"


def _health_section(path: Path | None) -> str:
    return _findings_section("health", "Data health", path,
                             "No health check of the data folder was found (workbench scan "
                             "--health, or Check health in the app).",
                             "The health check found no problem.")


def _model_findings_section(folder: Path) -> str:
    path = folder / FEATURE_FINDINGS_FILE
    try:
        withheld = json.loads(path.read_text(encoding="utf-8")).get("withheld", "")
    except (OSError, ValueError, AttributeError):
        withheld = ""  # no file, or one the table below reports as unreadable
    if withheld:
        return _section("model-findings", "What the model's features found",
                        f"<p class='muted'>{_e(str(withheld))}</p>")
    return _findings_section("model-findings", "What the model's features found",
                             folder / FEATURE_FINDINGS_FILE,
                             "No findings from the model's features were written (no epoch "
                             "finished).",
                             "The best model's features found no near duplicate and no "
                             "outlier among the validation images.")


def _findings_section(anchor: str, heading: str, path: Path | None, missing: str,
                      nothing_found: str) -> str:
    """A health report (``health.json`` or ``feature_health.json``) as a table."""
    if path is None or not path.is_file():
        return _section(anchor, heading, f"<p class='muted'>{_e(missing)}</p>")
    try:
        findings = json.loads(path.read_text(encoding="utf-8")).get("findings", [])
        rows = "".join(
            f"<tr><td class='l'>{_e(str(f.get('title') or f.get('kind', '')))}</td>"
            f"<td>{len(f.get('items', []))}</td>"
            f"<td class='l'>{_e(str(f.get('explanation', '')))}</td></tr>" for f in findings)
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        return _section(anchor, heading, f"<p class='bad'>{_e(str(path))} is "
                                         f"unreadable ({_e(type(exc).__name__)})</p>")
    body = ("<table><tr><th class='l'>finding</th><th>cases</th><th class='l'>why it matters"
            f"</th></tr>{rows}</table><p class='muted'>From {_e(str(path))}.</p>"
            if findings else f"<p class='good'>{_e(nothing_found)}</p>")
    return _section(anchor, heading, body)


def _exports_section(folder: Path) -> str:
    path = folder / "export_report.json"
    if not path.is_file():
        return _section("exports", "Exports", "<p class='muted'>No export was measured.</p>")
    try:
        exports = json.loads(path.read_text(encoding="utf-8")).get("exports", {})
    except (OSError, ValueError, AttributeError) as exc:
        return _section("exports", "Exports", f"<p class='bad'>{_e(str(path))} is unreadable "
                                              f"({_e(type(exc).__name__)})</p>")
    rows = []
    for name, e in exports.items():
        verdict_class = "good" if e.get("verified") else "bad"
        rows.append(
            f"<tr><td class='l'>{_e(name)}</td>"
            f"<td class='l {verdict_class}'>{_e(str(e.get('verdict', '')))}</td>"
            f"<td class='l'>{_e(str(e.get('export_format')))}"
            f"</td><td>{e.get('size_bytes', 0) / 2**20:.2f} MiB</td>"
            f"<td>{_pct(e.get('val_accuracy'))}</td><td>{_pct(e.get('top1_agreement'))}</td>"
            f"<td>{_number(e.get('latency_ms_median'))} ms</td>"
            f"<td>{_number(e.get('images_per_second'), 0)}</td>"
            f"<td class='l'>{_e(str(e.get('verification', '')))}</td></tr>")
    # The verdict first, beside the file's name; how it was made and checked last (detail).
    table = ("<table><tr><th class='l'>file</th><th class='l'>verdict</th>"
             "<th class='l'>format</th><th>size</th>"
             "<th>val accuracy</th><th>agreement with float32</th><th>batch-1 latency</th>"
             "<th>images/s (batch 32)</th><th class='l'>how it was made and checked</th></tr>"
             f"{''.join(rows)}</table>")
    return _section("exports", "Exports", table)


def _key_value_table(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th class='l'>{_e(k)}</th><td class='l'>{_e(str(v))}</td></tr>"
                   for k, v in rows)
    return f"<table>{body}</table>"


def _pct(value: Any) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{100 * value:.1f}%"


def _number(value: Any, digits: int = 2) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{value:,.{digits}f}"


def _e(text: str) -> str:
    # shown_name: a file or class name with bytes that are not UTF-8 would make the page
    # unwritable, and one with a newline would break its line.
    return html.escape(shown_name(text), quote=True)
