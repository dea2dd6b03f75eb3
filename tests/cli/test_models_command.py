"""``workbench models``: the table of every model --model takes, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from workbench.core.runs.config import MODELS

CHECKOUT = Path(__file__).resolve().parents[2]


def run_workbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m workbench ARGS`` in a child process importing this checkout."""
    env = dict(os.environ, PYTHONPATH=str(CHECKOUT))
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def table_rows(stdout: str) -> list[list[str]]:
    """The table's rows split on runs of two or more spaces, heading first."""
    lines = [line for line in stdout.splitlines() if line and not line.startswith("Figures")]
    return [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in lines]


def test_models_lists_every_model_with_its_figures_sorted_by_accuracy(tmp_path: Path):
    result = run_workbench("models", "--sort", "acc1", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    rows = table_rows(result.stdout)
    assert rows[0] == ["model", "acc@1 %", "params M", "GFLOPS", "file MiB", "crop", "recipe"]
    by_name = {row[0]: row for row in rows[1:]}
    assert sorted(by_name) == sorted(MODELS)
    assert by_name["resnet18"] == ["resnet18", "69.8", "11.7", "1.81", "44.7", "224",
                                   "sgd lr 0.001, step"]
    assert by_name["efficientnet_v2_s"][5] == "384"
    assert by_name["vit_b_16"][6] == "adamw lr 0.0001, warmup_cosine"
    assert by_name["small_cnn"][1:6] == ["-", "-", "-", "-", "28"]
    accuracies = [float(row[1]) for row in rows[1:] if row[1] != "-"]
    assert accuracies == sorted(accuracies, reverse=True) and len(accuracies) == 14
    assert rows[-1][0] == "small_cnn"  # no ImageNet figure: last


def test_models_sorts_by_any_column_and_refuses_an_unknown_one(tmp_path: Path):
    from tests.test_cli import run_cli

    by_cost = table_rows(run_cli("models", "--sort", "gflops", cwd=tmp_path).stdout)
    costs = [float(row[3]) for row in by_cost[1:] if row[3] != "-"]
    assert costs == sorted(costs) and by_cost[1][0] == "mobilenet_v3_small"

    refused = run_cli("models", "--sort", "speed", cwd=tmp_path)
    assert refused.returncode == 2
    assert "invalid choice: 'speed'" in refused.stderr and "gflops" in refused.stderr
