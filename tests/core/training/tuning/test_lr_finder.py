"""The learning-rate range test: real steps on generated images, and nothing left changed."""

from __future__ import annotations

import math
import random

import pytest
import torch

from workbench.cli import main
from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.data_pipeline import build_data_pipeline
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.building import build_model
from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning.lr_finder import lr_range_test, suggest_lr


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    return write_shape_dataset(tmp_path_factory.mktemp("shapes"), per_class=8, size=(32, 32),
                               layout="train_val", val_per_class=2)


def _config(data, tmp_path, **changes) -> TrainConfig:
    return TrainConfig(data_root=str(data), model="small_cnn", weights="none", finetune="full",
                       crop_mode="standard", resize_size=32, crop_size=28, batch_size=8,
                       workers=0, device="cpu", cache_dir=str(tmp_path / "cache"),
                       output_dir=str(tmp_path / "runs")).replace(**changes)


def test_the_test_leaves_the_model_and_the_optimiser_as_they_were(shapes, tmp_path):
    config = _config(shapes, tmp_path)
    pipeline = build_data_pipeline(config, scan_dataset(config.data_root), "cpu")
    preparer = BatchPreparer(pipeline.mean, pipeline.std, "cpu", channels_last=False)
    batches = [preparer(images, labels) for images, labels in pipeline.train_loader]
    model = build_model(config, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_function = torch.nn.functional.cross_entropy
    loss_function(model(batches[0][0]), batches[0][1]).backward()
    optimizer.step()  # momentum buffers exist: they must come back too
    weights = {name: value.clone() for name, value in model.state_dict().items()}
    momentum = {index: state["momentum_buffer"].clone()
                for index, state in optimizer.state_dict()["state"].items()}
    model.eval()

    result = lr_range_test(model, optimizer, batches, loss_function, start_lr=1e-4,
                           end_lr=1.0, steps=12)

    assert len(result.lrs) == len(result.losses) >= 2
    assert result.lrs[0] == pytest.approx(1e-4)
    assert result.lrs[1] / result.lrs[0] == pytest.approx((1.0 / 1e-4) ** (1 / 11))
    for name, value in model.state_dict().items():
        assert torch.equal(value, weights[name]), name
    for index, state in optimizer.state_dict()["state"].items():
        assert torch.equal(state["momentum_buffer"], momentum[index])
    assert optimizer.param_groups[0]["lr"] == 0.01
    assert not model.training  # its mode too


def test_the_suggestion_is_where_the_loss_falls_fastest():
    lrs = [10 ** (-6 + 0.1 * i) for i in range(60)]
    # A loss that falls most steeply around lr 1e-3 and rises after 1e-1.
    losses = [2.0 - 1.5 / (1 + math.exp(-3 * (math.log10(lr) + 3))) + max(0.0, math.log10(lr)
              + 1) * 4 for lr in lrs]
    assert suggest_lr(lrs, losses) == pytest.approx(1e-3, rel=0.3)
    assert suggest_lr(lrs, [1.0 + 0.01 * i for i in range(60)]) is None


def test_lr_find_command_trains_and_prints_a_suggestion(shapes, tmp_path, capsys):
    code = main(["lr-find", "--data-root", str(shapes), "--model", "small_cnn",
                 "--batch-size", "8", "--workers", "0", "--device", "cpu", "--steps", "30",
                 "--start-lr", "1e-4", "--end-lr", "10", "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "suggested lr" in out and "use it with: --lr" in out
    suggested = float(out.split("--lr ")[1].split()[0])
    assert 1e-4 <= suggested <= 10


def test_noise_at_the_low_end_does_not_win_over_the_real_fall():
    rng = random.Random(0)
    lrs = [10 ** (-7 + 0.1 * i) for i in range(70)]
    # Flat with noise (a few hundredths from step to step) up to 1e-4, then a steady fall of
    # 1.5 to a minimum at 1e-2, then divergence: the fall, not the noise, is the suggestion.
    losses = []
    for lr in lrs:
        decade = math.log10(lr)
        fall = min(max(decade + 4, 0.0), 2.0) * 0.75
        rise = max(0.0, decade + 2) * 5
        losses.append(2.3 - fall + rise + rng.uniform(-0.04, 0.04))
    losses[8] -= 0.25  # one noisy drop between neighbours, steeper than the fall per step
    suggested = suggest_lr(lrs, losses)
    assert suggested is not None and 1e-4 <= suggested <= 1e-2, suggested
