"""What a user of a 1366x768 laptop sees whole: every five-crop tile and its caption in the
preview (the area scrolls down, never sideways), the Grad-CAM image clear of its caption, the
analysis tabs' names, two rows of thumbnails, and a failed run's reason on more than one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, QSize, Qt

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import RunEnd
from workbench.gui.window.main_window import MainWindow
from workbench.gui.window.window_geometry import window_size_for

TIMEOUT_MS = 60_000
LAPTOP = QSize(1366, 768)


def show_at_laptop_size(qtbot, window: MainWindow) -> None:
    size = window_size_for(LAPTOP)
    window.resize(size)
    qtbot.waitUntil(lambda: window.size() == size)


def rect_in(widget, ancestor) -> QRect:
    """``widget``'s rect in ``ancestor``'s coordinates."""
    return QRect(widget.mapTo(ancestor, QPoint(0, 0)), widget.size())


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Photos large enough for crops of 112 px: five tiles are wider than half a laptop."""
    return write_shape_dataset(tmp_path / "shapes", per_class=3, size=(160, 128),
                               layout="train_val", val_per_class=2)


def open_dataset(qtbot, window: MainWindow, dataset: Path, tmp_path: Path) -> None:
    config = TrainConfig(data_root=str(dataset), model="small_cnn", weights="none",
                         finetune="full", crop_mode="five_crop", resize_size=128, crop_size=112,
                         epochs=1, workers=0, device="cpu", output_dir=str(tmp_path / "runs"))
    qtbot.waitUntil(lambda: window.dataset_panel is not None, timeout=TIMEOUT_MS)
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=TIMEOUT_MS):
        window.apply_config(config)


def test_every_five_crop_tile_and_its_caption_can_be_seen_whole(qtbot, window, dataset,
                                                                tmp_path):
    show_at_laptop_size(qtbot, window)
    open_dataset(qtbot, window, dataset, tmp_path)
    preview = window.preview_panel
    with qtbot.waitSignal(preview.preview_ready, timeout=TIMEOUT_MS):
        window.dataset_panel.thumbnails.select_row(0)
    window.left_tabs.setCurrentWidget(preview)
    qtbot.wait(50)  # the tiles find their rows on the next layout pass

    scroll = preview.scroll_area
    viewport = scroll.viewport()
    assert scroll.horizontalScrollBar().maximum() == 0  # nothing to the right to scroll to
    tiles = preview.train_view.tiles + preview.val_view.tiles
    assert len(tiles) == 10
    for tile in tiles:
        scroll.ensureWidgetVisible(tile, 0, 0)  # the user scrolls down to it
        qtbot.wait(1)
        for part in (tile.image_label, tile.caption_label):
            assert viewport.rect().contains(rect_in(part, viewport)), (tile.caption_label.text(),
                                                                       rect_in(part, viewport))
        caption = tile.caption_label
        assert caption.contentsRect().width() >= caption.fontMetrics().horizontalAdvance(
            caption.text()), caption.text()
        assert tile.image_label.pixmap().width() == 112
    for view in (preview.train_view, preview.val_view):  # the text beside them is not cut
        assert rect_in(view.note_label, viewport).right() <= viewport.rect().right()
        assert rect_in(view.resized_label, viewport).right() <= viewport.rect().right()


def test_two_rows_of_thumbnails_show(qtbot, window, dataset, tmp_path):
    show_at_laptop_size(qtbot, window)
    open_dataset(qtbot, window, dataset, tmp_path)
    window.left_tabs.setCurrentIndex(0)
    thumbnails = window.dataset_panel.thumbnails
    qtbot.waitUntil(lambda: thumbnails.model().rowCount() == 12)
    qtbot.wait(50)

    visible = thumbnails.viewport().rect()
    rows_seen = {thumbnails.visualRect(thumbnails.model().index(row, 0)).top()
                 for row in range(thumbnails.model().rowCount())
                 if visible.contains(thumbnails.visualRect(thumbnails.model().index(row, 0)))}
    assert len(rows_seen) >= 2, (rows_seen, visible)


def test_the_grad_cam_image_clears_its_caption_and_the_tab_names_show_whole(
        qtbot, window, finished_run):
    show_at_laptop_size(qtbot, window)
    results = window.results_panel
    window.right_tabs.setCurrentWidget(results)
    with qtbot.waitSignal(results.predictions_loaded, timeout=TIMEOUT_MS):
        results.show_run_start(finished_run.start)
        for event in finished_run.epochs:
            results.show_epoch_end(event)
        results.show_run_end(finished_run.end)
    analysis = results.analysis
    matrix = results.confusion_view  # a click on a cell gives the first tab a longer name
    qtbot.mouseClick(matrix, Qt.MouseButton.LeftButton,
                     pos=matrix.cell_rect(0, 1).center().toPoint())
    assert "\u2192" in analysis.tabs.tabText(0)
    gallery = analysis.top_losses_gallery
    analysis.tabs.setCurrentWidget(gallery)
    qtbot.waitUntil(lambda: gallery.count() > 0)
    with qtbot.waitSignal(analysis.grad_cam.shown, timeout=TIMEOUT_MS):
        rect = gallery.visualItemRect(gallery.item(0))
        qtbot.mouseClick(gallery.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.wait(50)

    view = analysis.grad_cam
    pixmap = view.image_label.pixmap()  # as drawn: centred in its widget
    image = QRect(0, 0, pixmap.width(), pixmap.height())
    image.moveCenter(view.image_label.geometry().center())
    caption = view.caption.geometry()
    assert not image.isEmpty() and not caption.isEmpty()
    assert not image.intersects(caption), (image, caption)
    assert view.rect().contains(image) and view.rect().contains(caption)
    assert view.caption.height() >= view.caption.fontMetrics().height()

    bar = analysis.tabs.tabBar()
    for index in range(bar.count()):
        text, tab = bar.tabText(index), bar.tabRect(index)
        assert tab.width() >= bar.fontMetrics().horizontalAdvance(text) + 8, text
        assert bar.rect().contains(tab), (text, tab, bar.rect())  # none scrolled out of sight
    assert analysis.tabs.rect().contains(rect_in(bar, analysis.tabs))


def test_a_failed_runs_reason_wraps_onto_more_lines(qtbot, window):
    show_at_laptop_size(qtbot, window)
    window.right_tabs.setCurrentWidget(window.training_tab)
    reason = ("RuntimeError: the loader process 2 died while decoding "
              "/data/photos/train/cat/IMG_2024.JPG; try fewer workers (workers: 1) or a smaller "
              "batch, the machine may be out of memory")

    window.controller.errored.emit(reason)
    window.controller.run_ended.emit(RunEnd("failed", 1, 1, 0.5, "", "", "", 3.0, reason))
    qtbot.wait(50)

    state = window.status_panel.state_label
    assert reason in state.text()
    assert state.wordWrap()
    line = state.fontMetrics().height()
    assert state.height() >= 2 * line, (state.height(), line)
    assert not state.is_elided()  # the whole reason is on screen
    shown = state.shown_text()
    assert shown.count("\n") >= 1 and shown.replace("\n", " ").replace("  ", " ").endswith(
        "out of memory")
