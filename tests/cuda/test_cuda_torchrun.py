"""One process through torchrun on a GPU: the NCCL process group and DDP, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch.distributed as dist

SCRIPT = Path(__file__).with_name("nccl_one_process_script.py")
ROOT = Path(__file__).parents[2]


def _torchrun(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                                   "")]))
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node=1", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def test_one_process_trains_through_nccl_and_ddp(cuda_config, tmp_path):
    assert dist.is_nccl_available()
    config_file = tmp_path / "run.json"
    cuda_config.replace(run_name="nccl", epochs=2).save(config_file)
    result = _torchrun(str(SCRIPT), str(config_file), str(tmp_path))
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads((tmp_path / "result.json").read_text())
    assert report["status"] == "completed", report["error"]
    assert (report["backend"], report["world_size"]) == ("nccl", 1)
    assert report["wrapped"] == "DistributedDataParallel" and report["epochs_completed"] == 2


def test_workbench_train_runs_under_torchrun_on_the_gpu(cuda_config, tmp_path):
    config_file = tmp_path / "run.json"
    cuda_config.replace(run_name="torchrun").save(config_file)
    result = _torchrun("-m", "workbench", "train", "--config", str(config_file),
                       "--device", "cuda")
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = next((tmp_path / "runs").glob("torchrun-*"))
    recorded = json.loads((run_dir / "config.json").read_text())["environment"]
    assert recorded["world_size"] == 1 and recorded["device"] == "cuda:0"
    assert (run_dir / "last.pt").is_file()
