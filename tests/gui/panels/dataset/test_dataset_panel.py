"""DatasetPanel on real generated folders: layouts, counts, imbalance, skipped files, errors."""

from __future__ import annotations

import threading
from pathlib import Path

from PIL import Image
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.gui.panels.dataset.dataset_panel import DatasetPanel

SCAN_TIMEOUT_MS = 20_000


def scan_folder(qtbot, panel: DatasetPanel, folder: Path):
    with qtbot.waitSignal(panel.dataset_scanned, timeout=SCAN_TIMEOUT_MS) as blocker:
        panel.set_folder(str(folder))
    return blocker.args[0]


def issue_texts(panel: DatasetPanel) -> list[str]:
    return [panel.issues_list.item(i).text() for i in range(panel.issues_list.count())]


def test_flat_folder_shows_auto_split_and_the_scanned_counts(qtbot, panel, tmp_path):
    root = write_shape_dataset(
        tmp_path / "shapes", classes=("circle", "square", "cross"), per_class=[12, 10, 11]
    )
    scan = scan_folder(qtbot, panel, root)

    expected = scan_dataset(root)
    assert scan.class_names == expected.class_names == ["circle", "cross", "square"]
    assert panel.scan() is scan
    assert panel.layout_label.text() == (
        "Layout: one folder per class, auto split 20% for validation"
    )
    assert panel.summary_label.text() == expected.describe()
    assert panel.chart.class_names() == expected.class_names
    assert panel.chart.bar_values() == {
        "train": expected.train_counts(), "val": expected.val_counts()
    }
    assert panel.imbalance_box.isHidden()
    assert panel.error_label.isHidden()
    assert panel.thumbnails.thumbnail_model.paths() == [p for p, _ in expected.train]
    assert panel.folder() == str(root)
    assert panel.recent_folders() == [str(root)]


def test_train_val_folder_shows_both_splits(qtbot, panel, tmp_path):
    root = write_shape_dataset(
        tmp_path / "tv", per_class=[8, 9], layout="train_val", val_per_class=3,
        classes=("ring", "bar"),
    )
    scan = scan_folder(qtbot, panel, root)
    assert scan.layout == "train_val"
    assert panel.layout_label.text() == "Layout: train/ and val/ folders"
    assert panel.chart.class_names() == ["bar", "ring"]
    assert panel.chart.bar_values() == {"train": [9, 8], "val": [3, 3]}


def test_imbalanced_folder_offers_both_remedies(qtbot, panel, tmp_path):
    root = write_shape_dataset(
        tmp_path / "imbalanced", classes=("circle", "square", "cross"), per_class=[40, 5, 12]
    )
    panel.show()
    qtbot.waitExposed(panel)
    scan = scan_folder(qtbot, panel, root)
    assert scan.imbalance_ratio >= 3
    assert panel.imbalance_box.isVisible()
    assert "circle" in panel.imbalance_box.message_label.text()

    with qtbot.waitSignal(panel.imbalance_option_chosen, timeout=1000) as blocker:
        qtbot.mouseClick(panel.imbalance_box.weighted_sampler_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["weighted_sampler"]
    with qtbot.waitSignal(panel.imbalance_option_chosen, timeout=1000) as blocker:
        qtbot.mouseClick(panel.imbalance_box.weighted_loss_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["weighted_loss"]


def test_skipped_files_are_listed_with_their_reason(qtbot, panel, tmp_path, monkeypatch):
    root = write_shape_dataset(tmp_path / "messy", per_class=6)
    (root / "circle" / "notes.txt").write_text("not a picture")
    (root / "square" / "broken.jpg").write_bytes(b"")
    (root / "cross" / "garbage.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    opened_on_the_ui_thread: list[bool] = []
    real_open = Image.open

    def recording_open(*args, **kwargs):
        opened_on_the_ui_thread.append(threading.current_thread() is threading.main_thread())
        return real_open(*args, **kwargs)

    monkeypatch.setattr(Image, "open", recording_open)
    scan = scan_folder(qtbot, panel, root)

    texts = issue_texts(panel)
    assert "circle/notes.txt: not an image file (extension .txt)" in texts
    assert "square/broken.jpg: empty file (0 bytes)" in texts
    # The header check opened every image, in the pool: the window stayed responsive.
    assert "cross/garbage.png: not an image Pillow can identify" in texts
    assert panel.issues_group.title() == "Files left out and other problems (3)"
    assert len(scan.train) + len(scan.val) == 24
    assert len(opened_on_the_ui_thread) >= 25 and not any(opened_on_the_ui_thread)


def test_a_missing_folder_shows_the_error_in_the_panel(qtbot, panel, tmp_path):
    root = write_shape_dataset(tmp_path / "good", per_class=4)
    scan_folder(qtbot, panel, root)
    missing = tmp_path / "no_such_folder"

    with qtbot.assertNotEmitted(panel.dataset_scanned), qtbot.waitSignal(
        panel.scan_failed, timeout=SCAN_TIMEOUT_MS
    ) as blocker:
        panel.set_folder(str(missing))
    assert "does not exist" in blocker.args[0]
    assert not panel.error_label.isHidden()
    assert panel.error_label.text() == blocker.args[0]
    assert str(missing) in panel.error_label.text()
    assert panel.scan() is None
    assert panel.chart.bar_values() == {"train": [], "val": []}
    assert panel.thumbnails.thumbnail_model.rowCount() == 0


def test_a_newer_folder_supersedes_a_scan_in_progress(qtbot, panel, tmp_path):
    first = write_shape_dataset(tmp_path / "first", per_class=5)
    second = write_shape_dataset(tmp_path / "second", per_class=3, classes=("ring", "bar"))
    scanned: list[object] = []
    panel.dataset_scanned.connect(scanned.append)
    panel.set_folder(str(first))
    with qtbot.waitSignal(panel.dataset_scanned, timeout=SCAN_TIMEOUT_MS):
        panel.set_folder(str(second))
    assert panel.wait_for_scan(10_000)
    qtbot.wait(50)
    assert [scan.root for scan in scanned] == [str(second)]
    assert panel.recent_folders() == [str(second), str(first)]


def test_recent_folder_combo_rescans_the_chosen_folder(qtbot, panel, tmp_path):
    first = write_shape_dataset(tmp_path / "a", per_class=3)
    second = write_shape_dataset(tmp_path / "b", per_class=3, classes=("ring", "bar"))
    panel.set_recent_folders([str(first), str(second), str(first)])
    assert panel.recent_folders() == [str(first), str(second)]
    assert panel.recent_combo.count() == 2

    with qtbot.waitSignal(panel.dataset_scanned, timeout=SCAN_TIMEOUT_MS) as blocker:
        panel.recent_combo.activated.emit(1)
    assert blocker.args[0].root == str(second)


def make_drop_mime(path: Path) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    return mime


def test_dropping_a_folder_scans_it_and_a_file_is_refused(qtbot, panel, tmp_path):
    root = write_shape_dataset(tmp_path / "dropped", per_class=4)
    a_file = tmp_path / "readme.txt"
    a_file.write_text("x")
    position = QPoint(20, 20)
    buttons, modifiers = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier

    file_mime = make_drop_mime(a_file)
    enter = QDragEnterEvent(position, Qt.DropAction.CopyAction, file_mime, buttons, modifiers)
    QApplication.sendEvent(panel, enter)
    assert not enter.isAccepted()

    folder_mime = make_drop_mime(root)
    enter = QDragEnterEvent(position, Qt.DropAction.CopyAction, folder_mime, buttons, modifiers)
    QApplication.sendEvent(panel, enter)
    assert enter.isAccepted()
    drop = QDropEvent(position, Qt.DropAction.CopyAction, folder_mime, buttons, modifiers)
    with qtbot.waitSignals(
        [panel.folder_changed, panel.dataset_scanned], order="strict", timeout=SCAN_TIMEOUT_MS
    ):
        QApplication.sendEvent(panel, drop)
    assert drop.isAccepted()
    assert panel.folder() == str(root)
    assert panel.scan().root == str(root)


def test_the_thumbnails_switch_to_validation_images_and_filter_by_class(qtbot, panel, tmp_path):
    root = write_shape_dataset(tmp_path / "tv", classes=("circle", "cross", "square"),
                               per_class=[6, 4, 5], size=(32, 32), layout="train_val",
                               val_per_class=2)
    scan = scan_folder(qtbot, panel, root)
    shown = panel.thumbnails.thumbnail_model.paths
    combo_texts = [panel.class_filter_combo.itemText(i)
                   for i in range(panel.class_filter_combo.count())]
    assert combo_texts == ["All classes (15)", "circle (6)", "cross (4)", "square (5)"]

    panel.class_filter_combo.setCurrentIndex(2)  # cross
    assert shown() == [p for p, label in scan.train if label == 1] and len(shown()) == 4
    assert all("/train/cross/" in p for p in shown())

    panel.split_combo.setCurrentIndex(1)  # validation: the class stays chosen
    assert panel.class_filter_combo.currentText() == "cross (2)"
    assert shown() == [p for p, label in scan.val if label == 1] and len(shown()) == 2
    assert all("/val/cross/" in p for p in shown())

    panel.class_filter_combo.setCurrentIndex(0)
    assert shown() == [p for p, _ in scan.val] and len(shown()) == 6

    scan_folder(qtbot, panel, root)  # a new scan shows every class of the split chosen
    assert panel.class_filter_combo.currentIndex() == 0 and len(shown()) == 6
