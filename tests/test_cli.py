"""The command line end to end: one real ``python -m workbench train``, then each command
through the same ``main`` in this process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.training.bottleneck import STEADY_SPEED


@dataclass
class CliResult:
    """What a command left: its exit code and everything it printed."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, cwd: Path, env_extra: dict | None = None) -> CliResult:
    """``workbench ARGS`` in this process (``main`` as ``python -m workbench`` calls it), run in
    ``cwd`` with its own image cache: a subprocess would spend seconds importing torch again.
    The fixture below runs the real ``python -m workbench`` once."""
    env = {"WORKBENCH_CACHE_DIR": str(cwd / "cache"), **(env_extra or {})}
    previous_env = {name: os.environ.get(name) for name in env}
    previous_cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's own errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(previous_cwd)
        for name, value in previous_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return CliResult(code, out.getvalue(), err.getvalue())


def run_program(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m workbench ARGS`` in a child process, as a user types it."""
    # This checkout's workbench, whichever one the interpreter has installed.
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(cwd / "cache"),
               PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """Train with flags, then return the folder holding the run."""
    work = tmp_path_factory.mktemp("cli")
    data = write_shape_dataset(work / "data", per_class=8, size=(40, 32), layout="train_val",
                               val_per_class=3)
    result = run_program("train", "--data-root", str(data), "--weights", "none", "--finetune",
                         "full", "--resize-size", "32", "--crop-size", "28", "--batch-size", "8",
                         "--epochs", "1", "--workers", "0", "--output-dir", str(work / "runs"),
                         "--run-name", "cli", "--export", cwd=work)
    assert result.returncode == 0, result.stderr + result.stdout
    run_dir = next((work / "runs").glob("cli-*"))
    return work, data, run_dir, result


def test_train_with_flags_prints_progress_and_exports(trained_run):
    work, data, run_dir, result = trained_run
    output = result.stdout + result.stderr
    assert "Training will use the CPU" in output
    assert "Memory is not limited on the CPU" in output
    assert "epoch 1/1" in output and "run completed" in output
    assert "\nVERIFIED: reproduces the trained model (max |difference| " in output
    assert ("\n  how: TorchScript, scripted; max |difference| from the trained model: "
            in output)
    assert "reloaded here, " in output and " in a fresh process" in output
    assert (run_dir / "model_torchscript.pt").is_file()
    assert json.loads((run_dir / "config.json").read_text())["config"]["epochs"] == 1


def test_the_run_summary_says_what_limited_the_speed(trained_run):
    # A known case: the images stay on the device (cropped there in microseconds) while
    # resnet18 trains in full on the CPU, so the steps hardly wait and the model is the limit.
    _, _, run_dir, result = trained_run
    assert "stay on cpu" in result.stderr  # RunStart: images on the device
    lines = [line for line in result.stderr.splitlines() if line.startswith("bottleneck: ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("bottleneck: Compute-bound: the CPU computes "), lines[0]
    assert "a CUDA GPU; on the CPU the model itself is the limit" in lines[0]
    # Random weights: a frozen random backbone learns next to nothing, so no last_layer advice.
    assert "last_layer" not in lines[0]
    # Two speeds, each saying what it counts: the epoch's (start-up included) and the steady one.
    epoch = [line for line in result.stderr.splitlines() if line.startswith("epoch 1/1: ")]
    assert epoch and epoch[0].endswith(" img/s over the whole epoch"), result.stderr
    assert re.search(rf"\(\d[\d,]* images/s {re.escape(STEADY_SPEED)}\); ", lines[0]), lines[0]


def test_predict_prints_top_classes(trained_run):
    work, data, run_dir, _ = trained_run
    image = next((data / "val" / "circle").glob("*.png"))
    bad = work / "notes.png"
    bad.write_text("not an image")
    result = run_cli("predict", str(run_dir / "model_torchscript.pt"), str(image), str(bad),
                     "--topk", "2", cwd=work)
    assert result.returncode == 1  # one of the two images failed
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith(str(image)) and lines[0].count(",") == 1
    assert "notes.png: error:" in lines[1]


def test_predict_a_folder_with_the_best_model_into_a_csv(trained_run):
    import csv

    work, data, run_dir, _ = trained_run
    folder = data / "val" / "square"
    out = work / "predictions" / "square.csv"
    result = run_cli("predict", str(run_dir / "best_model.pt"), str(folder), "--csv", str(out),
                     "--topk", "2", cwd=work)
    assert result.returncode == 0, result.stderr
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["path"] for r in rows] == sorted(str(p) for p in folder.glob("*.png"))
    assert all(float(r["top1_probability"]) >= float(r["top2_probability"]) for r in rows)
    # The exported TorchScript model ranks every image the same way.
    exported = run_cli("predict", str(run_dir / "model_torchscript.pt"), str(folder), "--topk",
                       "2", cwd=work)
    assert [line.split(": ")[1].split()[0] for line in exported.stdout.splitlines()] == [
        r["top1_class"] for r in rows]


def test_export_a_run_folder_and_resume_from_the_config(trained_run):
    work, data, run_dir, _ = trained_run
    out = work / "exported.pt"
    result = run_cli("export", str(run_dir), "-o", str(out), cwd=work)
    assert result.returncode == 0, result.stderr
    assert out.is_file() and "in a fresh process" in result.stdout

    result = run_cli("train", "--config", str(run_dir / "config.json"), "--epochs", "2",
                     "--resume", str(run_dir / "last.pt"), cwd=work)
    assert result.returncode == 0, result.stderr
    assert "Resuming from" in result.stderr and "epoch 2/2" in result.stderr


def test_bad_config_file_and_bad_flags_exit_2_with_the_reason(tmp_path):
    config = tmp_path / "run.json"
    config.write_text('{"lr": "fast"}')
    result = run_cli("train", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert "run.json" in result.stderr and "'lr' must be a number" in result.stderr

    result = run_cli("train", "--data-root", str(tmp_path / "nowhere"), "--lr", "-1",
                     cwd=tmp_path)
    assert result.returncode == 2
    assert "Learning rate (lr): must be greater than 0" in result.stderr
    assert "nowhere" in result.stderr


def test_find_batch_on_the_cpu_says_there_is_no_limit_and_tries_nothing(tmp_path):
    data = write_shape_dataset(tmp_path / "data", classes=("circle", "cross", "ring"), per_class=2,
                               size=(32, 32))
    result = run_cli("find-batch", "--data-root", str(data), "--model", "small_cnn",
                     "--weights", "none", "--crop-mode", "five_crop", "--resize-size", "20",
                     "--crop-size", "16", "--device", "cpu", "--max-batch", "6", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not [line for line in result.stderr.splitlines() if line.startswith("  batch ")]
    assert result.stdout.startswith("There is no memory limit to find on the CPU (cpu)")
    assert "Recommended" not in result.stdout and "Largest batch" not in result.stdout

    result = run_cli("find-batch", "--device", "cpu", "--max-batch", "0", "--model",
                     "small_cnn", "--weights", "none", cwd=tmp_path)
    assert result.returncode == 2 and "max_batch must be at least 1" in result.stderr
    assert "no data_root given: assuming 10 classes" in result.stderr


def test_find_batch_says_why_the_data_folder_cannot_be_read(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["find-batch", "--data-root", str(empty), "--model", "small_cnn",
                 "--weights", "none", "--device", "cpu", "--max-batch", "1"]) == 2
    error = capsys.readouterr().err
    assert f"error: data_root: {empty}: no class subfolders" in error
    assert not [line for line in error.splitlines() if line.startswith("  batch ")]  # no try


def test_probe_times_the_cpu_rows_and_saves_the_fastest(tmp_path):
    data = write_shape_dataset(tmp_path / "data", per_class=4, size=(40, 32),
                               layout="train_val", val_per_class=2)
    result = run_cli("probe", "--data-root", str(data), "--model", "small_cnn", "--weights",
                     "none", "--resize-size", "32", "--crop-size", "28", "--device", "cpu",
                     "--workers", "0", "--batch-sizes", "4,8", "--steps", "1",
                     "--save-config", "fastest.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stderr.splitlines() if line.startswith("  float32")]
    assert len(rows) == 2 and all("channels_last off" in row and "images/s" in row
                                  for row in rows)
    assert result.stdout.splitlines()[0].split()[:2] == ["precision", "channels_last"]
    fastest = next(line for line in result.stdout.splitlines() if "<- fastest" in line)
    saved = json.loads((tmp_path / "fastest.json").read_text())
    assert saved["amp"] is False
    assert saved["batch_size"] == int(fastest.split()[2])
    assert saved["channels_last"] is True  # unchanged: not measured, a CPU run does not use it

    result = run_cli("probe", "--data-root", str(data), "--device", "cpu",
                     "--batch-sizes", "4,x", cwd=tmp_path)
    assert result.returncode == 2 and "--batch-sizes: '4,x'" in result.stderr


def test_devices_and_scan(tmp_path):
    result = run_cli("devices", cwd=tmp_path)
    assert result.returncode == 0 and "Training will use" in result.stdout
    data = write_shape_dataset(tmp_path / "flat", classes=("circle", "square"),
                               per_class=[12, 3], size=(32, 32))
    (data / "circle" / "readme.txt").write_text("hi")
    result = run_cli("scan", str(data), cwd=tmp_path)
    assert result.returncode == 0
    assert "2 classes" in result.stdout and "imbalanced" in result.stdout
    assert "readme.txt" in result.stdout


def test_scan_opens_every_header_and_lists_broken_images_as_skipped(tmp_path, capsys):
    data = write_shape_dataset(tmp_path / "flat", classes=("circle", "square"), per_class=4,
                               size=(32, 32))
    broken = data / "circle" / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    renamed_text = data / "square" / "notes.jpg"
    renamed_text.write_text("not a photo")

    assert main(["scan", str(data)]) == 0
    shown = capsys.readouterr().out
    assert "8 train / val images" not in shown
    assert shown.startswith("2 classes, 6 train / 2 val images")  # the 2 broken left out
    assert f"skipped: {broken}: not an image Pillow can identify" in shown
    assert f"skipped: {renamed_text}: not an image Pillow can identify" in shown

    assert main(["scan", str(data), "--no-header-check"]) == 0
    assert "broken.png" not in capsys.readouterr().out


def test_torchrun_two_processes_share_each_epoch(trained_run, tmp_path):
    _, data, _, _ = trained_run
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "workbench", "train", "--data-root", str(data),
         "--weights", "none", "--finetune", "full", "--resize-size", "32", "--crop-size", "28",
         "--batch-size", "8", "--epochs", "1", "--workers", "0", "--output-dir",
         str(tmp_path / "runs"), "--run-name", "ddp"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # 32 train images, batch 8, two processes: each takes 2 steps of its own half.
    assert "2 steps/epoch" in result.stderr
    runs = list((tmp_path / "runs").glob("ddp-*"))
    assert len(runs) == 1  # only rank 0 writes a run folder
    assert (runs[0] / "last.pt").is_file() and (runs[0] / "best_model.pt").is_file()


def test_cache_shows_its_size_and_clears_only_cached_images(tmp_path, capsys):
    from workbench.cli import main
    from workbench.core.data.image_cache import load_image_uint8

    data = write_shape_dataset(tmp_path / "data", per_class=2, size=(40, 32))
    cache = tmp_path / "cache"
    images = sorted(data.rglob("*.png"))
    assert len(images) == 8  # 4 classes of 2
    for path in images:
        load_image_uint8(str(path), 24, cache_dir=str(cache))
    (cache / "mine.txt").write_text("kept")

    assert main(["cache", "--cache-dir", str(cache)]) == 0
    shown = capsys.readouterr().out
    assert f"image cache: {cache}" in shown and "8 resized image(s)" in shown
    assert "free on that disk" in shown

    assert main(["cache", "--cache-dir", str(cache), "--clear"]) == 0
    cleared = capsys.readouterr().out
    assert "deleted 8 cached image(s)" in cleared and "0 resized image(s), 0 KiB" in cleared
    assert (cache / "mine.txt").read_text() == "kept"

    assert main(["cache", "--cache-dir", str(cache / "mine.txt")]) == 2
    assert "is a file, not a cache folder" in capsys.readouterr().err
