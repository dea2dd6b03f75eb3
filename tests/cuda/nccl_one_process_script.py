"""Started by tests/cuda/test_cuda_torchrun.py under torchrun with one process.

One process is not "distributed" to the engine (``DistributedContext.enabled`` needs two), so
this script turns the engine's distributed path on for it: the NCCL process group, DDP with
the device id, the sharded loader, the epoch's all_reduce, the failure gather and the barrier,
all on one GPU. It writes ``result.json`` with the run's status and the backend in use.

Usage: python -m torch.distributed.run --standalone --nproc_per_node=1 \
    tests/cuda/nccl_one_process_script.py CONFIG_JSON OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch.distributed as dist

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import CallbackList
from workbench.core.training.distributed import DistributedContext
from workbench.core.training.session import TrainingSession


class OneProcessGroup(DistributedContext):
    """The engine's distributed path with a world of one."""

    @property
    def enabled(self) -> bool:
        return True


def main(config_path: str, out_dir: str) -> None:
    session = TrainingSession(TrainConfig.load(config_path), CallbackList([]), RunControl())
    session.dist = OneProcessGroup.from_env()
    try:
        session.prepare()
        end = session.fit()
        report = {"status": end.status, "error": end.error, "backend": dist.get_backend(),
                  "world_size": dist.get_world_size(),
                  "wrapped": type(session.train_model).__name__,
                  "epochs_completed": end.epochs_completed}
        Path(out_dir, "result.json").write_text(json.dumps(report))
    finally:
        session.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
