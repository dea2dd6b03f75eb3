"""AugmentationPreviewPanel: real crops at model size, latest settings win, errors shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageDraw
from PySide6.QtCore import QSize, Qt, QTimer

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.preview.augmentation_preview_panel import AugmentationPreviewPanel

PREVIEW_TIMEOUT_MS = 30_000


@pytest.fixture
def panel(qtbot):
    widget = AugmentationPreviewPanel()
    qtbot.addWidget(widget)
    widget.resize(1300, 900)
    yield widget
    assert widget.wait_for_preview(10_000)


@pytest.fixture
def photo(tmp_path) -> Path:
    """A 640x480 JPEG with a shape in each corner."""
    image = Image.new("RGB", (640, 480), (30, 60, 90))
    draw = ImageDraw.Draw(image)
    draw.ellipse((20, 20, 140, 140), fill=(250, 40, 40))
    draw.rectangle((500, 340, 620, 460), fill=(40, 250, 40))
    path = tmp_path / "photo.jpg"
    image.save(path, quality=90)
    return path


def config(**changes) -> TrainConfig:
    """Five crops unless ``changes`` says otherwise (the preview's richest mode)."""
    return TrainConfig(**{"resize_size": 256, "crop_size": 224, "crop_mode": "five_crop",
                          **changes})


def show_preview(qtbot, panel: AugmentationPreviewPanel, settings: TrainConfig, path=None):
    with qtbot.waitSignal(panel.preview_ready, timeout=PREVIEW_TIMEOUT_MS) as blocker:
        panel.set_config(settings)
        if path is not None:
            panel.set_image(str(path))
    return blocker.args[0]


def tile_sizes(view) -> list[QSize]:
    return [tile.image_label.pixmap().size() for tile in view.tiles]


def test_five_crop_shows_five_model_size_crops_for_train_and_val(qtbot, panel, photo):
    preview = show_preview(qtbot, panel, config(crop_mode="five_crop"), photo)

    assert panel.preview() is preview
    for view, crops in ((panel.train_view, preview.train), (panel.val_view, preview.val)):
        assert tile_sizes(view) == [QSize(224, 224)] * 5
        assert [t.caption_label.text() for t in view.tiles][0] == "1 · top-left"
        assert [t.caption_label.text() for t in view.tiles][4] == "5 · center"
        resized = view.resized_label.pixmap()
        # 640x480 resized to 256 on the short side (341x256), fitted to the 240 px box
        assert (resized.width(), resized.height()) == (320, 240)
        assert len(crops.crops) == 5
    # the top-left crop holds the red disc drawn in the original's top-left corner
    top_left = panel.train_view.tiles[0].image_label.pixmap().toImage()
    colour = top_left.pixelColor(40, 40)
    assert colour.red() > 180 and colour.green() < 120
    status = panel.status_label.text()
    # 640x480 with its short side at 256: 640 * 256 / 480 = 341.3, so 341x256.
    assert status.startswith("5 crops of 224x224 from the 640x480 image resized to 341x256 "
                             "(256 on the short side), ")
    assert status.endswith(" ms")
    assert panel.error_label.isHidden()


def test_ten_crop_shows_ten_crops_and_a_settings_change_re_renders(qtbot, panel, photo):
    show_preview(qtbot, panel, config(crop_mode="five_crop"), photo)
    preview = show_preview(qtbot, panel, config(crop_mode="ten_crop"))
    assert len(preview.train.crops) == 10
    assert tile_sizes(panel.train_view) == [QSize(224, 224)] * 10
    assert tile_sizes(panel.val_view) == [QSize(224, 224)] * 10
    assert panel.train_view.tiles[9].caption_label.text() == "10 · center (flipped)"

    show_preview(qtbot, panel, config(crop_mode="five_crop", resize_size=160, crop_size=128))
    assert tile_sizes(panel.train_view) == [QSize(128, 128)] * 5
    assert panel.status_label.text().startswith("5 crops of 128x128")


def test_a_burst_of_settings_changes_yields_one_preview_of_the_last(qtbot, panel, photo):
    show_preview(qtbot, panel, config(), photo)
    previews: list[object] = []
    panel.preview_ready.connect(previews.append)
    sizes = (96, 112, 128, 144, 160)
    with qtbot.waitSignal(panel.preview_ready, timeout=PREVIEW_TIMEOUT_MS):
        for size in sizes:
            panel.set_config(config(resize_size=192, crop_size=size))
            qtbot.wait(5)
    assert panel.wait_for_preview(10_000)
    qtbot.wait(100)
    assert len(previews) == 1
    assert tile_sizes(panel.train_view) == [QSize(160, 160)] * 5


def test_settings_the_preview_does_not_depend_on_keep_it(qtbot, panel, photo):
    preview = show_preview(qtbot, panel, config(), photo)
    with qtbot.assertNotEmitted(panel.preview_ready, wait=200):
        panel.set_config(config(lr=0.5, epochs=3, batch_size=8))
    assert panel.preview() is preview
    assert panel.config().lr == 0.5
    assert panel.status_label.text().startswith("5 crops of 224x224")


def test_the_status_line_says_the_size_each_split_really_cuts_from(qtbot, panel, tmp_path):
    # A 275x198 image at resize 96, crop 80: validation resizes it to 96 on the short side,
    # 275 * 96 / 198 = 133.3, so 133x96; training's random crop cuts the original, since its
    # smallest box (8% of the area at ratio 3/4) would need a copy of 80 / sqrt(0.08 * 0.75)
    # = 327 px on the short side, larger than the image itself.
    path = tmp_path / "wide.png"
    Image.new("RGB", (275, 198), (90, 120, 30)).save(path)
    show_preview(qtbot, panel, config(crop_mode="standard", resize_size=96, crop_size=80),
                 path)
    status = panel.status_label.text()
    assert status.startswith("1 random crop of 80x80 cut from the 275x198 image for training; "
                             "validation: the centre 80x80 of the image resized to 133x96 (96 "
                             "on the short side), "), status
    assert status.endswith(" ms")


def test_standard_mode_shows_one_random_crop_and_one_center_crop(qtbot, panel, photo):
    show_preview(qtbot, panel, config(crop_mode="standard"), photo)
    assert tile_sizes(panel.train_view) == [QSize(224, 224)]
    assert panel.train_view.tiles[0].caption_label.text().startswith("1 · random crop")
    assert [t.caption_label.text() for t in panel.val_view.tiles] == ["1 · center"]


def test_an_unreadable_file_shows_an_error_and_the_window_keeps_working(
    qtbot, panel, photo, tmp_path
):
    show_preview(qtbot, panel, config(), photo)
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8 this is not really a jpeg")

    with qtbot.waitSignal(panel.preview_failed, timeout=PREVIEW_TIMEOUT_MS) as blocker:
        panel.set_image(str(broken))
    assert "broken.jpg" in blocker.args[0]
    assert not panel.error_label.isHidden()
    assert blocker.args[0] in panel.error_label.text()
    assert panel.train_view.tiles == [] and panel.val_view.tiles == []
    assert panel.preview() is None

    ticks: list[int] = []
    QTimer.singleShot(10, lambda: ticks.append(1))
    qtbot.waitUntil(lambda: ticks == [1], timeout=1000)
    show_preview(qtbot, panel, config(), photo)
    assert panel.error_label.isHidden()
    assert len(panel.train_view.tiles) == 5


def test_show_buttons_pick_the_splits_on_screen(qtbot, panel, photo):
    panel.show()
    qtbot.waitExposed(panel)
    show_preview(qtbot, panel, config(), photo)
    qtbot.mouseClick(panel.show_buttons["train"], Qt.MouseButton.LeftButton)
    assert panel.train_view.isVisible() and not panel.val_view.isVisible()
    qtbot.mouseClick(panel.show_buttons["val"], Qt.MouseButton.LeftButton)
    assert not panel.train_view.isVisible() and panel.val_view.isVisible()
    qtbot.mouseClick(panel.show_buttons["both"], Qt.MouseButton.LeftButton)
    assert panel.train_view.isVisible() and panel.val_view.isVisible()


def test_small_digit_crops_are_enlarged_pixel_for_pixel(qtbot, panel, photo):
    preview = show_preview(qtbot, panel, config(model="small_cnn", weights="none",
                                                crop_mode="five_crop", resize_size=32,
                                                crop_size=28), photo)
    tile = panel.val_view.tiles[0]
    assert tile_sizes(panel.val_view) == [QSize(56, 56)] * 5  # 28 x 2
    assert tile.caption_label.text() == "1 · top-left (\u00d72)"
    shown = tile.image_label.pixmap().toImage()
    crop = preview.val.crops[0]  # the 28x28 crop the model receives
    for y, x in ((0, 0), (13, 7), (27, 27)):
        colour = shown.pixelColor(2 * x + 1, 2 * y + 1)
        assert (colour.red(), colour.green(), colour.blue()) == tuple(int(v) for v in crop[y, x])


def test_new_draw_shows_new_random_augmentations_of_the_training_crop(qtbot, panel, photo):
    # The image in a class folder of a dataset, beside another class to mix it with.
    dataset = photo.parent / "data" / "train"
    (dataset / "red").mkdir(parents=True)
    (dataset / "green").mkdir()
    image = dataset / "red" / "photo.jpg"
    photo.rename(image)
    Image.new("RGB", (300, 300), (40, 250, 40)).save(dataset / "green" / "leaf.png")
    settings = config(crop_mode="standard", color_jitter_brightness=0.5, rotation_degrees=30.0,
                      auto_augment="trivial_augment_wide", mixup_alpha=0.2)
    first = show_preview(qtbot, panel, settings, image)
    assert panel.new_draw_button.isEnabled()
    assert first.train.labels[0].endswith(
        "\n+ rotation \u00b130\u00b0\n+ colour jitter\n+ TrivialAugmentWide")
    assert not panel.mixing_label.isHidden()
    assert "mixup (alpha 0.2)" in panel.mixing_label.text()
    assert "green/leaf.png" in panel.mixing_label.text()
    # The crop after mixing with the other class's image, in its own tile.
    assert len(panel.train_view.tiles) == 2
    assert panel.train_view.tiles[1].caption_label.text().startswith("2 · after mixup: ")
    assert panel.train_view.tiles[1].caption_label.text().endswith("green/leaf.png")
    assert panel.status_label.text().startswith("1 random crop of 224x224")
    shown = panel.train_view.tiles[0].image_label.pixmap().toImage()

    with qtbot.waitSignal(panel.preview_ready, timeout=PREVIEW_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(panel.new_draw_button, Qt.MouseButton.LeftButton)
    second = blocker.args[0]
    assert panel.draw_seed() == 1
    assert second.train.boxes != first.train.boxes or not (
        second.train.crops[0] == first.train.crops[0]).all()
    assert panel.train_view.tiles[0].image_label.pixmap().toImage() != shown
    assert (second.val.crops[0] == first.val.crops[0]).all()  # validation is never random

    # Five crops are fixed: nothing to draw, and no mixing to explain.
    show_preview(qtbot, panel, config(crop_mode="five_crop"))
    assert not panel.new_draw_button.isEnabled()
    assert panel.mixing_label.isHidden()
