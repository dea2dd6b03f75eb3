"""``python -m workbench.bench.model_table``: a row per catalogue model within the budget.

The CUDA path runs in ``.ci/gpu-check``; here the CPU path runs with tiny settings.
"""

from __future__ import annotations

import json
import math

import pytest

from workbench.bench.model_table import main


def test_the_cpu_path_measures_each_model_and_writes_json_and_a_table(tmp_path, capsys):
    output = tmp_path / "out" / "model-table.json"

    code = main(["--device", "cpu", "--crop", "32", "--steps", "2", "--batch", "2",
                 "--models", "small_cnn,mobilenet_v3_small", "-o", str(output)])

    assert code == 0
    document = json.loads(output.read_text())
    assert (document["device"], document["crop"], document["batch"], document["steps"]) == \
        ("cpu", 32, 2, 2)
    rows = document["rows"]
    assert [row["model"] for row in rows] == ["small_cnn", "mobilenet_v3_small"]
    assert [row["family"] for row in rows] == ["small_cnn", "mobilenet"]
    for row in rows:
        assert math.isfinite(row["images_per_second"]) and row["images_per_second"] > 0
        assert row["precision"] == "float32"  # no mixed precision on a CPU
        assert row["peak_memory_gib"] is None  # a CPU has no such figure
        assert row["latency_ms"] > 0
        assert row["note"] == ""
    table = output.with_suffix(".md").read_text()
    printed = capsys.readouterr().out
    for row in rows:
        line = next(line for line in table.splitlines() if f"| {row['model']} |" in line)
        assert f"| {row['images_per_second']:,.1f} |" in line
        assert line in printed


def test_models_past_the_budget_are_skipped_with_a_note(tmp_path):
    output = tmp_path / "model-table.json"

    code = main(["--device", "cpu", "--crop", "32", "--steps", "1", "--batch", "2",
                 "--budget-s", "0.001", "--models", "small_cnn,resnet18,swin_t",
                 "-o", str(output)])

    assert code == 0  # running out of time is reported, not a failure
    rows = json.loads(output.read_text())["rows"]
    assert [row["model"] for row in rows] == ["small_cnn", "resnet18", "swin_t"]
    assert rows[0]["images_per_second"] > 0 and rows[0]["note"] == ""
    for row in rows[1:]:
        assert row["images_per_second"] is None
        assert row["note"].startswith("skipped: ") and "0.001 s budget" in row["note"]
    assert "| swin_t |" in output.with_suffix(".md").read_text()


def test_an_unknown_model_is_named(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--device", "cpu", "--models", "small_cnn,alexnet"])
    assert stopped.value.code == 2
    assert "alexnet" in capsys.readouterr().err
