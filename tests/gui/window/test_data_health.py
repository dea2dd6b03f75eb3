"""The data health check in the window: run from the dataset panel with progress, findings
with thumbnails (copies side by side), 'Leave out of training' into the settings and back,
changing nothing on disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt

from tests.core.data.health.conftest import folder_snapshot, write_problem_folder
from workbench.core.data.health.model_features import feature_findings
from workbench.gui.panels.dataset.health_findings_panel import TILE_SIZE, HealthFindingsPanel

CHECK_TIMEOUT_MS = 30_000


def finding_rows(panel: HealthFindingsPanel) -> dict[str, tuple[str, str]]:
    tree = panel.findings_tree
    return {tree.topLevelItem(i).text(0): (tree.topLevelItem(i).text(1),
                                           tree.topLevelItem(i).text(2))
            for i in range(tree.topLevelItemCount())}


def select_finding(panel: HealthFindingsPanel, title: str) -> None:
    tree = panel.findings_tree
    row = next(i for i in range(tree.topLevelItemCount()) if tree.topLevelItem(i).text(0) == title)
    tree.setCurrentItem(tree.topLevelItem(row))


def test_check_leave_out_and_include_again_from_the_window(qtbot, window, tmp_path,
                                                           monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(cache))
    root = tmp_path / "photos"
    write_problem_folder(root)
    before = folder_snapshot(root)
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=CHECK_TIMEOUT_MS):
        window.open_folder(str(root))
    dataset = window.dataset_panel
    health = dataset.health_panel
    dataset.problem_tabs.setCurrentWidget(health)
    progress: list[int] = []
    health._checker.progressed.connect(lambda done, total: progress.append(done))

    with qtbot.waitSignal(health.report_ready, timeout=CHECK_TIMEOUT_MS):
        qtbot.mouseClick(health.check_button, Qt.MouseButton.LeftButton)
    rows = finding_rows(health)
    assert rows["Unreadable images"][0] == "3"
    assert rows["Train/val leakage"] == ("1", "The same image is in train and in val: "
                                              "validation accuracy is inflated.")
    assert rows["Conflicting labels"][0] == "1"
    assert rows["Near duplicates"][0] == "2"
    assert "mildly imbalanced" in rows["Class balance"][1]
    assert progress and progress[-1] == 38
    assert health.progress.isHidden() and health.check_button.isEnabled()
    assert "38 images checked" in health.status_label.text()

    select_finding(health, "Train/val leakage")
    assert health.tiles_list.count() == 1
    assert "1 in train, 1 in val" in health.tiles_list.item(0).text()
    qtbot.waitUntil(lambda: not health.tiles_list.item(0).icon().isNull(), timeout=10_000)
    pair = health.tiles_list.item(0).icon().availableSizes()[0]
    assert pair.width() >= 2 * TILE_SIZE  # the two copies side by side

    with qtbot.waitSignal(dataset.exclude_file_chosen) as chosen:
        qtbot.mouseClick(health.leave_out_button, Qt.MouseButton.LeftButton)
    exclude = Path(chosen.args[0])
    assert exclude.is_relative_to(cache)
    assert "train/cat/cat_2.png" in exclude.read_text().splitlines()
    assert window.config_form.config().exclude_file == str(exclude)
    assert window.config_form._bindings["exclude_file"].edit.text() == str(exclude)
    assert "1 file(s) left out of training (train/val leakage)" in health.excluded_label.text()

    select_finding(health, "Unreadable images")
    qtbot.mouseClick(health.leave_out_button, Qt.MouseButton.LeftButton)
    listed = exclude.read_text().splitlines()
    assert {"train/cat/cat_2.png", "train/cat/truncated.jpg",
            "train/cat/corrupt.png"} <= set(listed)

    with qtbot.waitSignal(dataset.exclude_file_chosen) as cleared:
        qtbot.mouseClick(health.include_button, Qt.MouseButton.LeftButton)
    assert cleared.args == [""]
    assert window.config_form.config().exclude_file == ""
    assert folder_snapshot(root) == before




def test_after_a_run_the_models_findings_join_the_folders(qtbot, window, shapes_dataset,
                                                          tiny_config, tmp_path, monkeypatch):
    # A renamed copy of a validation image: after training, the model's features name the
    # pair in the Data health tab, and leaving it out lists the copy for the next run.
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    original = sorted((shapes_dataset / "val" / "circle").glob("*.png"))[0]
    copy = original.with_name("copy_of_first.png")
    copy.write_bytes(original.read_bytes())
    with qtbot.waitSignal(window.dataset_panel.dataset_scanned, timeout=CHECK_TIMEOUT_MS):
        window.open_folder(str(shapes_dataset))
    health = window.dataset_panel.health_panel
    assert health.model_label.isHidden()
    window.apply_config(tiny_config)
    with qtbot.waitSignal(window.controller.run_ended, timeout=120_000) as ended:
        assert window.start_training()
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=30_000)
    assert ended.args[0].status == "completed", ended.args[0].error

    # Two epochs from random weights: too weak for feature findings; one line says why.
    rows = finding_rows(health)
    assert not any("(model)" in title for title in rows), rows
    assert not health.model_label.isHidden()
    assert health.model_label.text().startswith("Model findings withheld: the best model is "
                                                "right on ")
    assert "validation images of 4 classes (chance 25%)" in health.model_label.toolTip() or \
        "validation images of 4 classes (chance 25%)" in health.model_label.text()

    # A model strong enough: its findings join the folder's, and leave out like them.
    val = sorted(str(p) for p in (shapes_dataset / "val").rglob("*.png"))
    names = sorted(p.name for p in (shapes_dataset / "val").iterdir())
    labels = [names.index(Path(p).parent.name) for p in val]
    features = np.random.default_rng(0).normal(0, 1, (len(val), 8))
    features[val.index(str(copy))] = features[val.index(str(original))]
    strong = feature_findings(val, labels, names, features, root=str(shapes_dataset),
                              accuracy=0.95)
    assert health.show_model_findings(strong)
    rows = finding_rows(health)
    assert "Near duplicates (model)" in rows, rows
    assert "validation images found 1 near-duplicate group(s)" in health.model_label.text()
    select_finding(health, "Near duplicates (model)")
    shown = [health.tiles_list.item(i).toolTip() for i in range(health.tiles_list.count())]
    assert any("circle/copy_of_first.png" in tip and original.name in tip for tip in shown)
    with qtbot.waitSignal(window.dataset_panel.exclude_file_chosen) as chosen:
        qtbot.mouseClick(health.leave_out_button, Qt.MouseButton.LeftButton)
    listed = Path(chosen.args[0]).read_text().splitlines()
    left_out = {line for line in listed if not line.startswith("#")}
    assert f"val/circle/{original.name}" in left_out or "val/circle/copy_of_first.png" in left_out
    assert copy.is_file() and original.is_file()  # nothing on disk changes
