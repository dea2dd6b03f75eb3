"""ThumbnailBrowser: 100,000 paths without decoding them, real thumbnails for painted rows."""

from __future__ import annotations

import time
from pathlib import Path

from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap

from workbench.gui.widgets.thumbnail_browser import ThumbnailBrowser, ThumbnailModel

ROWS = 100_000


def write_images(folder: Path, count: int, size: tuple[int, int] = (300, 200)) -> list[str]:
    paths = []
    for index in range(count):
        path = folder / f"real_{index}.jpg"
        Image.new("RGB", size, (40 * index % 255, 120, 200)).save(path, quality=90)
        paths.append(str(path))
    return paths


def mostly_missing_paths(folder: Path, real: list[str]) -> list[str]:
    """``real`` first, then files that do not exist, ROWS in all."""
    prefix = str(folder / "missing_")
    return real + [f"{prefix}{i:06d}.jpg" for i in range(ROWS - len(real))]


def visible_rows(browser: ThumbnailBrowser) -> set[int]:
    """Rows whose item rectangle overlaps the viewport (searched around the middle row)."""
    viewport = browser.viewport().rect()
    middle = browser.indexAt(viewport.center()).row()
    assert middle >= 0
    rows = range(max(middle - 200, 0), min(middle + 200, browser.model().rowCount()))
    model = browser.model()
    return {row for row in rows if browser.visualRect(model.index(row)).intersects(viewport)}


def wait_until_idle(qtbot, model: ThumbnailModel) -> None:
    qtbot.waitUntil(lambda: model.pending_count() == 0, timeout=10_000)


def test_setting_100k_paths_decodes_nothing_and_only_painted_rows_are_requested(
    qtbot, tmp_path
):
    real = write_images(tmp_path, 3)
    browser = ThumbnailBrowser()
    qtbot.addWidget(browser)
    browser.resize(640, 420)
    model = browser.thumbnail_model
    requested: list[int] = []
    model.decode_requested.connect(requested.append)

    paths = mostly_missing_paths(tmp_path, real)
    start = time.perf_counter()
    browser.set_paths(paths)
    elapsed = time.perf_counter() - start
    assert model.rowCount() == ROWS
    assert elapsed < 0.5, f"set_paths took {elapsed:.3f} s"
    qtbot.wait(50)
    assert requested == []  # hidden: nothing painted, nothing decoded

    browser.show()
    qtbot.waitExposed(browser)
    qtbot.waitUntil(lambda: len(requested) > 0, timeout=5000)
    wait_until_idle(qtbot, model)
    on_screen = visible_rows(browser)
    assert 3 < len(on_screen) < 60
    assert set(requested) <= on_screen
    assert len(requested) == len(set(requested))  # no duplicate decodes

    requested.clear()
    last = model.index(ROWS - 1)
    qtbot.waitUntil(lambda: not browser.visualRect(last).isNull(), timeout=5000)
    browser.scrollToBottom()
    qtbot.waitUntil(lambda: len(requested) > 0, timeout=5000)
    wait_until_idle(qtbot, model)
    assert set(requested) <= visible_rows(browser)
    assert min(requested) > ROWS - 100


def test_a_real_file_gets_a_real_thumbnail_and_a_missing_one_a_broken_tile(qtbot, tmp_path):
    real = write_images(tmp_path, 1, size=(300, 200))
    missing = str(tmp_path / "gone.jpg")
    browser = ThumbnailBrowser()
    qtbot.addWidget(browser)
    browser.resize(500, 300)
    browser.set_paths([real[0], missing])
    model = browser.thumbnail_model
    placeholder = model.data(model.index(0), Qt.ItemDataRole.DecorationRole)

    with qtbot.waitSignals([model.thumbnail_ready, model.thumbnail_ready], timeout=5000):
        browser.show()
    wait_until_idle(qtbot, model)

    thumbnail = model.data(model.index(0), Qt.ItemDataRole.DecorationRole)
    assert isinstance(thumbnail, QPixmap)
    assert (thumbnail.width(), thumbnail.height()) == (112, 75)  # 300x200 scaled to fit 112
    assert thumbnail.toImage().pixelColor(50, 30).blue() > 150
    assert (placeholder.width(), placeholder.height()) == (112, 112)
    broken = model.cached_thumbnail(missing)
    assert broken is not None and broken.size() == placeholder.size()
    assert broken.toImage() != placeholder.toImage()
    assert model.data(model.index(0), Qt.ItemDataRole.DisplayRole) == "real_0.jpg"


def test_cache_keeps_only_the_most_recent_thumbnails(qtbot, tmp_path):
    paths = write_images(tmp_path, 4, size=(40, 30))
    model = ThumbnailModel(cache_size=2)
    model.set_paths(paths)
    for row in range(4):
        with qtbot.waitSignal(model.thumbnail_ready, timeout=5000):
            model.data(model.index(row), Qt.ItemDataRole.DecorationRole)
        wait_until_idle(qtbot, model)
    assert [model.cached_thumbnail(p) is not None for p in paths] == [False, False, True, True]


def test_changing_the_current_thumbnail_emits_image_selected(qtbot, tmp_path):
    paths = write_images(tmp_path, 3, size=(40, 30))
    browser = ThumbnailBrowser()
    qtbot.addWidget(browser)
    browser.resize(500, 300)
    browser.set_paths(paths)
    browser.show()
    qtbot.waitExposed(browser)

    with qtbot.waitSignal(browser.image_selected, timeout=2000) as blocker:
        rect = browser.visualRect(browser.model().index(1))
        qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert blocker.args == [paths[1]]
    with qtbot.waitSignal(browser.image_selected, timeout=2000) as blocker:
        browser.select_row(2)
    assert blocker.args == [paths[2]]
    wait_until_idle(qtbot, browser.thumbnail_model)


def test_the_filter_shows_one_split_and_one_class_without_rebuilding_the_view(qtbot, tmp_path):
    train = [(f"{tmp_path}/train_{i:06d}.jpg", i % 4) for i in range(ROWS)]
    val = [(f"{tmp_path}/val_{i:05d}.jpg", i % 4) for i in range(ROWS // 10)]
    browser = ThumbnailBrowser()
    qtbot.addWidget(browser)
    browser.resize(600, 400)
    browser.show()
    model = browser.model()
    browser.set_dataset(train, val)
    assert model.rowCount() == ROWS and model.current_filter() == ("train", -1)

    started = time.perf_counter()
    browser.set_filter("train", 2)
    filtered_s = time.perf_counter() - started
    assert model.paths() == [path for path, label in train if label == 2]
    browser.set_filter("val", 3)
    assert model.paths() == [path for path, label in val if label == 3]
    browser.set_filter("val")
    assert model.paths() == [path for path, _ in val]
    assert browser.model() is model  # the same model and view, only its rows changed
    assert filtered_s < 1.0, f"filtering 100,000 images took {filtered_s:.2f} s"
    wait_until_idle(qtbot, model)
