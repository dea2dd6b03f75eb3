"""Real tiny training runs on generated folders: hooks, learning, checkpoints, resume, control."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import torch

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback
from workbench.core.runs.run_folder import read_metrics
from workbench.core.training.engine import train


class Recorder(Callback):
    """Records every hook call in order, with the event."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def on_run_start(self, event):
        self.calls.append(("on_run_start", event))

    def on_step(self, event):
        self.calls.append(("on_step", event))

    def on_epoch_end(self, event):
        self.calls.append(("on_epoch_end", event))

    def on_message(self, event):
        self.calls.append(("on_message", event))

    def on_run_end(self, event):
        self.calls.append(("on_run_end", event))

    def names(self, skip_messages: bool = True) -> list[str]:
        return [n for n, _ in self.calls if not (skip_messages and n == "on_message")]

    def events(self, name: str) -> list:
        return [e for n, e in self.calls if n == name]

    def messages(self) -> str:
        return "\n".join(e.text for e in self.events("on_message"))


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("shapes")
    return write_shape_dataset(root, per_class=8, size=(40, 32), layout="train_val",
                               val_per_class=3)


def tiny_config(data_root: Path, output: Path, **changes) -> TrainConfig:
    base = TrainConfig(
        data_root=str(data_root), model="small_cnn", weights="none", finetune="full",
        crop_mode="five_crop", resize_size=32, crop_size=28, batch_size=8, epochs=2,
        optimizer="sgd", lr=0.01, scheduler="step", lr_step_size=1, workers=0,
        output_dir=str(output), cache_images=False, seed=3,
    )
    return base.replace(**changes)


def test_hook_order_of_a_real_run(shapes, tmp_path):
    recorder = Recorder()
    end = train(tiny_config(shapes, tmp_path), recorder)

    assert end.status == "completed"
    names = recorder.names()
    steps_per_epoch = recorder.events("on_run_start")[0].steps_per_epoch
    assert steps_per_epoch == 4  # 32 train images / batch 8
    expected = (["on_run_start"] + (["on_step"] * steps_per_epoch + ["on_epoch_end"]) * 2
                + ["on_run_end"])
    assert names == expected
    steps = recorder.events("on_step")
    assert [s.step for s in steps[:4]] == [1, 2, 3, 4]
    assert [s.global_step for s in steps] == list(range(1, 9))
    assert all(s.data_wait_s >= 0 and s.compute_s > 0 and s.images_per_second > 0 for s in steps)
    assert all(s.memory_allocated is None and s.process_rss > 0 for s in steps)  # CPU run


def test_training_reduces_the_loss_and_writes_the_run_folder(shapes, tmp_path):
    recorder = Recorder()
    # Five crops: a tiny run's loss falls reliably; random crops as small as 8% of an image
    # make four epochs of 32 images too noisy to tell.
    config = tiny_config(shapes, tmp_path, epochs=4, optimizer="adamw", lr=2e-3,
                         scheduler="none")
    end = train(config, recorder)

    epochs = recorder.events("on_epoch_end")
    assert end.status == "completed" and len(epochs) == 4
    assert epochs[-1].train_loss < epochs[0].train_loss * 0.8
    run_dir = Path(end.run_dir)
    document = json.loads((run_dir / "config.json").read_text())
    assert document["config"]["lr"] == 2e-3
    assert document["environment"]["torch"] == torch.__version__
    assert document["dataset"]["class_names"] == ["circle", "cross", "square", "triangle"]
    kinds = [e["event"] for e in read_metrics(run_dir)]
    assert kinds.count("StepStats") == 16 and kinds.count("EpochEnd") == 4
    assert kinds[-1] == "RunEnd"
    best = load_checkpoint(run_dir / "last.pt")
    assert best["epoch"] == 4
    assert Path(end.best_model_path).is_file()
    last = epochs[-1]
    assert len(last.per_class_accuracy) == 4
    assert sum(map(sum, last.confusion)) == 12  # every val image counted once, not per crop


@pytest.mark.parametrize("images_on_device", [True, False])
def test_resume_matches_an_uninterrupted_run(shapes, tmp_path, images_on_device):
    config = tiny_config(shapes, tmp_path, crop_mode="standard", deterministic=True,
                         epochs=2, optimizer="sgd", lr=0.02, images_on_device=images_on_device)
    straight = train(config.replace(run_name="straight"))
    first = train(config.replace(run_name="first", epochs=1))
    resumed = train(config.replace(epochs=2, resume=first.last_checkpoint_path))

    assert straight.status == first.status == resumed.status == "completed"
    assert resumed.run_dir == first.run_dir  # a resumed run continues in its own folder
    a = load_checkpoint(Path(straight.run_dir) / "last.pt")["model"]
    b = load_checkpoint(Path(resumed.run_dir) / "last.pt")["model"]
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-5, atol=1e-6, msg=key)


def test_cancel_after_first_step_ends_cancelled_without_an_epoch(shapes, tmp_path):
    control = RunControl()

    class CancelOnFirstStep(Recorder):
        def on_step(self, event):
            super().on_step(event)
            control.request_cancel()

    recorder = CancelOnFirstStep()
    end = train(tiny_config(shapes, tmp_path), recorder, control)

    assert end.status == "cancelled"
    assert len(recorder.events("on_step")) == 1
    assert recorder.events("on_epoch_end") == []
    assert recorder.names()[-1] == "on_run_end"
    assert end.last_checkpoint_path == ""


def test_cancel_in_second_epoch_keeps_the_first_epochs_checkpoint(shapes, tmp_path):
    control = RunControl()

    class CancelInEpochTwo(Recorder):
        def on_step(self, event):
            super().on_step(event)
            if event.epoch == 2:
                control.request_cancel()

    end = train(tiny_config(shapes, tmp_path, epochs=3), CancelInEpochTwo(), control)

    assert end.status == "cancelled" and end.epochs_completed == 1
    assert load_checkpoint(end.last_checkpoint_path)["epoch"] == 1


def test_pause_holds_the_run_until_resumed(shapes, tmp_path):
    control = RunControl()
    step_times: list[float] = []

    class PauseAtFirstStep(Callback):
        def on_step(self, event):
            step_times.append(time.monotonic())
            if event.global_step == 1:
                control.pause()
                threading.Timer(0.6, control.resume).start()

    end = train(tiny_config(shapes, tmp_path, epochs=1), PauseAtFirstStep(), control)

    assert end.status == "completed"
    assert step_times[1] - step_times[0] >= 0.5


@pytest.mark.parametrize("images_on_device", [True, False])
def test_cached_features_train_the_head_exactly_like_recomputing(shapes, tmp_path,
                                                                 images_on_device):
    # One full batch per epoch: the update does not depend on sample order.
    config = tiny_config(shapes, tmp_path, finetune="last_layer", batch_size=32, epochs=2,
                         scheduler="none", images_on_device=images_on_device)
    cached_rec, plain_rec = Recorder(), Recorder()
    cached = train(config.replace(run_name="cached", cache_features=True), cached_rec)
    plain = train(config.replace(run_name="plain", cache_features=False), plain_rec)

    assert cached_rec.events("on_run_start")[0].feature_cache is True
    assert plain_rec.events("on_run_start")[0].feature_cache is False
    a = load_checkpoint(Path(cached.run_dir) / "last.pt")["model"]
    b = load_checkpoint(Path(plain.run_dir) / "last.pt")["model"]
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-4, atol=1e-5, msg=key)
    assert not torch.equal(a["fc.weight"], torch.zeros_like(a["fc.weight"]))
    losses_a = [e.train_loss for e in cached_rec.events("on_epoch_end")]
    losses_b = [e.train_loss for e in plain_rec.events("on_epoch_end")]
    assert losses_a == pytest.approx(losses_b, rel=1e-4)


@pytest.mark.parametrize("imbalance", ["weighted_loss", "weighted_sampler"])
def test_imbalance_options_train(tmp_path, imbalance):
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"),
                               per_class=[20, 4], size=(40, 32), layout="flat")
    recorder = Recorder()
    end = train(tiny_config(root, tmp_path / "runs", imbalance=imbalance, epochs=1,
                            crop_mode="standard", val_fraction=0.25), recorder)
    assert end.status == "completed"
    assert "imbalanced" in recorder.messages()


def test_an_undecodable_image_is_reported_and_left_out(tmp_path):
    root = write_shape_dataset(tmp_path / "data", per_class=6, size=(40, 32), layout="train_val",
                               val_per_class=2)
    broken = root / "train" / "circle" / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    recorder = Recorder()
    end = train(tiny_config(root, tmp_path / "runs", epochs=1), recorder)
    assert end.status == "completed"
    assert "broken.png" in recorder.messages()


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"data_root": "/no/such/folder"}, "/no/such/folder"),
        ({"lr": 0.0}, "Learning rate (lr): must be greater than 0"),
        ({"batch_size": 0, "crop_size": 64}, "batch_size"),
        ({"resume": "MISSING"}, "Resume from checkpoint (resume): checkpoint"),
        ({"device": "cuda:7"}, "cuda:7"),
    ],
)
def test_bad_input_fails_with_a_message_naming_it(shapes, tmp_path, changes, expected):
    recorder = Recorder()
    if changes.get("resume") == "MISSING":
        changes = {"resume": str(tmp_path / "missing.pt")}
    end = train(tiny_config(shapes, tmp_path).replace(**changes), recorder)
    assert end.status == "failed"
    assert expected in end.error
    assert recorder.names() == ["on_run_end"]
    assert "Training failed" in recorder.messages()


def test_corrupt_checkpoint_and_wrong_classes_are_refused(shapes, tmp_path):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a checkpoint")
    end = train(tiny_config(shapes, tmp_path, resume=str(corrupt)))
    assert end.status == "failed" and "corrupt.pt" in end.error

    first = train(tiny_config(shapes, tmp_path, epochs=1))
    other = write_shape_dataset(tmp_path / "other", classes=("ring", "bar"), per_class=4,
                                size=(40, 32), layout="train_val", val_per_class=2)
    end = train(tiny_config(other, tmp_path, resume=first.last_checkpoint_path))
    assert end.status == "failed"
    assert "classes" in end.error and "last.pt" in end.error
    assert load_checkpoint(first.last_checkpoint_path)["epoch"] == 1  # nothing lost


def test_single_class_folder_is_refused(tmp_path):
    root = write_shape_dataset(tmp_path / "data", classes=("circle",), per_class=6,
                               size=(40, 32), layout="flat")
    end = train(tiny_config(root, tmp_path / "runs"))
    assert end.status == "failed" and "at least 2 class folders" in end.error


def test_resume_keeps_the_learning_rate_schedule(tmp_path):
    # The default step schedule decays every 7 epochs: a run stopped after epoch 3 and resumed
    # must still decay at epoch 7 (and not at 3 + 7), epoch for epoch like a run of 8.
    data = write_shape_dataset(tmp_path / "data", per_class=2, size=(32, 32),
                               layout="train_val", val_per_class=1)
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", crop_mode="standard",
        resize_size=28, crop_size=28, batch_size=8, epochs=8, optimizer="sgd", lr=0.01,
        scheduler="step", workers=0, output_dir=str(tmp_path / "runs"), cache_images=False,
        seed=5,
    )
    assert (config.lr_step_size, config.lr_gamma) == (7, 0.1)  # the defaults under test
    straight, first, resumed = Recorder(), Recorder(), Recorder()
    train(config.replace(run_name="straight"), straight)
    stopped = train(config.replace(run_name="first", epochs=3), first)
    end = train(config.replace(resume=stopped.last_checkpoint_path), resumed)

    assert end.status == "completed" and end.epochs_completed == 8
    straight_lrs = [e.lr for e in straight.events("on_epoch_end")]
    resumed_lrs = [e.lr for e in first.events("on_epoch_end") + resumed.events("on_epoch_end")]
    assert len(straight_lrs) == len(resumed_lrs) == 8
    assert straight_lrs == pytest.approx(resumed_lrs, rel=1e-9)
    # And the schedule itself, as each epoch trained: epochs 1-7 at 0.01; the step after the
    # 7th decays it tenfold, so epoch 8 trains (and its steps report) 0.001.
    assert straight_lrs == pytest.approx([0.01] * 7 + [0.001], rel=1e-9)
    step_lrs = [s.lr for s in resumed.events("on_step")]
    assert step_lrs == pytest.approx([0.01] * 4 + [0.001], rel=1e-9)  # epochs 4..8


def _labels_reaching_the_loss(monkeypatch) -> list[tuple[list[int], object]]:
    """Spy on the training step's loss: the labels of every train batch and the class weights
    that came with them (the real loss is still computed)."""
    from workbench.core.training import steps

    seen: list[tuple[list[int], object]] = []
    real_loss = steps.multicrop_loss

    def recording_loss(logits, labels, crops, strategy, class_weights=None, label_smoothing=0.0):
        if torch.is_grad_enabled():  # training, not evaluation
            seen.append((labels.tolist(), class_weights))
        return real_loss(logits, labels, crops, strategy, class_weights, label_smoothing)

    monkeypatch.setattr(steps, "multicrop_loss", recording_loss)
    return seen


def _imbalanced_config(tmp_path, **changes) -> TrainConfig:
    # circle 24 images, square 4; a quarter of each held out: 18 and 3 to train on.
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"),
                               per_class=[24, 4], size=(32, 32), layout="flat")
    return TrainConfig(
        data_root=str(root), model="small_cnn", weights="none", crop_mode="standard",
        resize_size=28, crop_size=28, batch_size=7, epochs=3, optimizer="sgd", lr=0.01,
        scheduler="none", workers=0, val_fraction=0.25, output_dir=str(tmp_path / "runs"),
        cache_images=False, seed=2,
    ).replace(**changes)


@pytest.mark.parametrize("images_on_device", [True, False])
def test_the_weighted_sampler_evens_out_the_classes_of_the_batches(tmp_path, monkeypatch,
                                                                   images_on_device):
    seen = _labels_reaching_the_loss(monkeypatch)
    config = _imbalanced_config(tmp_path, images_on_device=images_on_device)
    assert train(config.replace(run_name="plain")).status == "completed"
    plain = [label for labels, _ in seen for label in labels]
    seen.clear()
    end = train(config.replace(run_name="sampled", imbalance="weighted_sampler"))
    sampled = [label for labels, _ in seen for label in labels]

    assert end.status == "completed"
    assert len(plain) == len(sampled) == 3 * 21  # as many samples an epoch either way
    assert plain.count(1) == 3 * 3  # every image once an epoch: 3 of 21 are squares
    # Drawn in inverse proportion to the class sizes: about half are squares.
    assert 0.35 <= sampled.count(1) / len(sampled) <= 0.65
    assert all(weights is None for _, weights in seen)  # the sampler, not the loss, weighs


def test_the_class_weighted_loss_weighs_the_loss_of_the_rare_class(tmp_path, monkeypatch):
    seen = _labels_reaching_the_loss(monkeypatch)
    config = _imbalanced_config(tmp_path, epochs=1)
    plain, weighted = Recorder(), Recorder()
    train(config.replace(run_name="plain"), plain)
    assert all(weights is None for _, weights in seen)
    seen.clear()
    end = train(config.replace(run_name="weighted", imbalance="weighted_loss"), weighted)

    assert end.status == "completed"
    weights = seen[0][1]
    # 1/count, scaled to a mean of 1: 18 circles and 3 squares -> 2/7 and 12/7.
    torch.testing.assert_close(weights.cpu(), torch.tensor([2 / 7, 12 / 7]))
    # Same start, same batches: only the weighting can change the first step's loss.
    first_plain = plain.events("on_step")[0]
    first_weighted = weighted.events("on_step")[0]
    assert abs(first_plain.loss - first_weighted.loss) > 1e-4
