"""One folder, one set of numbers: the Dataset tab, `workbench scan`, the run log of
`workbench train`, the run folder and the report show the same counts, skipped files,
leave-outs and imbalance for a folder with undecodable files, copies and a leave-out; and the
tab's counts follow the exclusion list when it changes."""

from __future__ import annotations

import html
import json
import random
import shutil
from pathlib import Path

from workbench.cli import main
from workbench.core.data.health.exclusion_list import write_exclusion_file
from workbench.core.data.health.generated_folders import distinct_image
from workbench.core.runs.run_report import run_report_html

SCAN_TIMEOUT_MS = 30_000


def write_folder(root: Path) -> None:
    """a: 8 distinct 16 px images and a file that is not a PNG; b: 8 distinct images, a
    byte-identical copy of a/a0.png and a broken file: 17 usable images, 2 skipped."""
    rng = random.Random(9)
    for label in ("a", "b"):
        (root / label).mkdir(parents=True)
        for index in range(8):
            distinct_image(rng).resize((16, 16)).save(root / label / f"{label}{index}.png")
        (root / label / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 300)
    shutil.copyfile(root / "a" / "a0.png", root / "b" / "copy of a0.png")


def test_every_view_shows_the_scans_counts(qtbot, window, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(cache))
    root = tmp_path / "drawings"
    write_folder(root)
    exclude = write_exclusion_file(tmp_path / "leave-out.txt", str(root),
                                   [str(root / "b" / "b7.png")])
    window.build_plot_panels()
    dataset = window.dataset_panel
    with qtbot.waitSignal(dataset.dataset_scanned, timeout=SCAN_TIMEOUT_MS) as first:
        window.open_folder(str(root))
    before = first.args[0]
    assert len(before.train) + len(before.val) == 17  # 8 + 9 usable images
    assert len(before.skipped) == 2 and "2 files skipped" in dataset.summary_label.text()

    # Leaving a file out (what 'Leave out of training' writes into the settings) rescans.
    with qtbot.waitSignal(dataset.dataset_scanned, timeout=SCAN_TIMEOUT_MS) as second:
        window.config_form.edit_field("exclude_file", str(exclude))
    tab = second.args[0]
    assert len(tab.train) + len(tab.val) == 16
    assert tab.left_out == [str(root / "b" / "b7.png")]
    tab_line = dataset.summary_label.text()
    assert tab_line.endswith("2 files skipped, 1 left out by the exclusion list"), tab_line
    train_counts, val_counts = tab.train_counts(), tab.val_counts()
    assert sum(train_counts) + sum(val_counts) == 16 and min(val_counts) >= 1
    ratio = max(train_counts) / min(train_counts)
    assert f"imbalance {ratio:.1f}x" in tab_line
    assert f"{len(tab.train)} train / {len(tab.val)} val images" in tab_line

    # The command line's scan with the run's settings says the same line.
    capsys.readouterr()
    assert main(["scan", str(root), "--exclude-file", str(exclude)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == tab_line

    # The run: its log, its folder and its report.
    code = main(["train", "--data-root", str(root), "--model", "small_cnn", "--epochs", "1",
                 "--device", "cpu", "--workers", "0", "--exclude-file", str(exclude),
                 "--output-dir", str(tmp_path / "runs")])
    log = capsys.readouterr().err
    assert code == 0, log
    assert f"data: {tab_line}" in log.splitlines()
    assert "could not be decoded" not in log  # the scan skipped both, training agrees
    run_dir = next((tmp_path / "runs").iterdir())
    recorded = json.loads((run_dir / "config.json").read_text())["dataset"]
    assert (recorded["train_counts"], recorded["val_counts"]) == (train_counts, val_counts)
    assert recorded["left_out"] == [str(root / "b" / "b7.png")]
    assert len(recorded["skipped"]) == 2
    assert recorded["description"] == tab_line
    assert recorded["split_fingerprint"] == tab.split_fingerprint
    assert html.escape(tab_line, quote=False) in run_report_html(run_dir)
