"""The Dataset tab on a folder as real disks fill up: a link back up the tree and a name that
is not UTF-8. The counts are the scan's without the loop, and the list of files left out
names the link with its reason and the name escaped on one line."""

from __future__ import annotations

import os
import random

from PIL import Image

SCAN_TIMEOUT_MS = 20_000


def noise_png(path: bytes, seed: int) -> None:
    rng = random.Random(seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        Image.frombytes("RGB", (16, 16), bytes(rng.randrange(256) for _ in range(768))).save(
            handle, format="PNG")


def test_a_loop_link_and_a_name_that_is_not_utf8_in_the_dataset_tab(qtbot, panel, tmp_path):
    root = os.fsencode(tmp_path / "data")
    for index in range(6):
        noise_png(os.path.join(root, b"class_a", b"img%d.png" % index), index)
        noise_png(os.path.join(root, b"class_b", b"img%d.png" % index), 10 + index)
    noise_png(os.path.join(root, b"class_a", b"bad\xfename.png"), 99)  # 7 in class_a
    with open(os.path.join(root, b"class_b", b"notes\xff\n.txt"), "wb") as handle:
        handle.write(b"not an image")
    os.symlink(b"..", os.path.join(root, b"class_a", b"loop"))

    with qtbot.waitSignal(panel.dataset_scanned, timeout=SCAN_TIMEOUT_MS) as blocker:
        panel.set_folder(os.fsdecode(root))
    assert blocker.args[0].class_names == ["class_a", "class_b"]

    # class_a: 7 images, round(1.4) = 1 validates; class_b: 6, round(1.2) = 1.
    assert panel.chart.bar_values() == {"train": [6, 5], "val": [1, 1]}
    assert panel.summary_label.text().startswith("2 classes, 11 train / 2 val images")
    issues = [panel.issues_list.item(i).text() for i in range(panel.issues_list.count())]
    assert sorted(issues) == [
        "class_a/loop: link to data, a folder that contains the folder it is in (a loop): "
        "not followed",
        "class_b/notes\\xff\\n.txt: not an image file (extension .txt)",
    ]
    thumbnails = [os.fsencode(p) for p in panel.thumbnails.thumbnail_model.paths()]
    assert len(thumbnails) == 11 and not any(b"/loop/" in p for p in thumbnails)


def test_a_class_whose_name_is_not_utf8_is_shown_escaped(qtbot, panel, tmp_path):
    # train/ and val/ folders: the class is named in the counts, the filter and the chart.
    root = os.fsencode(tmp_path / "data")
    for split, count in ((b"train", 4), (b"val", 1)):
        for offset, name in enumerate((b"class_\xff", b"plain")):
            for index in range(count):
                noise_png(os.path.join(root, split, name, b"%d.png" % index),
                          100 * offset + 10 * index + len(split))

    with qtbot.waitSignal(panel.dataset_scanned, timeout=SCAN_TIMEOUT_MS):
        panel.set_folder(os.fsdecode(root))

    entries = [panel.class_filter_combo.itemText(i)
               for i in range(panel.class_filter_combo.count())]
    assert entries == ["All classes (8)", "class_\\xff (4)", "plain (4)"]
    ticks = panel.chart.getPlotItem().getAxis("left")._tickLevels[0]
    assert [text for _, text in ticks] == ["class_\\xff", "plain"]
