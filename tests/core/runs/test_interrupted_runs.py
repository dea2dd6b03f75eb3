"""Runs killed mid-training, first attempts and resumed ones, as `workbench runs` lists them.

The kill is real: a child process trains and sends itself SIGKILL at the first step of an
epoch, so the folder holds exactly what `kill -9` or a power cut leaves (config.json, the
finished epochs' files and log lines, no end record).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import workbench
from workbench.cli import main
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.run_index import list_runs
from workbench.core.training.engine import train

TRAIN_AND_KILL = """
import os, signal, sys
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train

class KillAtEpoch(Callback):
    def on_step(self, event):
        if event.epoch == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)

train(TrainConfig.load(sys.argv[1]), KillAtEpoch())
"""


def _start_killed_run(config: TrainConfig, kill_at_epoch: int, folder: Path
                      ) -> subprocess.Popen:
    config_file = folder / f"{config.run_name}.json"
    config.save(config_file)
    env = dict(os.environ, PYTHONPATH=str(Path(workbench.__file__).parent.parent),
               WORKBENCH_CACHE_DIR=str(folder / "cache"))
    return subprocess.Popen([sys.executable, "-c", TRAIN_AND_KILL, str(config_file),
                             str(kill_at_epoch)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _age(run_dir: Path, seconds: float) -> None:
    """As if ``workbench runs`` were typed ``seconds`` after the kill."""
    metrics = run_dir / "metrics.jsonl"
    then = time.time() - seconds
    os.utime(metrics, (then, then))


@pytest.fixture(scope="module")
def killed_runs(tmp_path_factory) -> Path:
    """'plain': 12 epochs asked, killed in epoch 4. 'resumed': 3 epochs completed, then
    resumed from last.pt for 12 and killed in epoch 5."""
    root = tmp_path_factory.mktemp("killed")
    data = write_shape_dataset(root / "data", per_class=4, size=(32, 32), layout="train_val",
                               val_per_class=1)
    base = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                       crop_mode="standard", resize_size=32, crop_size=28, batch_size=8,
                       workers=0, output_dir=str(root / "runs"), device="cpu", amp=False,
                       cache_images=False, finetune="full", epochs=12)
    first = train(base.replace(run_name="resumed", epochs=3), Callback())
    assert first.status == "completed" and first.epochs_completed == 3
    children = [
        _start_killed_run(base.replace(run_name="plain"), 4, root),
        _start_killed_run(base.replace(run_name="resumed", resume=first.last_checkpoint_path),
                          5, root),
    ]
    for child in children:
        _, err = child.communicate(timeout=240)
        assert child.returncode == -9, err  # killed, not ended
    for run_dir in (root / "runs").iterdir():
        _age(run_dir, 600)
    return root / "runs"


def test_a_killed_run_and_a_killed_resumed_run_are_interrupted(killed_runs):
    runs = {run.name.split("-")[0]: run for run in list_runs(killed_runs)}
    assert (runs["plain"].status, runs["plain"].epochs_completed, runs["plain"].epochs) == (
        "interrupted", 3, 12)
    # Its first attempt ended 'completed' after 3 of 3 epochs; the resumed attempt has no end.
    assert (runs["resumed"].status, runs["resumed"].epochs_completed,
            runs["resumed"].epochs) == ("interrupted", 4, 12)


def test_workbench_runs_lists_them_as_interrupted(killed_runs, capsys):
    assert main(["runs", str(killed_runs)]) == 0
    lines = {line.split("-")[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "3/12" in lines["plain"] and lines["plain"].endswith("interrupted")
    assert "4/12" in lines["resumed"] and lines["resumed"].endswith("interrupted")
    assert "completed" not in lines["resumed"]


def test_a_killed_run_is_interrupted_here_at_once_and_elsewhere_once_its_log_is_old(
        killed_runs):
    plain = next(run for run in killed_runs.iterdir() if run.name.startswith("plain"))
    metrics = plain / "metrics.jsonl"
    original = metrics.read_text()

    def status_with_log_age(seconds: float) -> str:
        _age(plain, seconds)
        return {run.name: run.status for run in list_runs(killed_runs)}[plain.name]

    try:
        # This computer ran it and its process is gone: interrupted, however fresh the log.
        assert status_with_log_age(5) == "interrupted"
        # Written from another machine into a shared folder: running while its log changes.
        metrics.write_text(original.replace(f'"host": "{socket.gethostname()}"',
                                            '"host": "another-machine"'))
        assert '"another-machine"' in metrics.read_text()
        assert status_with_log_age(5) == "running"
        assert status_with_log_age(600) == "interrupted"
    finally:
        metrics.write_text(original)
        _age(plain, 600)
