"""What the optimiser gets and does, with answers worked out by hand: which parameters train
and at which learning rate in each fine-tune mode and stage, that weight decay reaches every
parameter (biases and BatchNorm weights too), which parameters torch's fused update is asked
for, and the zeroed momentum buffers fused SGD starts from."""

from __future__ import annotations

import pytest
import torch

from workbench.core.models.building import SmallCNN
from workbench.core.runs.config import TrainConfig
from workbench.core.training.optimisers import (
    _can_fuse,
    apply_finetune_stage,
    build_optimizer,
    optimiser_params,
    stage_mode,
)

HEAD = ["fc.weight", "fc.bias"]
BACKBONE = ["features.0.weight", "features.1.weight", "features.1.bias", "features.4.weight",
            "features.5.weight", "features.5.bias", "features.10.weight", "features.10.bias"]


def _model() -> SmallCNN:
    torch.manual_seed(0)
    return SmallCNN(3)


def _names(model: torch.nn.Module, params: list[torch.nn.Parameter]) -> list[str]:
    by_id = {id(param): name for name, param in model.named_parameters()}
    return [by_id[id(param)] for param in params]


def _trainable(model: torch.nn.Module) -> list[str]:
    return [name for name, param in model.named_parameters() if param.requires_grad]


def _config(finetune: str, **changes) -> TrainConfig:
    return TrainConfig(model="small_cnn", weights="none", finetune=finetune, lr=0.1,
                       momentum=0.9, weight_decay=0.01, head_epochs=2,
                       backbone_lr_factor=0.25).replace(**changes)


def test_full_and_last_layer_hand_over_every_parameter_or_the_heads_alone() -> None:
    model = _model()
    assert _names(model, optimiser_params(model, _config("last_layer"))) == HEAD
    assert _trainable(model) == HEAD
    assert _names(model, optimiser_params(model, _config("full"))) == BACKBONE + HEAD
    assert _trainable(model) == BACKBONE + HEAD


def test_head_then_full_gives_two_named_groups_at_their_own_rates_all_trainable() -> None:
    model = _model()
    model.requires_grad_(False)  # as a head stage leaves it: the groups unfreeze everything
    groups = optimiser_params(model, _config("head_then_full"))
    assert [group["name"] for group in groups] == ["head", "backbone"]
    assert _names(model, groups[0]["params"]) == HEAD
    assert _names(model, groups[1]["params"]) == BACKBONE
    assert groups[0]["lr"] == 0.1 and groups[1]["lr"] == 0.1 * 0.25
    assert _trainable(model) == BACKBONE + HEAD
    optimizer = build_optimizer(_config("head_then_full"), groups)
    assert [(group["name"], group["lr"]) for group in optimizer.param_groups] == [
        ("head", 0.1), ("backbone", 0.025)]


@pytest.mark.parametrize("name", ["sgd", "adamw"])
def test_weight_decay_shrinks_every_parameter_at_its_groups_rate(name: str) -> None:
    """With zero gradients the one step left is weight decay, the same for every parameter:
    biases and BatchNorm weights are decayed as the convolution and Linear weights are.
    SGD: w - lr * wd * w (the first momentum buffer is the decayed gradient itself);
    AdamW: w * (1 - lr * wd), its Adam part 0 / (0 + eps) = 0."""
    model = _model()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.5)  # no weight at zero, so a parameter left out shows
    before = {key: param.detach().clone() for key, param in model.named_parameters()}
    config = _config("head_then_full", optimizer=name)
    optimizer = build_optimizer(config, optimiser_params(model, config))
    for param in model.parameters():
        param.grad = torch.zeros_like(param)
    optimizer.step()
    for key, param in model.named_parameters():
        lr = 0.1 if key in HEAD else 0.025
        expected = before[key] * (1 - lr * 0.01)
        assert torch.allclose(param.detach(), expected, rtol=1e-6, atol=0), key
        assert not torch.equal(param.detach(), before[key]), key


def test_fusing_is_asked_for_floating_parameters_of_one_cpu_or_cuda_device_only() -> None:
    cpu = torch.nn.Parameter(torch.ones(2))
    meta = torch.nn.Parameter(torch.ones(2, device="meta"))
    whole = torch.nn.Parameter(torch.ones(2, dtype=torch.int64), requires_grad=False)
    assert _can_fuse([cpu, torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))]) is True
    assert _can_fuse([]) is None
    assert _can_fuse([meta]) is None  # a device type torch has no fused kernel for
    assert _can_fuse([cpu, meta]) is None  # two device types
    assert _can_fuse([cpu, whole]) is None  # not every parameter floating
    assert _can_fuse([whole]) is None
    # What build_optimizer passes on, for both optimisers and for parameter groups.
    for name in ("sgd", "adamw"):
        config = _config("full", optimizer=name)
        assert build_optimizer(config, [cpu]).param_groups[0]["fused"] is True, name
        assert build_optimizer(config, [meta]).param_groups[0]["fused"] is None, name
        groups = [{"params": [cpu], "lr": 0.1}, {"params": [meta], "lr": 0.1}]
        assert all(group["fused"] is None
                   for group in build_optimizer(config, groups).param_groups), name


def test_fused_sgd_with_momentum_starts_from_zeroed_buffers_of_each_parameter() -> None:
    model = _model()
    config = _config("head_then_full")
    optimizer = build_optimizer(config, optimiser_params(model, config))
    params = list(model.parameters())
    assert len(optimizer.state) == len(params)
    for param in params:
        buffer = optimizer.state[param]["momentum_buffer"]
        assert buffer.shape == param.shape and buffer.dtype == param.dtype
        assert torch.count_nonzero(buffer) == 0
        assert buffer.data_ptr() != param.data_ptr()
    # Without momentum there is nothing to start; AdamW makes its own state.
    assert len(build_optimizer(config.replace(momentum=0.0), params).state) == 0
    assert len(build_optimizer(config.replace(optimizer="adamw"), params).state) == 0


def test_each_epoch_of_head_then_full_trains_its_stages_parameters_and_layers() -> None:
    config = _config("head_then_full")  # head_epochs=2
    assert [stage_mode(config, epoch) for epoch in range(4)] == [
        "last_layer", "last_layer", "full", "full"]
    assert stage_mode(_config("full"), 0) == "full"
    assert stage_mode(_config("last_layer"), 5) == "last_layer"
    model = _model()
    for epoch, mode in ((0, "last_layer"), (1, "last_layer"), (2, "full"), (3, "full")):
        model.eval()
        assert apply_finetune_stage(model, config, epoch) == mode, epoch
        if mode == "last_layer":
            assert _trainable(model) == HEAD, epoch
            # The frozen backbone's BatchNorm and dropout stay in eval mode.
            assert [name for name, m in model.named_modules() if m.training] == ["", "fc"]
        else:
            assert _trainable(model) == BACKBONE + HEAD, epoch
            assert all(m.training for m in model.modules()), epoch
    assert apply_finetune_stage(model, _config("last_layer"), 3) == "last_layer"
    assert _trainable(model) == HEAD
