"""``workbench bench``: the table and the JSON it writes have every field, with sane figures.

Speed itself is not asserted here (the figures of a quick run on a busy machine mean little);
the benchmark reports it.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from workbench.bench.report import BenchRow, format_table, info_row, limit_row, ratio_row
from workbench.bench.suite import parse_groups
from workbench.cli import main

ROW_FIELDS = {"group", "what", "workbench", "baseline", "unit", "ratio", "target_kind", "target",
              "target_text", "met", "details"}


def test_quick_bench_writes_a_row_per_comparison_with_positive_finite_figures(tmp_path, capsys):
    output = tmp_path / "results" / "bench.json"

    code = main(["bench", "--quick", "--only", "loader,training", "--output", str(output)])

    printed = capsys.readouterr().out
    assert code == 0, printed
    document = json.loads(output.read_text())
    assert document["command"] == f"workbench bench --quick --only loader,training " \
                                  f"--output {output}"
    assert document["quick"] is True and document["errors"] == {}
    assert document["machine"]["cpus"] >= 1
    rows = document["rows"]
    assert {row["group"] for row in rows} == {"loader", "training"}
    for row in rows:
        assert set(row) == ROW_FIELDS
        assert math.isfinite(row["workbench"]) and row["workbench"] > 0
        if row["target_kind"] == "ratio_at_least":
            assert math.isfinite(row["baseline"]) and row["baseline"] > 0
            assert math.isfinite(row["ratio"]) and row["ratio"] > 0
            assert row["met"] is (row["ratio"] >= row["target"])
        assert row["what"] in printed
    whats = [row["what"] for row in rows]
    assert "loader first epoch, workers 0" in whats
    assert "loader cached epochs, workers 0" in whats
    assert "end-to-end vs model-only, resnet18" in whats
    assert "end-to-end vs model-only, digits CNN" in whats
    assert "cached-feature head epoch vs recomputing frozen backbone" in whats
    assert document["all_met"] is all(row["met"] is not False for row in rows)
    assert f"written to {output}" in printed


def test_unknown_group_is_named_and_nothing_runs(tmp_path, capsys):
    code = main(["bench", "--only", "loader,gpu-burn", "--output", str(tmp_path)])

    assert code == 2
    assert "gpu-burn" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_groups_run_in_suite_order():
    assert parse_groups("ui, loader") == ["loader", "ui"]
    with pytest.raises(ValueError, match="choose from loader, training, worker, ui"):
        parse_groups(",")


def test_verdicts_follow_the_target_kind_and_the_table_shows_them():
    faster = ratio_row("loader", "first epoch", 30.0, 10.0, "img/s", 3.0)
    slower_in_seconds = ratio_row("training", "head epoch", 0.5, 10.0, "s", 50.0,
                                  higher_is_better=False)
    late = limit_row("ui", "p99 lateness", 60.0, "ms", 50.0)
    figure = info_row("training", "peak memory", 1.5, "GiB")

    assert (faster.ratio, faster.met) == (3.0, True)
    assert (slower_in_seconds.ratio, slower_in_seconds.met) == (20.0, False)
    assert (late.met, late.target_text) == (False, "<= 50 ms")
    assert figure.met is None and figure.target_text == ""
    assert BenchRow.from_dict(json.loads(json.dumps(late.to_dict()))) == late
    lines = format_table([faster, slower_in_seconds, late, figure]).splitlines()
    cells = [re.split(r"\s{2,}", line.strip()) for line in lines]
    assert cells[0] == ["what", "workbench", "baseline", "ratio", "target", "met"]
    assert cells[2] == ["first epoch", "30.0 img/s", "10.0 img/s", "3.00x", ">= 3x", "yes"]
    assert cells[3] == ["head epoch", "0.500 s", "10.0 s", "20.00x", ">= 50x", "NO"]
    assert cells[4] == ["p99 lateness", "60.0 ms", "<= 50 ms", "NO"]
    assert cells[5] == ["peak memory", "1.50 GiB"]


def test_output_folder_gets_the_default_file_name(tmp_path):
    assert main(["bench", "--quick", "--only", "loader", "--output", str(tmp_path)]) == 0
    assert isinstance(json.loads((Path(tmp_path) / "bench.json").read_text())["rows"], list)


def test_precision_and_layout_rows_compare_each_variant_with_float32():
    from workbench.bench.training_benchmark import QUICK_WORKLOADS, precision_layout_rows

    rows = precision_layout_rows(QUICK_WORKLOADS[1], "cpu", steps=2)

    assert [row.details["channels_last"] for row in rows] == [False, True, True]
    for row in rows:
        assert row.what.startswith("digits CNN model-only, ") and row.what.endswith("vs float32")
        assert row.target is None and row.unit == "img/s"
        assert row.workbench > 0 and row.baseline > 0
        assert row.ratio == pytest.approx(row.workbench / row.baseline)


def test_mobilenet_and_efficientnet_train_on_resnet18s_workload_beside_it(monkeypatch):
    from dataclasses import replace

    from workbench.bench import training_benchmark

    measured = []

    def fake_rows(work, root, device, images_on_device=True):
        measured.append((work, images_on_device))
        return [ratio_row("training", f"end-to-end vs model-only, {work.name}", 9.0, 10.0,
                          "img/s", training_benchmark.TARGET_END_TO_END)]

    monkeypatch.setattr(training_benchmark, "end_to_end_rows", fake_rows)
    monkeypatch.setattr(training_benchmark, "feature_cache_row",
                        lambda work, root, device: info_row("training", work.name, 1.0, "s"))
    rows = training_benchmark.run(device="cpu")

    resnet = measured[0][0]
    assert resnet.model == "resnet18"
    for model in ("mobilenet_v3_small", "efficientnet_b0"):
        work = next(work for work, _ in measured if work.model == model)
        assert work == replace(resnet, name=model, model=model)  # the same images and sizes
        row = next(row for row in rows if row.what == f"end-to-end vs model-only, {model}")
        assert row.target == 0.90 and row.met is True
    assert measured[-1] == (training_benchmark.CPU_WORKLOADS[-1], False)
    assert measured[-1][0].model == "small_cnn"  # loader processes: the digits CNN, as before
