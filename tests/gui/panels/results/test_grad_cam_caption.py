"""The Grad-CAM caption gives the probability the gallery and predictions.csv give."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.core.runs.predictions_file import read_predictions

TIMEOUT_MS = 60_000


def test_the_caption_and_the_gallery_agree_for_every_top_loss_image(qtbot, panel,
                                                                     finished_run):
    in_file = {row.path: row for row in read_predictions(finished_run.end.run_dir)}
    gallery = panel.analysis.top_losses_gallery
    panel.analysis.tabs.setCurrentWidget(gallery)

    for index in range(3):  # the run's five 28 px crops of 32 px images, not the whole image
        row = gallery.rows()[index]
        percent = f"{100 * in_file[row.path].confidence:.0f}%"
        assert f"pred {row.predicted_class} {percent}" in gallery.item(index).text()
        rect = gallery.visualItemRect(gallery.item(index))
        with qtbot.waitSignal(panel.analysis.grad_cam.shown, timeout=TIMEOUT_MS) as shown:
            qtbot.mouseClick(gallery.viewport(), Qt.MouseButton.LeftButton,
                             pos=rect.center())
        cam = shown.args[0]
        assert cam.path == row.path and cam.class_name == row.predicted_class
        assert cam.probability == pytest.approx(in_file[row.path].confidence, rel=2e-5)
        caption = panel.analysis.grad_cam.caption.text()
        assert caption.startswith(f"Grad-CAM for '{row.predicted_class}' ({percent})")
    qtbot.waitUntil(lambda: not any(g.is_decoding() for g in panel.analysis.galleries()))
