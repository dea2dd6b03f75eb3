"""Checkpoint files from anywhere, through every door that reads one: ``--resume``, weights
``file`` and ``load_model_file``. Each bad file is refused with a message naming it and the
reason, nothing in it runs, and a file that fits is loaded strictly (or, for weights ``file``,
with the head left fresh and said so)."""

from __future__ import annotations

import ast
import os
import pickle
import random
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

import workbench
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models.building import build_model
from workbench.core.models.checkpoint_format import CheckpointError, load_model_file
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train

CLASSES = ("circle", "cross", "square", "triangle")


class Recorder(Callback):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_message(self, event):
        self.texts.append(event.text)


class RunsCode:
    """Pickles to a call of ``function(*args)``: what a hostile checkpoint would hide."""

    def __init__(self, function: Callable, *args: object) -> None:
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    return write_shape_dataset(tmp_path_factory.mktemp("data") / "shapes", classes=CLASSES,
                               per_class=4, size=(36, 32), layout="train_val", val_per_class=2)


def base_config(shapes: Path, output: Path) -> TrainConfig:
    return TrainConfig(
        data_root=str(shapes), model="resnet18", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=8, epochs=1,
        workers=0, output_dir=str(output), cache_images=False, device="cpu", amp=False,
        channels_last=False, scheduler="none",
    )


@pytest.fixture(scope="module")
def good_run(shapes, tmp_path_factory):
    """A real one-epoch run: its last.pt and best_model.pt are the intact originals."""
    end = train(base_config(shapes, tmp_path_factory.mktemp("runs")))
    assert end.status == "completed", end.error
    return end


def _write_malicious(path: Path, marker: Path, legacy: bool = False) -> None:
    payload = {"model": RunsCode(os.system, f"touch {marker}")}
    torch.save(payload, path, _use_new_zipfile_serialization=not legacy)


def _write_exec_inside_workbench_file(path: Path, marker: Path, good: Path) -> None:
    data = torch.load(good, weights_only=True)
    data["config"] = RunsCode(exec, f"open({str(marker)!r}, 'w').close()")
    torch.save(data, path)


def _write_raw_pickle(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps(RunsCode(os.system, f"touch {marker}"), protocol=2))


def _write_torchscript(path: Path) -> None:
    with pytest.warns(FutureWarning):  # torch.jit.script is deprecated, yet users have files
        torch.jit.save(torch.jit.script(nn.Linear(3, 2)), str(path))


def _write_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "holiday photos")


def _modified(good: Path, path: Path, **changes: object) -> None:
    data = torch.load(good, weights_only=True)
    data.update(changes)
    torch.save(data, path)


def _small_cnn_weights() -> dict[str, torch.Tensor]:
    config = TrainConfig(model="small_cnn", weights="none")
    return build_model(config, len(CLASSES)).state_dict()


def _three_class_head(good: Path) -> dict[str, torch.Tensor]:
    state = dict(torch.load(good, weights_only=True)["model"])
    state["fc.weight"], state["fc.bias"] = torch.zeros(3, 512), torch.zeros(3)
    return state


def make_file(kind: str, folder: Path, good_run) -> Path:
    """Write the ``kind`` of file into ``folder``; the name says what it is."""
    good, best = Path(good_run.last_checkpoint_path), Path(good_run.best_model_path)
    marker = folder / "code_ran.marker"
    path = folder / f"{kind}.pt"
    writers: dict[str, Callable[[], None]] = {
        "empty": lambda: path.write_bytes(b""),
        "truncated": lambda: path.write_bytes(good.read_bytes()[: good.stat().st_size // 2]),
        "random_bytes": lambda: path.write_bytes(random.Random(5).randbytes(4096)),
        "json": lambda: path.write_text('{"model": {"fc.weight": [1, 2]}}'),
        "zip_not_torch": lambda: _write_zip(path),
        "foreign_state_dict": lambda: torch.save(nn.Linear(3, 2).state_dict(), path),
        "os_system_pickle": lambda: _write_malicious(path, marker),
        "os_system_legacy_format": lambda: _write_malicious(path, marker, legacy=True),
        "exec_inside_workbench_file": lambda: _write_exec_inside_workbench_file(
            path, marker, good),
        "raw_pickle": lambda: _write_raw_pickle(path, marker),
        "torchscript": lambda: _write_torchscript(path),
        "other_class_count": lambda: _modified(good, path, model=_three_class_head(good)),
        "other_architecture": lambda: _modified(good, path, model=_small_cnn_weights()),
        "newer_version": lambda: _modified(good, path, version=99),
        "missing_keys": lambda: _without_key(good, path, "optimizer"),
        "best_model_file": lambda: path.write_bytes(best.read_bytes()),
        "folder": lambda: path.mkdir(),
    }
    writers[kind]()
    return path


def _without_key(good: Path, path: Path, key: str) -> None:
    data = torch.load(good, weights_only=True)
    del data[key]
    torch.save(data, path)


CODE_EXECUTION = "could run code, so it was refused"
NOT_TORCH = "not a PyTorch file"
# What each door says about each kind of file; None: the file is accepted.
EXPECTED: dict[str, dict[str, str | None]] = {
    "empty": dict.fromkeys(("resume", "weights_file", "load_model_file"), "empty"),
    "truncated": dict.fromkeys(("resume", "weights_file", "load_model_file"), "truncated"),
    "random_bytes": dict.fromkeys(("resume", "weights_file", "load_model_file"), NOT_TORCH),
    "json": dict.fromkeys(("resume", "weights_file", "load_model_file"), NOT_TORCH),
    "zip_not_torch": dict.fromkeys(("resume", "weights_file", "load_model_file"),
                                   "zip archive, but not a PyTorch file"),
    "foreign_state_dict": {"resume": "not a workbench checkpoint",
                           "weights_file": "matches no layer",
                           "load_model_file": "not a workbench checkpoint"},
    "os_system_pickle": dict.fromkeys(("resume", "weights_file", "load_model_file"),
                                      CODE_EXECUTION),
    "os_system_legacy_format": dict.fromkeys(("resume", "weights_file", "load_model_file"),
                                             CODE_EXECUTION),
    "exec_inside_workbench_file": dict.fromkeys(("resume", "weights_file", "load_model_file"),
                                                CODE_EXECUTION),
    "raw_pickle": dict.fromkeys(("resume", "weights_file", "load_model_file"), CODE_EXECUTION),
    "torchscript": dict.fromkeys(("resume", "weights_file", "load_model_file"),
                                 "TorchScript program"),
    "other_class_count": {"resume": "does not fit", "weights_file": None,
                          "load_model_file": "do not fit a resnet18 with 4 classes"},
    "other_architecture": {"resume": "does not fit", "weights_file": "matches no layer",
                           "load_model_file": "do not fit a resnet18 with 4 classes"},
    "newer_version": {"resume": "newer workbench", "load_model_file": "newer workbench"},
    "missing_keys": {"resume": "missing optimizer", "load_model_file": "missing optimizer"},
    "best_model_file": {"resume": "cannot resume from it", "weights_file": None,
                        "load_model_file": None},
    "folder": dict.fromkeys(("resume", "weights_file", "load_model_file"), "folder"),
}
CASES = [(kind, door) for kind, doors in EXPECTED.items() for door in doors]


def open_through(door: str, path: Path, shapes: Path, output: Path) -> tuple[str, str]:
    """Open ``path`` through ``door``: ('', messages) when accepted, (error, messages) if not."""
    if door == "load_model_file":
        try:
            load_model_file(path)
        except CheckpointError as exc:
            return str(exc), ""
        return "", ""
    recorder = Recorder()
    config = base_config(shapes, output)
    if door == "resume":
        config = config.replace(resume=str(path))
    else:
        config = config.replace(weights="file", weights_file=str(path), max_steps_per_epoch=1)
    end = train(config, recorder)
    assert end.status in ("failed", "completed")
    assert end.epochs_completed == (1 if end.status == "completed" else 0)
    return (end.error if end.status == "failed" else ""), "\n".join(recorder.texts)


@pytest.mark.parametrize(("kind", "door"), CASES)
def test_checkpoint_file_through_each_door(kind, door, shapes, good_run, tmp_path):
    good_bytes = Path(good_run.last_checkpoint_path).read_bytes()
    path = make_file(kind, tmp_path, good_run)
    error, messages = open_through(door, path, shapes, tmp_path / "runs")

    expected = EXPECTED[kind][door]
    if expected is None:
        assert error == ""
        if kind == "other_class_count":  # weights 'file' starts the head fresh and says so
            assert "file has 3 classes, this dataset has 4; the head starts fresh" in messages
    else:
        assert str(path) in error and expected in error, error
    assert not (tmp_path / "code_ran.marker").exists()
    assert Path(good_run.last_checkpoint_path).read_bytes() == good_bytes


def test_an_intact_checkpoint_resumes_strictly(shapes, good_run, tmp_path):
    end = train(base_config(shapes, tmp_path).replace(resume=good_run.last_checkpoint_path,
                                                       epochs=2))
    assert end.status == "completed" and end.epochs_completed == 2
    model, names, _ = load_model_file(end.last_checkpoint_path)
    assert names == list(CLASSES) and model.fc.out_features == 4


PACKAGE = Path(workbench.__file__).parent


def test_no_source_file_loads_pickles_unsafely():
    sources = {path: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}
    assert len(sources) > 20
    assert not [p for p, text in sources.items() if "weights_only=False" in text]
    calls = 0
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and _is_torch_load(node.func):
                calls += 1
                safe = [k for k in node.keywords if k.arg == "weights_only"
                        and isinstance(k.value, ast.Constant) and k.value.value is True]
                assert safe, f"{path}:{node.lineno}: torch.load without weights_only=True"
        # torch.load inside code kept in strings (the export check's fresh-process script)
        for call in re.findall(r"torch\.load\([^)]*\)", text):
            calls += 1
            assert "weights_only=True" in call, f"{path}: {call}"
    assert calls >= 2


def _is_torch_load(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "load"
            and isinstance(func.value, ast.Name) and func.value.id == "torch")
