"""Fine-tune mode head_then_full on real tiny runs: the head learns alone on the frozen
backbone for head_epochs, then the whole network learns with the backbone at lr * factor."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torchvision

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.building import SmallCNN
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train
from workbench.core.training.optimisers import build_optimizer, optimiser_params

CLASSES = ("circle", "square", "triangle")
HEAD = ("fc.weight", "fc.bias")


class _Messages(Callback):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_message(self, event):
        self.texts.append(event.text)


class _StopAfterFirstEpoch(Callback):
    def __init__(self, control: RunControl) -> None:
        self.control = control

    def on_epoch_end(self, event):
        self.control.request_stop_after_epoch()


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Path, Path]:
    """A three-class folder and a resnet18 state dict of our own to start from."""
    work = tmp_path_factory.mktemp("head_then_full")
    data = write_shape_dataset(work / "data", classes=CLASSES, per_class=4, size=(36, 36),
                               layout="train_val", val_per_class=1)
    torch.manual_seed(0)
    start = torchvision.models.resnet18(weights=None, num_classes=len(CLASSES))
    weights = work / "start.pt"
    torch.save(start.state_dict(), weights)
    return data, weights


def _config(data: Path, weights: Path, output: Path, **changes) -> TrainConfig:
    base = TrainConfig(
        data_root=str(data), model="resnet18", weights="file", weights_file=str(weights),
        finetune="head_then_full", head_epochs=1, backbone_lr_factor=0.1, epochs=2,
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=6, optimizer="sgd",
        lr=0.05, momentum=0.9, scheduler="none", workers=0, cache_images=False,
        images_on_device=False, amp=False, channels_last=False, output_dir=str(output), seed=1)
    return base.replace(**changes)


def _backbone(state: dict) -> dict:
    return {k: v for k, v in state.items() if k.split(".")[0] != "fc"}


def _changed(a: dict, b: dict) -> list[str]:
    return [k for k in a if a[k].is_floating_point() and not torch.equal(a[k], b[k])]


def test_head_learns_alone_then_everything_and_a_resume_continues_into_stage_two(
        setup, tmp_path):
    """On the small CNN (BatchNorm in its backbone, seconds a run) from weights of our own."""
    data, _ = setup
    torch.manual_seed(0)
    weights = tmp_path / "small_cnn.pt"
    torch.save(SmallCNN(len(CLASSES), in_channels=1).state_dict(), weights)
    start = torch.load(weights, weights_only=True)
    config = _config(data, weights, tmp_path / "runs", model="small_cnn")

    control = RunControl()
    first = train(config, _StopAfterFirstEpoch(control), control)
    after_head = load_checkpoint(first.last_checkpoint_path)
    assert after_head["epoch"] == 1 and after_head["finetune_stage"] == "head"
    # Stage 1: every backbone tensor (BatchNorm running statistics too) as it started.
    assert _changed(_backbone(start), _backbone(after_head["model"])) == []
    assert all(not torch.equal(start[k], after_head["model"][k]) for k in HEAD)

    messages = _Messages()
    resumed = train(config.replace(resume=first.last_checkpoint_path), messages)
    assert resumed.status == "completed"
    assert any("next epoch trains the whole network" in text for text in messages.texts)
    after_full = load_checkpoint(resumed.last_checkpoint_path)
    assert after_full["epoch"] == 2 and after_full["finetune_stage"] == "full"
    moved = _changed(_backbone(after_head["model"]), _backbone(after_full["model"]))
    assert "features.0.weight" in moved and "features.10.weight" in moved
    assert "features.1.running_mean" in moved  # BatchNorm trains in stage 2
    assert all(not torch.equal(after_head["model"][k], after_full["model"][k]) for k in HEAD)
    groups = after_full["optimizer"]["param_groups"]
    assert [(g["name"], g["lr"]) for g in groups] == [("head", 0.05),
                                                      ("backbone", pytest.approx(0.005))]

    # The resumed run is the uninterrupted one.
    straight = train(config.replace(output_dir=str(tmp_path / "straight")), _Messages())
    reference = load_checkpoint(straight.last_checkpoint_path)["model"]
    for name, value in reference.items():
        torch.testing.assert_close(after_full["model"][name], value, rtol=1e-5, atol=1e-6,
                                   msg=name)


def test_the_backbone_steps_at_lr_times_the_factor(setup):
    """One SGD step without momentum or decay: each parameter moves by its group's lr times
    its gradient, the backbone's lr being lr * factor."""
    data, weights = setup
    config = _config(data, weights, Path("unused"), momentum=0.0, weight_decay=0.0, lr=0.2,
                     backbone_lr_factor=0.25)
    model = torchvision.models.resnet18(weights=None, num_classes=3)
    optimizer = build_optimizer(config, optimiser_params(model, config))
    assert [g["lr"] for g in optimizer.param_groups] == [0.2, pytest.approx(0.05)]
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    model(torch.randn(2, 3, 32, 32)).square().mean().backward()
    grads = {k: v.grad.clone() for k, v in model.named_parameters()}
    optimizer.step()
    for name, param in model.named_parameters():
        lr = 0.2 if name.startswith("fc.") else 0.05
        torch.testing.assert_close(param.detach(), before[name] - lr * grads[name], msg=name)


@pytest.mark.parametrize("changes, message", [
    ({"head_epochs": 2, "epochs": 2},
     "Head-only epochs (head_epochs): must be at least 1 and fewer than epochs (2)"),
    ({"head_epochs": 0}, "Head-only epochs (head_epochs): must be at least 1"),
    ({"backbone_lr_factor": 0.0},
     "Backbone lr factor (backbone_lr_factor): must be more than 0 and at most 1 (got 0.0)"),
    ({"backbone_lr_factor": 1.5},
     "Backbone lr factor (backbone_lr_factor): must be more than 0 and at most 1 (got 1.5)"),
])
def test_bad_stage_settings_are_named(setup, tmp_path, changes, message):
    data, weights = setup
    problems = _config(data, weights, tmp_path, **changes).validate()
    assert any(problem.startswith(message) for problem in problems), problems


def test_stage_settings_are_ignored_by_the_other_modes(setup, tmp_path):
    data, weights = setup
    config = _config(data, weights, tmp_path, finetune="full", head_epochs=5, epochs=2,
                     backbone_lr_factor=3.0)
    assert config.validate() == []


def test_the_lr_finder_sweeps_the_second_stage_with_the_backbone_at_its_factor(setup):
    """Every step of the sweep trains every layer; the backbone's lr is the swept lr times the
    factor, the head's the swept lr itself."""
    from workbench.core.training.tuning.lr_finder import lr_range_test

    data, weights = setup
    config = _config(data, weights, Path("unused"), backbone_lr_factor=0.2)
    model = torchvision.models.resnet18(weights=None, num_classes=3)
    optimizer = build_optimizer(config, optimiser_params(model, config))
    seen: list[tuple[float, float, float]] = []

    def on_step(_step: int, lr: float, _loss: float) -> None:
        head, backbone = optimizer.param_groups
        seen.append((lr, head["lr"], backbone["lr"]))

    batch = (torch.randn(4, 3, 32, 32), torch.tensor([0, 1, 2, 0]))
    result = lr_range_test(model, optimizer, [batch], torch.nn.functional.cross_entropy,
                           start_lr=1e-4, end_lr=1e-2, steps=3, on_step=on_step,
                           finetune=config.finetune)
    assert [lr for lr, _, _ in seen] == pytest.approx([1e-4, 1e-3, 1e-2])
    for lr, head_lr, backbone_lr in seen:
        assert head_lr == pytest.approx(lr) and backbone_lr == pytest.approx(0.2 * lr)
    assert result.lrs == pytest.approx([1e-4, 1e-3, 1e-2])
    assert all(param.requires_grad for param in model.parameters())
    # Put back afterwards, the groups' own rates included.
    assert [g["lr"] for g in optimizer.param_groups] == [0.05, pytest.approx(0.01)]
