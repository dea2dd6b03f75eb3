"""Two CPU processes through torchrun (gloo), against one process with the same global batch.

The run trains the small CNN's last layer (its BatchNorm layers stay frozen in eval mode, so a
sample's gradient does not depend on which other samples share its batch) with one step per
epoch: the whole training set is the global batch, 2 x 8 under torchrun and 1 x 16 alone. Both
then compute the same gradients up to float32 rounding, so weights and epoch figures must agree
to a relative 1e-5. Epoch figures from rank 0 alone (8 of the 16 samples) would not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from workbench.core.data.decode_failures import read_failure_log
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import EpochEnd, Message, RunStart
from workbench.core.runs.run_folder import DECODE_FAILURES
from workbench.core.runs.run_follower import RunFollower
from workbench.core.training.distributed import DistributedContext
from workbench.core.training.engine import train

SCRIPT = Path(__file__).with_name("distributed_train_script.py")
RELATIVE_TOLERANCE = 1e-5
ABSOLUTE_TOLERANCE = 1e-6


def torchrun(config: TrainConfig, work: Path, name: str) -> list[dict]:
    """Run ``config`` in two processes; each process's report (status, weight digest)."""
    config_path, out = work / f"{name}.json", work / name
    out.mkdir()
    config.save(config_path)
    env = dict(os.environ, OMP_NUM_THREADS="1", WORKBENCH_CACHE_DIR=str(work / "cache"))
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(SCRIPT), str(config_path), str(out)],
        env=env, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in (0, 1)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Epoch 1 under torchrun, epoch 2 resumed under torchrun, and both epochs in one process."""
    work = tmp_path_factory.mktemp("distributed")
    data = write_shape_dataset(work / "data", classes=("circle", "square"), per_class=8,
                               size=(32, 32), layout="train_val", val_per_class=3)
    base = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="last_layer",
        crop_mode="five_crop", resize_size=32, crop_size=28, train_hflip=False, batch_size=8,
        epochs=1, lr=0.01, momentum=0.9, scheduler="none", workers=0, cache_images=False,
        cache_features=False, deterministic=True, device="cpu", seed=5,
        output_dir=str(work / "ddp_runs"),
    )
    first = torchrun(base, work, "first")
    run_dir = Path(first[0]["run_dir"])
    resumed = torchrun(base.replace(epochs=2, resume=str(run_dir / "last.pt")), work, "resumed")
    single = train(base.replace(batch_size=16, epochs=2, output_dir=str(work / "single_runs")))
    assert single.status == "completed", single.error
    return work, run_dir, first, resumed, single


def epoch_ends(run_dir: Path) -> list[EpochEnd]:
    follower = RunFollower(run_dir)
    return [e for e in follower.poll().events if isinstance(e, EpochEnd)]


def test_every_process_ends_with_the_same_weights(runs):
    _, run_dir, first, resumed, _ = runs
    for reports in (first, resumed):
        assert [r["status"] for r in reports] == ["completed", "completed"]
        assert reports[0]["digest"] == reports[1]["digest"]
    assert first[0]["epochs_completed"] == 1 and resumed[0]["epochs_completed"] == 2
    assert resumed[0]["run_dir"] == str(run_dir)  # the resumed run continues in its folder


def test_only_rank_0_writes_one_run_folder_that_records_the_batch(runs):
    work, run_dir, _, _, _ = runs
    assert list((work / "ddp_runs").iterdir()) == [run_dir]
    environment = json.loads((run_dir / "config.json").read_text())["environment"]
    assert environment["world_size"] == 2 and environment["global_batch_size"] == 16
    events = RunFollower(run_dir).poll().events
    starts = [e for e in events if isinstance(e, RunStart)]
    assert [s.start_epoch for s in starts] == [0, 1]  # the first run, then its resumption
    assert starts[0].steps_per_epoch == 1  # 16 images, 8 per process
    texts = [e.text for e in events if isinstance(e, Message)]
    assert any("global batch of 16" in t for t in texts)
    assert any("Resuming from" in t for t in texts)


def test_two_processes_of_8_match_one_process_of_16(runs):
    _, run_dir, _, _, single = runs
    distributed_epochs = epoch_ends(run_dir)
    single_epochs = epoch_ends(Path(single.run_dir))
    assert [e.epoch for e in distributed_epochs] == [e.epoch for e in single_epochs] == [1, 2]
    for ours, theirs in zip(distributed_epochs, single_epochs, strict=True):
        for name in ("train_loss", "train_accuracy", "val_loss", "val_accuracy"):
            assert getattr(ours, name) == pytest.approx(
                getattr(theirs, name), rel=RELATIVE_TOLERANCE, abs=ABSOLUTE_TOLERANCE), name
    assert distributed_epochs[1].train_loss < distributed_epochs[0].train_loss  # it learned

    ours = load_checkpoint(str(run_dir / "last.pt"))["model"]
    theirs = load_checkpoint(single.last_checkpoint_path)["model"]
    assert ours.keys() == theirs.keys()
    for name in ours:
        torch.testing.assert_close(ours[name], theirs[name], rtol=RELATIVE_TOLERANCE,
                                   atol=ABSOLUTE_TOLERANCE)


def test_a_run_resumes_under_a_different_number_of_processes(runs):
    """A torchrun checkpoint continues in one process, and a one-process checkpoint under
    torchrun, with the same global batch: both match the one-process run continued."""
    work, run_dir, _, _, single = runs
    alone = TrainConfig.load(single.run_dir).replace(epochs=3, resume="")

    def copy_of(run: Path, name: str) -> str:  # resuming writes into the checkpoint's folder
        target = work / name
        target.mkdir()
        for file in ("last.pt", "config.json"):
            shutil.copy(run / file, target / file)
        return str(target / "last.pt")

    continued = train(alone.replace(resume=copy_of(Path(single.run_dir), "single_copy")))
    from_two = train(alone.replace(resume=copy_of(run_dir, "two_copy")))
    to_two = torchrun(alone.replace(batch_size=8, resume=copy_of(Path(single.run_dir),
                                                                   "single_copy_2")),
                      work, "to_two")

    assert continued.status == from_two.status == "completed", from_two.error
    assert [r["status"] for r in to_two] == ["completed", "completed"]
    assert from_two.epochs_completed == to_two[0]["epochs_completed"] == 3
    expected = load_checkpoint(continued.last_checkpoint_path)["model"]
    for path in (from_two.last_checkpoint_path, Path(to_two[0]["run_dir"]) / "last.pt"):
        ours = load_checkpoint(str(path))["model"]
        for name in expected:
            torch.testing.assert_close(ours[name], expected[name], rtol=RELATIVE_TOLERANCE,
                                       atol=ABSOLUTE_TOLERANCE)


def test_failed_images_of_every_process_count_towards_the_limit(tmp_path):
    data = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=8,
                               size=(32, 32), layout="train_val", val_per_class=3)
    broken = sorted((data / "train").glob("*/*.png"))[::4]  # 4 of the 16 training images
    for path in broken:
        path.write_bytes(path.read_bytes()[:60])  # the header survives, the pixels do not
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=4, epochs=2,
        scheduler="none", workers=0, cache_images=False, device="cpu", seed=2,
        max_failed_images=3, output_dir=str(tmp_path / "runs"),
    )

    reports = torchrun(config, tmp_path, "broken")

    # Each process met only its share of the 4 (the first epoch ran to its end), but together
    # they are over the limit of 3: both stop at the end of epoch 1.
    assert [r["status"] for r in reports] == ["failed", "failed"]
    assert [r["epochs_completed"] for r in reports] == [1, 1]
    for report in reports:
        assert report["error"].startswith("max_failed_images: 4 images could not be decoded")
    logged = read_failure_log(str(Path(reports[0]["run_dir"]) / DECODE_FAILURES))
    assert sorted(path for path, _ in logged) == sorted(str(p) for p in broken)


def test_a_weighted_sampler_is_named_as_not_applied_under_torchrun():
    assert DistributedContext(world_size=1).start_messages(8, "weighted_sampler") == []
    messages = DistributedContext(world_size=4).start_messages(8, "weighted_sampler")
    assert "global batch of 32" in messages[0][1]
    assert messages[1][0] == "warning" and "weighted_loss" in messages[1][1]
