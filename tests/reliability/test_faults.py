"""Faults during real training runs: kills while saving, a full or read-only disk, hostile
weights, the device out of memory, a NaN loss, loader processes killed or hung. Each run ends
with a message, nothing already saved is lost and the process stays up.

Faults come in at the boundary where they would really happen: signals sent to processes,
OS calls that fail with an errno, tensors a (test-only) global module hook makes NaN or refuses
to fit; the engine itself is not replaced.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import random
import signal
import tempfile
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import torch
import torchvision
from torch import nn

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.building import imagenet_weights_path
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.models.safe_load import load_tensors_file
from workbench.core.runs.atomic_io import atomic_torch_save
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train

KILLS = 20


class Recorder(Callback):
    """Keeps every event; ``on_epoch`` / ``on_step`` hooks let a test act at that moment."""

    def __init__(self, on_epoch=None, on_step=None) -> None:
        self.steps, self.epochs, self.messages, self.ends = [], [], [], []
        self._on_epoch, self._on_step = on_epoch, on_step

    def on_step(self, event):
        self.steps.append(event)
        if self._on_step:
            self._on_step(event)

    def on_epoch_end(self, event):
        self.epochs.append(event)
        if self._on_epoch:
            self._on_epoch(event)

    def on_message(self, event):
        self.messages.append(event.text)

    def on_run_end(self, event):
        self.ends.append(event)

    def text(self) -> str:
        return "\n".join(self.messages)


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    return write_shape_dataset(tmp_path_factory.mktemp("data") / "shapes", per_class=8,
                               size=(36, 32), layout="train_val", val_per_class=2)


def tiny_config(shapes: Path, output: Path, **changes) -> TrainConfig:
    return TrainConfig(
        data_root=str(shapes), model="resnet18", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=8, epochs=3,
        max_steps_per_epoch=3, workers=0, output_dir=str(output), cache_images=False,
        device="cpu", amp=False, channels_last=False, scheduler="none", lr=0.01,
    ).replace(**changes)


def temp_files(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


# ---------------------------------------------------------------- kills while saving
def _save_forever(path: str, weights: torch.Tensor) -> None:
    """Child process: save checkpoints as fast as it can, numbered. No tensor maths here: a
    forked child must not enter torch's thread pool, which the fork left behind."""
    iteration = 0
    while True:
        iteration += 1
        atomic_torch_save({"iteration": iteration, "weights": weights}, path)


def test_sigkill_at_random_moments_never_leaves_an_unloadable_checkpoint(tmp_path):
    path = tmp_path / "last.pt"
    weights = torch.randn(1_000_000, generator=torch.Generator().manual_seed(0))
    atomic_torch_save({"iteration": 0, "weights": weights}, path)
    fork = multiprocessing.get_context("fork")
    moments = random.Random(20).sample(range(30, 400), KILLS)
    seen: list[int] = []
    for delay_ms in moments:
        saver = fork.Process(target=_save_forever, args=(str(path), weights), daemon=True)
        saver.start()
        time.sleep(delay_ms / 1000)
        os.kill(saver.pid, signal.SIGKILL)
        saver.join(10)
        assert saver.exitcode == -signal.SIGKILL
        data = load_tensors_file(path)  # the latest complete save, never a torn one
        assert torch.equal(data["weights"], weights)
        seen.append(data["iteration"])
    # The children were busy saving when killed, and each one's last save survived.
    assert sum(seen) > KILLS
    leftovers = temp_files(tmp_path)
    assert len(leftovers) <= KILLS  # a kill mid-write can leave its temp file, nothing else
    print(f"{KILLS} kills; last complete save of each child: {seen}; temp files left: "
          f"{len(leftovers)}")


# ---------------------------------------------------------------- full or read-only disk
class FailingCall:
    """Makes ``module.name`` fail with errno ``code`` once armed, for calls ``matches`` picks."""

    def __init__(self, monkeypatch, module, name: str, code: int, matches) -> None:
        self.original = getattr(module, name)
        self.code, self.matches, self.armed, self.failures = code, matches, False, 0
        monkeypatch.setattr(module, name, self)

    def __call__(self, *args, **kwargs):
        if self.armed and self.matches(*args, **kwargs):
            self.failures += 1
            raise OSError(self.code, os.strerror(self.code))
        return self.original(*args, **kwargs)


def _writing_last_pt(fd: int) -> bool:
    return "/.last.pt." in os.readlink(f"/proc/self/fd/{fd}")


SAVE_FAULTS = {
    "disk_full_on_fsync": (os, "fsync", errno.ENOSPC, _writing_last_pt, "the disk is full"),
    "read_only_on_replace": (os, "replace", errno.EROFS,
                             lambda source, target: str(target).endswith("/last.pt"),
                             "read-only file system"),
    "not_writable_on_create": (tempfile, "mkstemp", errno.EACCES,
                               lambda **kwargs: kwargs.get("prefix") == ".last.pt.",
                               "permission denied"),
}


@pytest.mark.parametrize("fault", sorted(SAVE_FAULTS))
def test_a_failed_checkpoint_save_stops_the_run_and_keeps_the_previous_one(
        fault, shapes, tmp_path, monkeypatch):
    module, name, code, matches, reason = SAVE_FAULTS[fault]
    failing = FailingCall(monkeypatch, module, name, code, matches)
    saved: dict[str, bytes] = {}

    def after_epoch(event):
        saved["last"] = Path(event.checkpoint_path).read_bytes()
        failing.armed = True  # the next save of last.pt fails

    recorder = Recorder(on_epoch=after_epoch)
    end = train(tiny_config(shapes, tmp_path, model="small_cnn"), recorder)  # small files

    assert failing.failures == 1
    assert end.status == "failed"
    checkpoint = Path(end.last_checkpoint_path)
    assert f"could not save '{checkpoint}'" in end.error and reason in end.error
    assert f"'{checkpoint}' still holds epoch 1" in end.error and "The run stopped" in end.error
    assert [e.epoch for e in recorder.epochs] == [1]  # no event claims epoch 2 was saved
    assert end.epochs_completed == 1
    assert checkpoint.read_bytes() == saved["last"]
    assert load_checkpoint(checkpoint)["epoch"] == 1
    assert temp_files(checkpoint.parent) == []
    assert f"Training failed: {end.error}" in recorder.text()


def test_a_failed_first_best_model_save_claims_nothing(shapes, tmp_path, monkeypatch):
    failing = FailingCall(monkeypatch, os, "replace", errno.ENOSPC,
                          lambda source, target: str(target).endswith("/best_model.pt"))
    failing.armed = True
    recorder = Recorder()
    end = train(tiny_config(shapes, tmp_path, model="small_cnn"), recorder)
    assert end.status == "failed" and "best_model.pt" in end.error
    assert "no earlier epoch had been saved" in end.error
    assert (end.epochs_completed, end.best_epoch, end.best_model_path,
            end.last_checkpoint_path) == (0, 0, "", "")
    assert recorder.epochs == []
    run_dir = Path(end.run_dir)
    assert not (run_dir / "best_model.pt").exists() and temp_files(run_dir) == []


def test_an_output_folder_that_is_a_file_is_named_with_the_reason(shapes, tmp_path):
    in_the_way = tmp_path / "runs"
    in_the_way.write_text("not a folder")
    end = train(tiny_config(shapes, in_the_way / "nested"))
    assert end.status == "failed"
    assert str(in_the_way) in end.error and "is a file, not a folder" in end.error
    assert in_the_way.read_text() == "not a folder"


# ---------------------------------------------------------------- hostile weights
def test_hostile_imagenet_weights_in_the_cache_are_refused_and_run_nothing(
        shapes, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    cache = imagenet_weights_path()
    cache.parent.mkdir(parents=True)
    marker = tmp_path / "code_ran.marker"

    class Hostile:
        def __reduce__(self):
            return exec, (f"open({str(marker)!r}, 'w').close()",)

    torch.save({"conv1.weight": Hostile()}, cache)
    end = train(tiny_config(shapes, tmp_path, weights="imagenet"))
    assert end.status == "failed"
    assert str(cache) in end.error and "could run code, so it was refused" in end.error
    assert not marker.exists()


# ---------------------------------------------------------------- out of memory
@pytest.fixture
def memory_limit() -> Iterator[dict]:
    """A global forward pre-hook: a training ResNet forward over more than ``limit`` images
    raises the CUDA out-of-memory error, as a GPU with that little memory would."""
    state: dict = {"limit": 3, "refused": [], "fitted": []}

    def hook(module: nn.Module, args):
        if not isinstance(module, torchvision.models.ResNet) or not module.training:
            return
        batch = args[0]
        if batch.shape[0] > state["limit"]:
            state["refused"].append((batch.shape[0], weakref.ref(batch)))
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if not state["fitted"]:  # the first batch that fits: was every refused one freed?
            state["alive_at_retry"] = [ref() is not None for _, ref in state["refused"]]
        state["fitted"].append(batch.shape[0])

    handle = nn.modules.module.register_module_forward_pre_hook(hook)
    yield state
    handle.remove()


def test_out_of_memory_names_the_batch_and_offers_half(shapes, tmp_path, memory_limit):
    recorder = Recorder()
    end = train(tiny_config(shapes, tmp_path), recorder)
    assert end.status == "failed" and end.retry_batch_size == 4
    assert "ran out of memory at batch size 8" in end.error
    assert "try batch size 4 (half)" in end.error and "oom_retry_smaller_batch" in end.error
    assert recorder.steps == [] and recorder.epochs == []
    assert [size for size, _ in memory_limit["refused"]] == [8]
    assert memory_limit["refused"][0][1]() is None  # nothing kept the failed batch alive


def test_out_of_memory_retries_with_half_the_batch_when_allowed(shapes, tmp_path, memory_limit):
    recorder = Recorder()
    end = train(tiny_config(shapes, tmp_path, oom_retry_smaller_batch=True, epochs=1),
                recorder)
    assert end.status == "completed", end.error
    assert [size for size, _ in memory_limit["refused"]] == [8, 4]
    assert memory_limit["alive_at_retry"] == [False, False]  # freed before the retry
    assert set(memory_limit["fitted"]) == {2}
    assert "ran out of memory at batch size 8; retrying epoch 1 with batch size 4" \
        in recorder.text()
    assert "at batch size 4; retrying epoch 1 with batch size 2" in recorder.text()
    assert load_checkpoint(end.last_checkpoint_path)["config"]["batch_size"] == 2


# ---------------------------------------------------------------- non-finite loss
def test_the_first_nan_loss_stops_the_run_and_leaves_the_saved_files_alone(shapes, tmp_path):
    calls = {"training_forwards": 0}

    def nan_at_step_5(module: nn.Module, args, output):
        # A training step's forward (the BatchNorm statistics recomputed before validation
        # run in training mode without gradients).
        if isinstance(module, torchvision.models.ResNet) and module.training \
                and torch.is_grad_enabled():
            calls["training_forwards"] += 1
            if calls["training_forwards"] == 5:  # epoch 2, step 2
                return output * float("nan")
        return None

    saved: dict[str, bytes] = {}

    def after_epoch(event):
        run_dir = Path(event.checkpoint_path).parent
        saved.update(last=(run_dir / "last.pt").read_bytes(),
                     best=(run_dir / "best_model.pt").read_bytes())

    recorder = Recorder(on_epoch=after_epoch)
    handle = nn.modules.module.register_module_forward_hook(nan_at_step_5)
    try:
        end = train(tiny_config(shapes, tmp_path), recorder)
    finally:
        handle.remove()
    assert end.status == "failed" and end.epochs_completed == 1
    assert "epoch 2, step 2: the loss is nan" in end.error
    assert calls["training_forwards"] == 5  # stopped at once, not after a run of NaN steps
    assert [(s.epoch, s.step) for s in recorder.steps] == [(1, 1), (1, 2), (1, 3), (2, 1)]
    run_dir = Path(end.run_dir)
    assert (run_dir / "last.pt").read_bytes() == saved["last"]
    assert (run_dir / "best_model.pt").read_bytes() == saved["best"]
    weights = load_checkpoint(run_dir / "last.pt")["model"]
    assert all(torch.isfinite(t).all() for t in weights.values() if t.is_floating_point())


# ---------------------------------------------------------------- loader processes
def _loader_processes() -> list[psutil.Process]:
    return [child for child in psutil.Process().children() if child.name() == "pt_data_worker"]


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize(("fault", "expected"), [
    (signal.SIGKILL, "a data loader process died"),
    (signal.SIGSTOP, "sent no batch for 2 s (loader_timeout)"),
])
def test_a_killed_or_hung_loader_process_ends_the_run_with_advice(
        fault, expected, shapes, tmp_path):
    hit: list[psutil.Process] = []

    def at_first_step(event):
        if not hit:
            hit.extend(_loader_processes())
            for process in hit:
                process.send_signal(fault)

    recorder = Recorder(on_step=at_first_step)
    config = tiny_config(shapes, tmp_path, workers=1, loader_timeout=2.0, batch_size=2,
                         max_steps_per_epoch=0, epochs=1, images_on_device=False)
    try:
        end = train(config, recorder)
        assert hit and all(_gone(process) for process in hit)  # even the hung one is gone
    finally:
        for process in hit:
            if not _gone(process):
                process.kill()
    assert end.status == "failed"
    assert expected in end.error and "Try fewer workers (or workers 0" in end.error
    assert recorder.epochs == [] and len(recorder.steps) < 16  # 32 images, batch 2
