"""Started by tests/test_distributed.py under torchrun: one run, then each process's weights.

Every process writes ``rank<N>.json`` with the run's status (and error) and a digest of the
weights it ended with, so the test can check that DistributedDataParallel kept the processes
identical. The run goes through the engine's own ``TrainingSession``; only the digest is added
here.

Usage: python -m torch.distributed.run --standalone --nproc_per_node=2 \
    tests/distributed_train_script.py CONFIG_JSON OUT_DIR
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from workbench.core.data.dataset_scan import DatasetError
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import CallbackList
from workbench.core.training.session import TrainingSession


def weights_digest(session: TrainingSession) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(session.model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def parameters_digest(session: TrainingSession) -> str:
    """The digest of the learned weights alone: BatchNorm running statistics that train in a
    process's last step are its own (DistributedDataParallel broadcasts them at each forward)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(session.model.named_parameters()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def main(config_path: str, out_dir: str) -> None:
    session = TrainingSession(TrainConfig.load(config_path), CallbackList([]), RunControl())
    try:
        session.prepare()
        try:
            end = session.fit()
            report = {"status": end.status, "digest": weights_digest(session),
                      "parameters_digest": parameters_digest(session),
                      "run_dir": end.run_dir, "epochs_completed": end.epochs_completed}
        except DatasetError as exc:  # bad input stops every process at the same point
            report = {"status": "failed", "error": str(exc),
                      "run_dir": str(session.run_dir or ""),
                      "epochs_completed": session.epochs_completed}
        Path(out_dir, f"rank{session.dist.rank}.json").write_text(json.dumps(report))
    finally:
        session.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
