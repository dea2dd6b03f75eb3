"""Checkpoint and best-model files: round trips, RNG restore, and every way a file can be bad."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from workbench.core.models.building import SmallCNN, build_model
from workbench.core.models.checkpoint_format import (
    CheckpointError,
    load_checkpoint,
    load_model_file,
    restore_rng_state,
    rng_state,
)
from workbench.core.runs.atomic_io import atomic_torch_save
from workbench.core.runs.config import TrainConfig

CLASSES = ["circle", "square", "triangle"]


class ArbitraryObject:
    """Something a safe (weights_only) load must refuse."""


def _config() -> TrainConfig:
    return TrainConfig(model="small_cnn", weights="none", crop_size=28, resize_size=32,
                       crop_mode="standard", epochs=3)


def _trained_parts() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = build_model(_config().replace(finetune="full"), len(CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.rand(4, 1, 28, 28)).sum().backward()
    optimizer.step()
    return model, optimizer


def _checkpoint(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                best: dict[str, torch.Tensor] | None) -> dict[str, Any]:
    return {
        "format": "workbench-checkpoint", "version": 1, "model": model.state_dict(),
        "optimizer": optimizer.state_dict(), "scheduler": None, "scaler": None, "epoch": 2,
        "best_val_accuracy": 0.75, "best_epoch": 1, "best_model": best, "rng": rng_state(),
        "class_names": CLASSES, "config": _config().to_dict(),
    }


def _model_file(state: dict[str, torch.Tensor]) -> dict[str, Any]:
    return {"format": "workbench-model", "version": 1, "model": state, "class_names": CLASSES,
            "config": _config().to_dict(), "epoch": 1, "val_accuracy": 0.75}


def _assert_same_weights(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    for key, value in state.items():
        assert torch.equal(model.state_dict()[key], value), key


def test_checkpoint_round_trip_resumes_optimizer(tmp_path: Path) -> None:
    model, optimizer = _trained_parts()
    path = tmp_path / "last.pt"
    atomic_torch_save(_checkpoint(model, optimizer, best=None), path)

    loaded = load_checkpoint(path)

    assert loaded["epoch"] == 2 and loaded["best_epoch"] == 1
    assert loaded["class_names"] == CLASSES
    assert TrainConfig.from_dict(loaded["config"]) == _config()
    fresh = SmallCNN(len(CLASSES))
    fresh.load_state_dict(loaded["model"])
    resumed = torch.optim.SGD(fresh.parameters(), lr=0.1, momentum=0.9)
    resumed.load_state_dict(loaded["optimizer"])
    buffers = [resumed.state[p]["momentum_buffer"] for p in fresh.parameters()]
    originals = [optimizer.state[p]["momentum_buffer"] for p in model.parameters()]
    for got, want in zip(buffers, originals, strict=True):
        assert torch.equal(got, want)


def test_load_model_file_prefers_best_model_of_a_checkpoint(tmp_path: Path) -> None:
    model, optimizer = _trained_parts()
    best = SmallCNN(len(CLASSES)).state_dict()
    path = tmp_path / "last.pt"
    atomic_torch_save(_checkpoint(model, optimizer, best=best), path)

    loaded, names, config = load_model_file(path)

    _assert_same_weights(loaded, best)
    assert names == CLASSES and config == _config()
    assert not loaded.training


def test_load_model_file_reads_a_best_model_file(tmp_path: Path) -> None:
    model, _ = _trained_parts()
    path = tmp_path / "best.pt"
    atomic_torch_save(_model_file(model.state_dict()), path)

    loaded, names, config = load_model_file(path)

    _assert_same_weights(loaded, model.state_dict())
    assert names == CLASSES and config.model == "small_cnn"
    x = torch.rand(2, 1, 28, 28)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model.eval()(x))


def test_model_file_whose_weights_do_not_fit_its_classes(tmp_path: Path) -> None:
    path = tmp_path / "best.pt"
    atomic_torch_save(_model_file(SmallCNN(5).state_dict()), path)  # 5 outputs, 3 names
    with pytest.raises(CheckpointError, match="do not fit") as info:
        load_model_file(path)
    assert str(path) in str(info.value)


def test_rng_state_survives_safe_save_and_restores_the_same_numbers(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    random.gauss(0, 1)  # leaves a cached second gaussian in Python's state
    path = tmp_path / "rng.pt"
    torch.save(rng_state(), path)

    def draw() -> tuple[Any, ...]:
        return (random.random(), random.gauss(0, 1), np.random.rand(4).tolist(),
                np.random.normal(size=2).tolist(), torch.rand(5), torch.randn(3))

    first = draw()
    restore_rng_state(torch.load(path, weights_only=True))
    second = draw()
    assert first[:4] == second[:4]
    assert torch.equal(first[4], second[4]) and torch.equal(first[5], second[5])


def _write_truncated(path: Path) -> None:
    model, optimizer = _trained_parts()
    atomic_torch_save(_checkpoint(model, optimizer, best=None), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _write_missing_keys(path: Path) -> None:
    model, optimizer = _trained_parts()
    data = _checkpoint(model, optimizer, best=None)
    del data["optimizer"], data["epoch"]
    torch.save(data, path)


def _write_newer(path: Path) -> None:
    model, optimizer = _trained_parts()
    torch.save({**_checkpoint(model, optimizer, best=None), "version": 2}, path)


BAD_FILES = {
    "missing": (lambda path: None, "does not exist"),
    "folder": (lambda path: path.mkdir(), "folder"),
    "empty": (lambda path: path.write_bytes(b""), "empty"),
    "garbage": (lambda path: path.write_bytes(b"\x13\x37 not torch" * 100), "corrupt"),
    "truncated": (_write_truncated, "truncated"),
    "plain_state_dict": (lambda path: torch.save(SmallCNN(3).state_dict(), path),
                         "not a workbench"),
    "unsafe_pickle": (lambda path: torch.save({"format": ArbitraryObject()}, path),
                      "weights_only"),
    "newer_version": (_write_newer, "newer workbench"),
    "missing_keys": (_write_missing_keys, "missing optimizer, epoch"),
    "best_model_file": (lambda path: torch.save(_model_file(SmallCNN(3).state_dict()), path),
                        "cannot resume"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_checkpoint_files_raise_checkpoint_error_naming_the_file(
    tmp_path: Path, case: str
) -> None:
    write, reason = BAD_FILES[case]
    path = tmp_path / f"{case}.pt"
    write(path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert str(path) in message
    assert reason in message


def test_load_model_file_refuses_a_non_workbench_file(tmp_path: Path) -> None:
    path = tmp_path / "plain.pt"
    torch.save(SmallCNN(3).state_dict(), path)
    with pytest.raises(CheckpointError, match="not a workbench"):
        load_model_file(path)
