"""``workbench scan --health``: findings by kind with counts and files, health.json written to
the cache (never the folder), and an exclusion list that ``train --exclude-file`` reads."""

from __future__ import annotations

import json
from pathlib import Path

from tests.core.data.health.conftest import folder_snapshot, write_problem_folder
from workbench.cli import main
from workbench.cli.config_flags import config_from_args


def test_scan_health_prints_findings_and_writes_the_report_outside_the_folder(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "photos"
    write_problem_folder(root)
    before = folder_snapshot(root)

    assert main(["scan", "--health", str(root), "--leave-out", "unreadable,leakage"]) == 0
    out = capsys.readouterr().out
    assert "Unreadable images [unreadable]: 3" in out
    assert "train/cat/truncated.jpg: cannot decode image (image file is truncated" in out
    assert "train/cat/short.bmp: cannot decode image (image file is truncated" in out
    assert "Train/val leakage [leakage]: 1" in out
    assert "Conflicting labels [conflicting_label]: 1" in out
    assert "Near duplicates [near_duplicate]: 2" in out
    assert "train/cat/blank.png: contrast" in out
    assert "Class balance: mildly imbalanced" in out

    report_line = next(line for line in out.splitlines() if line.startswith("health report: "))
    report = Path(report_line.removeprefix("health report: "))
    assert report.is_relative_to(tmp_path / "cache")
    kinds = {f["kind"]: f["count"] for f in json.loads(report.read_text())["findings"]}
    assert kinds["unreadable"] == 3 and kinds["leakage"] == 1
    exclude = Path(out.split("--exclude-file ")[-1].strip())
    listed = exclude.read_text().splitlines()
    assert {"train/cat/truncated.jpg", "train/cat/short.bmp", "train/cat/corrupt.png",
            "train/cat/cat_2.png"} <= set(listed)
    assert folder_snapshot(root) == before

    # The same list drives a run from the command line.
    from workbench.cli import build_parser

    args = build_parser().parse_args(["train", "--data-root", str(root),
                                      "--exclude-file", str(exclude)])
    assert config_from_args(args).exclude_file == str(exclude)


def test_scan_health_of_a_missing_folder_fails_with_its_name(tmp_path, capsys):
    assert main(["scan", "--health", str(tmp_path / "nowhere"),
                 "--cache-dir", str(tmp_path / "cache")]) == 2
    assert f"{tmp_path / 'nowhere'}: folder does not exist" in capsys.readouterr().err


def test_an_unknown_leave_out_kind_is_named(tmp_path, capsys):
    assert main(["scan", "--health", str(tmp_path), "--leave-out", "smudges"]) == 2
    assert "--leave-out: unknown kind(s) smudges" in capsys.readouterr().err


def test_a_folder_of_small_images_gets_one_line_not_one_finding_an_image(tmp_path, capsys):
    from workbench.core.data.health.generated_folders import write_distinct_images

    root = tmp_path / "small"
    write_distinct_images(root / "a", 12, seed=1, size=20)
    write_distinct_images(root / "b", 12, seed=2, size=20)
    assert main(["scan", "--health", str(root), "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "Tiny images [tiny]: all 24 images are 20x20: they are upscaled to the crop" in out
    assert "a side below 32" not in out  # no image named for what all of them are
    report = Path(next(line for line in out.splitlines()
                       if line.startswith("health report: ")).removeprefix("health report: "))
    tiny = next(f for f in json.loads(report.read_text())["findings"] if f["kind"] == "tiny")
    assert tiny["items"] == [] and tiny["count"] == 0
