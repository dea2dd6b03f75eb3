"""``workbench predict`` takes what ``workbench export`` takes: a run folder (its best
checkpoint), a checkpoint, a TorchScript or an ONNX file; a missing image is reported on its
own line and the others are predicted. The TorchScript file has one name from the app and the
command line, and a folder exported under the old name still predicts."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from workbench.cli import main
from workbench.core.models.building import build_model
from workbench.core.models.checkpoint_format import model_file_data, write_workbench_file
from workbench.core.runs.config import TrainConfig

CLASSES = ["circle", "cross", "ring"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, list[Path]]:
    """A run folder holding a small CNN's best_model.pt, and three images."""
    folder = tmp_path_factory.mktemp("run")
    torch.manual_seed(0)
    config = TrainConfig(model="small_cnn", weights="none", finetune="full",
                         crop_mode="standard", resize_size=32, crop_size=28)
    model = build_model(config, len(CLASSES)).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    write_workbench_file(model_file_data(model, CLASSES, config, 1, 0.9),
                         folder / "best_model.pt")
    rng = np.random.default_rng(3)
    images = []
    for index, size in enumerate([(40, 32), (32, 48), (64, 64)]):
        path = folder.parent / f"image{index}.png"
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(path)
        images.append(path)
    return folder, images


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_a_run_folder_predicts_with_its_best_checkpoint_and_a_missing_image_is_named(
        run, tmp_path, capsys):
    folder, images = run
    missing = tmp_path / "gone.png"
    code = main(["predict", str(folder), str(images[0]), str(missing), str(images[1])])
    from_folder = _lines(capsys)
    assert code == 1  # one image failed
    assert from_folder[1] == f"{missing}: error: no such file or folder"
    assert main(["predict", str(folder / "best_model.pt"), str(images[0]), str(images[1])]) == 0
    from_checkpoint = _lines(capsys)
    assert [from_folder[0], from_folder[2]] == from_checkpoint
    assert from_checkpoint[0].startswith(f"{images[0]}: ")


def test_the_torchscript_export_has_one_name_and_the_old_name_still_predicts(
        run, tmp_path, capsys):
    folder, images = run
    assert main(["export", str(folder)]) == 0
    printed = capsys.readouterr().out
    assert (folder / "model_torchscript.pt").is_file(), printed
    assert not (folder / "model_scripted.pt").exists()
    assert main(["predict", str(folder / "best_model.pt"), str(images[2])]) == 0
    expected = _lines(capsys)
    # A folder with no checkpoint left, its export under today's name or the old one.
    for name in ("model_torchscript.pt", "model_scripted.pt"):
        exported = tmp_path / name.removesuffix(".pt")
        exported.mkdir()
        shutil.copyfile(folder / "model_torchscript.pt", exported / name)
        assert main(["predict", str(exported), str(images[2])]) == 0, name
        ranked = _lines(capsys)
        assert [line.split(": ")[1].split(", ")[0].split()[0] for line in ranked] == [
            line.split(": ")[1].split(", ")[0].split()[0] for line in expected], name


def test_a_folder_that_is_not_a_run_is_refused_with_what_was_looked_for(run, tmp_path,
                                                                          capsys):
    _, images = run
    assert main(["predict", str(tmp_path), str(images[0])]) == 2
    error = capsys.readouterr().err
    assert f"'{tmp_path}' is a folder with no best_model.pt or model_torchscript.pt" in error


@pytest.mark.parametrize("export_format", ["torchscript", "onnx"])
def test_an_export_says_one_verdict_first_then_the_details(run, tmp_path, capsys,
                                                           export_format):
    folder, _ = run
    out = tmp_path / f"model.{export_format}"
    assert main(["export", str(folder), "-o", str(out), "--format", export_format]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines()
             if not line.endswith(" ...")]  # progress
    verdicts = [line for line in lines if "verified" in line.lower()]
    assert verdicts == [lines[0]], lines
    assert lines[0].startswith("VERIFIED: reproduces the trained model (max |difference| ")
    assert "within tolerance " in lines[0] and "top class agrees on " in lines[0]
    assert all(line.startswith("  ") for line in lines[1:]), lines
    assert f"  file: {out}" in lines
