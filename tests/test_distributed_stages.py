"""head_then_full under torchrun (two CPU processes, gloo): the backbone unfrozen after the
head epoch must be synchronised too, so both processes end with the same weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.runs.config import TrainConfig

SCRIPT = Path(__file__).with_name("distributed_train_script.py")


def test_both_processes_train_the_unfrozen_backbone_together(tmp_path):
    data = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=4,
                               size=(32, 32), layout="train_val", val_per_class=1)
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="head_then_full",
        head_epochs=1, crop_mode="standard", resize_size=32, crop_size=28, train_hflip=False,
        batch_size=4, epochs=2, lr=0.05, momentum=0.9, scheduler="none", workers=0,
        cache_images=False, images_on_device=False, deterministic=True, device="cpu", seed=5,
        output_dir=str(tmp_path / "runs"))
    config.save(tmp_path / "run.json")
    out = tmp_path / "out"
    out.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(SCRIPT), str(tmp_path / "run.json"), str(out)],
        env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = [json.loads((out / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    assert [r["status"] for r in reports] == ["completed", "completed"]
    # Each process's shard gives its own gradients: only synchronised ones keep them equal.
    assert reports[0]["parameters_digest"] == reports[1]["parameters_digest"]
    state = load_checkpoint(Path(reports[0]["run_dir"]) / "last.pt")
    assert state["finetune_stage"] == "full"
