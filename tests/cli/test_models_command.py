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
    lines = [line for line in stdout.splitlines()
             if line and not line.startswith(("Figures", "Measured"))]
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


MEASURED_HEADING = ["train img/s", "peak MiB", "latency ms", "fits (largest batch)"]
TINY = ("--models", "small_cnn,resnet18", "--batch-size", "2", "--crop-size", "32",
        "--steps", "1", "--device", "cpu")


def test_measure_adds_measured_columns_sorted_by_speed_and_remembers_them(tmp_path: Path):
    from tests.test_cli import run_cli

    first = run_cli("models", "--measure", *TINY, "--sort", "train_speed", cwd=tmp_path)

    assert first.returncode == 0, first.stderr
    rows = table_rows(first.stdout)
    assert rows[0][-4:] == MEASURED_HEADING
    assert sorted(row[0] for row in rows[1:]) == ["resnet18", "small_cnn"]
    speeds = [float(row[7].replace(",", "")) for row in rows[1:]]
    assert speeds == sorted(speeds, reverse=True) and min(speeds) > 0
    for row in rows[1:]:
        assert row[8] == "n/a" and row[10] == "n/a"  # GPU-only figures, said plainly
        assert float(row[9]) > 0  # latency ms
    assert "GPU-only figures (n/a on the CPU" in first.stdout
    assert "Measured at batch 2, crop 32 px" in first.stdout
    assert "[1/2] resnet18 (cpu, batch 2, crop 32, float32, last_layer): measuring" \
        in first.stderr
    assert "[2/2] small_cnn (cpu, batch 2, crop 32, float32, full): measuring" in first.stderr
    assert (tmp_path / "cache" / "measurements" / "model_measurements.json").is_file()

    by_latency = run_cli("models", "--measure", *TINY, "--sort", "latency", cwd=tmp_path)

    assert by_latency.returncode == 0, by_latency.stderr
    assert by_latency.stderr.count("remembered from") == 2
    assert "measuring" not in by_latency.stderr
    again = table_rows(by_latency.stdout)
    latencies = [float(row[9]) for row in again[1:]]
    assert latencies == sorted(latencies)
    assert {row[0]: row[7] for row in again[1:]} == {row[0]: row[7] for row in rows[1:]}

    remeasured = run_cli("models", "--measure", *TINY, "--remeasure", "--models", "small_cnn",
                         cwd=tmp_path)
    assert remeasured.stderr.count("measuring") == 1 and "remembered" not in remeasured.stderr
    assert [row[0] for row in table_rows(remeasured.stdout)[1:]] == ["small_cnn"]


def test_measure_refuses_bad_input_with_the_option_named(tmp_path: Path):
    from tests.test_cli import run_cli

    unmeasured = run_cli("models", "--sort", "latency", cwd=tmp_path)
    assert unmeasured.returncode == 2
    assert "--sort latency is a measured column; add --measure" in unmeasured.stderr

    unknown = run_cli("models", "--measure", "--models", "resnet18,resnet9", cwd=tmp_path)
    assert unknown.returncode == 2 and "--models: unknown model 'resnet9'" in unknown.stderr

    batch = run_cli("models", "--measure", "--models", "small_cnn", "--batch-size", "-3",
                    "--device", "cpu", cwd=tmp_path)
    assert batch.returncode == 2 and "batch_size: must be at least 1" in batch.stderr


def gpu_measurement(**changes):
    """A measurement as a GPU gives one: every figure a different value."""
    from workbench.core.training.tuning.model_measurement import (
        MeasurementSettings,
        ModelMeasurement,
    )

    values = dict(
        settings=MeasurementSettings("resnet18", 64, 224, True, "full", "cuda:0"),
        device_name="NVIDIA GeForce GTX 1650", precision="float16 (mixed)",
        train_images_per_second=1234.5, peak_memory_bytes=1536 * 2**20, latency_ms=3.25,
        fits=True, largest_batch=96, timed_steps=10, host="laptop", torch_version="2.6.0",
        torchvision_version="0.21.0", measured_at="2026-12-05T00:00:00Z")
    return ModelMeasurement(**{**values, **changes})


def test_gpu_rows_show_memory_fit_and_the_largest_batch():
    from workbench.cli.catalogue_commands import measured_cells, measured_value

    assert measured_cells(gpu_measurement()) == ["1,234.5", "1,536", "3.2", "yes (96)"]
    assert measured_cells(gpu_measurement(largest_batch=1024, largest_is_cap=True))[3] == \
        "yes (>=1024)"
    assert measured_cells(gpu_measurement(train_images_per_second=None, fits=False,
                                          peak_memory_bytes=None, largest_batch=40,
                                          error="out of memory at batch 64")) == \
        ["out of memory", "-", "3.2", "no (40)"]
    assert measured_value(gpu_measurement(), "peak_memory") == 1536 * 2**20
    assert measured_value(gpu_measurement(), "largest_batch") == 96
