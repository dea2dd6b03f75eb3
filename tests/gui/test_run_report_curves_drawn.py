"""The run report's loss chart drawn from known values and read back from its pixels: the
lowest loss is drawn lowest, the highest highest, each epoch at its own place left to right,
each curve in its legend's colour, and the axis labels name the range drawn.

The chart is inline SVG; Qt's SVG renderer draws it here as a browser would (so the test lives
with the Qt tests, though the report is core code).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from workbench.core.runs.run_report import _curves_section

TRAIN = (0.9, 0.4, 1.3, 0.7)  # epochs 1-4: lowest at epoch 2, highest at epoch 3
VALIDATION = (1.0, 0.8, 0.6, 1.1)
WIDTH, HEIGHT = 460, 240  # the chart's size
LEFT, RIGHT, TOP, BOTTOM = 50, 450, 24, 210  # its plotting area


def _run_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"config": {}}))
    lines = [{"event": "EpochEnd", "epoch": epoch, "epochs": 4, "train_loss": train,
              "train_accuracy": 0.5, "val_loss": val, "val_accuracy": 0.5}
             for epoch, train, val in zip((1, 2, 3, 4), TRAIN, VALIDATION, strict=True)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def _render(svg: str) -> np.ndarray:
    """The SVG drawn on white, as an RGB array [height, width, 3]."""
    from PySide6.QtCore import QByteArray
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(QByteArray(svg.encode()))
    assert renderer.isValid()
    image = QImage(WIDTH, HEIGHT, QImage.Format.Format_RGB888)
    image.fill(QColor("white"))
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    stride = image.bytesPerLine()
    data = np.frombuffer(bytes(image.constBits()), np.uint8).reshape(HEIGHT, stride)
    return data[:, :WIDTH * 3].reshape(HEIGHT, WIDTH, 3).copy()


def _pixels_of(image: np.ndarray, colour: str) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the pixels within 30 of ``colour`` ('#rrggbb') in every channel."""
    rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    rows, columns = np.nonzero(np.abs(image.astype(int) - rgb).max(axis=2) <= 30)
    return rows, columns


def _epoch_x(epoch: int) -> float:
    return LEFT + (epoch - 1) / 3 * (RIGHT - LEFT)


def test_the_lowest_loss_is_drawn_lowest_and_the_axes_name_the_range(tmp_path, qapp) -> None:
    section = _curves_section(_run_folder(tmp_path / "run"))
    loss_svg = re.search(r"<svg[^>]*aria-label='Loss'.*?</svg>", section, re.S).group(0)
    lines = dict(re.findall(r"<polyline[^>]*stroke='(#[0-9a-f]{6})'[^>]*points='([^']*)'",
                            loss_svg))
    legend = re.findall(r"<text[^>]*fill='(#[0-9a-f]{6})'>([^<]*)</text>", loss_svg)
    # The legend names each curve in its line's colour.
    assert [name for _, name in legend] == ["train", "validation"]
    assert [colour for colour, _ in legend] == list(lines)
    colours = dict((name, colour) for colour, name in legend)
    # The value axis runs from the lowest loss drawn (bottom) to the highest (top); the epoch
    # axis from the first epoch to the last.
    labels = re.findall(r"<text x='(\d+)' y='(\d+)' font-size='10'>([^<]*)</text>", loss_svg)
    assert labels == [("4", str(TOP + 4), "1.3"), ("4", str(BOTTOM), "0.4"),
                      (str(LEFT), str(HEIGHT - 12), "epoch 1"),
                      (str(RIGHT - 50), str(HEIGHT - 12), "epoch 4")]

    image = _render(loss_svg)
    # The legend (top right) is written in the curves' colours too: blank it.
    image[TOP:TOP + 36, RIGHT - 95:RIGHT - 20] = 255
    rows, columns = _pixels_of(image, colours["train"])
    assert rows.size > 400  # a drawn line, not a few stray pixels
    # Lowest in the picture (largest row) at epoch 2, on the bottom axis; highest at epoch 3,
    # on the top of the range.
    lowest, highest = rows.argmax(), rows.argmin()
    assert abs(columns[lowest] - _epoch_x(2)) <= 4 and abs(rows[lowest] - BOTTOM) <= 2
    assert abs(columns[highest] - _epoch_x(3)) <= 4 and abs(rows[highest] - TOP) <= 2
    # Each epoch's point where its loss puts it, in proportion between the two.
    for epoch, loss in zip((1, 2, 3, 4), TRAIN, strict=True):
        x = round(_epoch_x(epoch))
        y = BOTTOM - (loss - 0.4) / (1.3 - 0.4) * (BOTTOM - TOP)
        near = rows[np.abs(columns - x) <= 1]
        assert near.size and np.abs(near - y).min() <= 2, (epoch, loss)
    # The validation curve's lowest point (0.6, epoch 3) sits above train's lowest (0.4).
    val_rows, val_columns = _pixels_of(image, colours["validation"])
    assert abs(val_columns[val_rows.argmax()] - _epoch_x(3)) <= 4
    assert val_rows.max() < rows.max() - 30
