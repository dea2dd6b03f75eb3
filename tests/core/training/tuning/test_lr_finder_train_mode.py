"""The LR finder sweeps the network the run trains: with last-layer fine-tuning the frozen
backbone's BatchNorm keeps its running statistics during the sweep, as it does in training."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.building import apply_finetune_mode, build_model
from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning import lr_finder
from workbench.core.training.tuning.lr_finder import find_lr_for_config, lr_range_test


def _backbone_statistics(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in model.named_buffers()
            if not name.startswith("fc.")}


def test_a_last_layer_sweep_leaves_the_frozen_backbone_statistics_alone():
    torch.manual_seed(0)
    config = TrainConfig(model="small_cnn", weights="none", finetune="last_layer")
    model = build_model(config, 3)
    optimizer = torch.optim.SGD(apply_finetune_mode(model, "last_layer"), lr=0.01)
    before = _backbone_statistics(model)
    # Bright images: batch statistics far from the initial running ones (mean 0, var 1).
    batches = [(torch.rand(4, 1, 28, 28) * 5 + 3, torch.tensor([0, 1, 2, 0]))
               for _ in range(2)]
    changed_during_sweep: list[list[str]] = []

    def inspect(_step: int, _lr: float, _loss: float) -> None:
        now = _backbone_statistics(model)
        changed_during_sweep.append([name for name in before
                                     if not torch.equal(now[name], before[name])])

    result = lr_range_test(model, optimizer, batches, nn.functional.cross_entropy,
                           start_lr=1e-4, end_lr=1e-2, steps=4, on_step=inspect,
                           finetune="last_layer")

    assert len(result.lrs) == len(changed_during_sweep) == 4
    assert changed_during_sweep == [[]] * 4  # not one running mean, var or count moved


def test_find_lr_uses_the_configs_fine_tune_mode(tmp_path, monkeypatch):
    data = write_shape_dataset(tmp_path / "shapes", per_class=4, size=(32, 32),
                               layout="train_val", val_per_class=1)
    modes: list[str] = []
    real = lr_finder.set_train_mode

    def recording(model: nn.Module, finetune: str) -> None:
        modes.append(finetune)
        real(model, finetune)

    monkeypatch.setattr(lr_finder, "set_train_mode", recording)
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                         finetune="last_layer", crop_mode="standard", resize_size=28,
                         crop_size=28, batch_size=4, workers=0, device="cpu",
                         cache_dir=str(tmp_path / "cache"), output_dir=str(tmp_path / "runs"))

    result = find_lr_for_config(config, steps=2, start_lr=1e-4, end_lr=1e-3)

    assert len(result.lrs) == 2
    assert modes == ["last_layer"]


@pytest.mark.parametrize("finetune", ["full", "last_layer"])
def test_the_head_trains_in_train_mode(finetune):
    model = build_model(TrainConfig(model="small_cnn", weights="none", finetune=finetune), 2)
    optimizer = torch.optim.SGD(apply_finetune_mode(model, finetune), lr=0.01)
    modes: list[tuple[bool, bool]] = []
    lr_range_test(model, optimizer, [(torch.rand(2, 1, 28, 28), torch.tensor([0, 1]))],
                  nn.functional.cross_entropy, start_lr=1e-4, end_lr=1e-3, steps=2,
                  on_step=lambda *_: modes.append((model.fc.training, model.features.training)),
                  finetune=finetune)
    assert modes == [(True, finetune == "full")] * 2
