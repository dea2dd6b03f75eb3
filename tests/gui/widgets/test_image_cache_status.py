"""The image cache line in the settings: real cached files counted and cleared a subfolder per
timer tick."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from workbench.core.data.generated.synthetic_images import draw_shape_image
from workbench.core.data.image_cache import load_image_uint8
from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.config_form import ConfigForm
from workbench.gui.widgets.image_cache_status import ImageCacheStatus


def _fill_cache(folder: Path, images: Path, count: int) -> None:
    images.mkdir(exist_ok=True)
    for index in range(count):
        path = images / f"{index}.png"
        draw_shape_image("circle", (40, 30), random.Random(index)).save(path)
        load_image_uint8(str(path), 24, cache_dir=str(folder))


@pytest.fixture
def status(qtbot) -> ImageCacheStatus:
    widget = ImageCacheStatus()
    qtbot.addWidget(widget)
    yield widget
    qtbot.waitUntil(lambda: not widget.is_busy(), timeout=10_000)


def test_the_line_counts_the_cache_when_shown(qtbot, status, tmp_path):
    cache = tmp_path / "cache"
    _fill_cache(cache, tmp_path / "images", 3)
    status.set_folder(str(cache))
    status.show()
    qtbot.waitUntil(lambda: "3 resized image(s)" in status.label.text(), timeout=10_000)
    assert "free on that disk" in status.label.text()
    assert status.clear_button.isEnabled() and status.label.toolTip() == str(cache)

    _fill_cache(cache, tmp_path / "more images", 2)  # a run added two more
    status.refresh_button.click()
    # The walk goes a subfolder per timer tick: the click returns at once.
    assert status.is_busy() and status.label.text().startswith("Counting the cached images")
    qtbot.waitUntil(lambda: "5 resized image(s)" in status.label.text(), timeout=10_000)


def test_clearing_asks_first_and_deletes_only_the_cached_images(qtbot, status, tmp_path):
    cache = tmp_path / "cache"
    _fill_cache(cache, tmp_path / "images", 4)
    (cache / "notes.txt").write_text("mine")
    status.set_folder(str(cache))
    status.show()
    qtbot.waitUntil(status.clear_button.isEnabled, timeout=10_000)

    asked = []
    status.confirm_clear = lambda usage, folder: asked.append((usage.files, folder)) or False
    status.clear_button.click()
    assert asked == [(4, cache)] and len(list(cache.glob("*/*.npy"))) == 4  # declined: kept

    status.confirm_clear = lambda usage, folder: True
    status.clear_button.click()
    qtbot.waitUntil(lambda: status.label.text().startswith("Deleted 4 image(s)"),
                    timeout=10_000)
    assert "0 resized image(s)" in status.label.text()
    assert not list(cache.glob("*/*.npy")) and (cache / "notes.txt").read_text() == "mine"
    assert not status.clear_button.isEnabled()


def test_the_settings_show_the_cache_of_the_folder_typed_in(qtbot, tmp_path):
    cache = tmp_path / "elsewhere"
    _fill_cache(cache, tmp_path / "images", 2)
    form = ConfigForm(TrainConfig(output_dir=str(tmp_path / "runs")))
    qtbot.addWidget(form)
    form.resize(700, 1500)
    form.show()
    qtbot.waitUntil(lambda: "resized image(s)" in form.cache_status.label.text(),
                    timeout=10_000)
    assert form.cache_status.folder() != cache  # the default folder first
    form.update_config(cache_dir=str(cache))
    qtbot.waitUntil(lambda: "2 resized image(s)" in form.cache_status.label.text(),
                    timeout=10_000)
    assert form.cache_status.folder() == cache
    qtbot.waitUntil(lambda: not form.cache_status.is_busy(), timeout=10_000)
