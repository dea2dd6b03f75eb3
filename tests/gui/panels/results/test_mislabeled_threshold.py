"""The 'Possibly mislabeled' list follows its stated rule, with a threshold the user sets."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image
from PySide6.QtCore import Qt

from workbench.core.runs.predictions_file import PredictionRow, read_predictions, write_predictions
from workbench.gui.panels.results.error_analysis_view import ErrorAnalysisView


def _row(path: str, true: str, probabilities: dict[str, float]) -> PredictionRow:
    top = tuple(sorted(probabilities.items(), key=lambda item: -item[1]))
    return PredictionRow(path, true, top[0][0], top[0][1], probabilities[true],
                         -math.log(probabilities[true]), top)


def test_changing_the_threshold_changes_the_list(qtbot, tmp_path):
    table = {  # name: (label, probabilities); known answers against 80% and 50%
        "seven_as_one": ("7", {"1": 0.93, "7": 0.05, "4": 0.02}),
        "four_as_nine": ("4", {"9": 0.81, "4": 0.19}),
        "five_as_six": ("5", {"6": 0.79, "5": 0.21}),
        "two_as_seven": ("2", {"7": 0.53, "2": 0.47}),
        "one_unsure": ("1", {"7": 0.21, "4": 0.20, "1": 0.19, "9": 0.40}),
        "zero_right": ("0", {"0": 0.55, "6": 0.45}),
        "three_right": ("3", {"3": 0.97, "8": 0.03}),
    }
    rows = []
    for name, (label, probabilities) in table.items():
        path = tmp_path / f"{name}.png"
        Image.fromarray(np.full((20, 20), 40 * len(name) % 255, np.uint8)).save(path)
        rows.append(_row(str(path), label, probabilities))
    write_predictions(tmp_path, rows)
    view = ErrorAnalysisView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    view.set_predictions(read_predictions(tmp_path), "")
    gallery = view.mislabeled_gallery

    def listed() -> list[str]:
        return [row.path.rsplit("/", 1)[-1].removesuffix(".png") for row in gallery.rows()]

    assert view.mislabel_threshold.value() == 80
    assert listed() == ["seven_as_one", "four_as_nine"]
    assert view.tabs.tabText(2) == "Possibly mislabeled (2)"
    assert "2 possibly mislabeled (another class at least 80%)" in view.hint.text()
    assert gallery.item(0).text().endswith("maybe 1 93%")

    view.tabs.setCurrentIndex(2)
    box = view.mislabel_threshold
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(box, "52")
    qtbot.keyClick(box, Qt.Key.Key_Return)

    assert box.value() == 52
    assert listed() == ["seven_as_one", "four_as_nine", "five_as_six", "two_as_seven"]
    assert view.tabs.tabText(2) == "Possibly mislabeled (4)"
    assert "4 possibly mislabeled (another class at least 52%)" in view.hint.text()

    qtbot.keyClick(box, Qt.Key.Key_Up)  # 53%: 0.53 still reaches it
    assert listed()[-1] == "two_as_seven"
    qtbot.keyClick(box, Qt.Key.Key_Up)  # 54%: it no longer does
    assert listed() == ["seven_as_one", "four_as_nine", "five_as_six"]
    qtbot.waitUntil(lambda: not any(g.is_decoding() for g in view.galleries()))
