"""``workbench predict`` on real files: an ONNX export classifies as its model file does, and
a missing or broken image is reported on its own line while the others are classified."""

from __future__ import annotations

import csv
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
def models(tmp_path_factory) -> tuple[Path, Path, list[Path]]:
    """A small CNN's best_model.pt, its ONNX export (made by ``workbench export``) and three
    images of different sizes."""
    folder = tmp_path_factory.mktemp("predict")
    torch.manual_seed(0)
    config = TrainConfig(model="small_cnn", weights="none", finetune="full",
                         crop_mode="five_crop", resize_size=32, crop_size=28)
    model = build_model(config, len(CLASSES)).eval()
    with torch.no_grad():  # trained-looking BatchNorm statistics, so eval mode matters
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    best = folder / "best_model.pt"
    write_workbench_file(model_file_data(model, CLASSES, config, 1, 0.9), best)
    onnx = folder / "model.onnx"
    assert main(["export", str(best), "-o", str(onnx), "--format", "onnx"]) == 0
    rng = np.random.default_rng(1)
    images = []
    for index, size in enumerate([(40, 32), (32, 48), (64, 64)]):
        path = folder / f"image{index}.png"
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(path)
        images.append(path)
    return best, onnx, images


def _ranked(stdout: str) -> dict[str, list[tuple[str, float]]]:
    """'path: name p, name p' lines as {path: [(name, p), ...]}; error lines left out."""
    ranked = {}
    for line in stdout.splitlines():
        path, _, rest = line.partition(": ")
        if rest and not rest.startswith("error:") and not line.startswith("wrote "):
            ranked[path] = [(part.split()[0], float(part.split()[1]))
                            for part in rest.split(", ")]
    return ranked


def test_an_onnx_export_predicts_as_its_model_file_does(models, capsys):
    best, onnx, images = models
    assert main(["predict", str(onnx), *map(str, images), "--topk", "3"]) == 0
    out = capsys.readouterr()
    from_onnx = _ranked(out.out)
    assert "damaged" not in out.err and len(from_onnx) == 3

    assert main(["predict", str(best), *map(str, images), "--topk", "3"]) == 0
    from_model = _ranked(capsys.readouterr().out)
    assert list(from_onnx) == [str(path) for path in images]
    for path in from_onnx:
        assert [name for name, _ in from_onnx[path]] == [name for name, _ in from_model[path]]
        assert [p for _, p in from_onnx[path]] == pytest.approx(
            [p for _, p in from_model[path]], abs=1.5e-3)  # printed with three decimals
        assert {name for name, _ in from_onnx[path]} == set(CLASSES)  # names from metadata


def test_a_missing_and_a_broken_image_are_named_and_the_rest_predicted(models, tmp_path,
                                                                     capsys):
    _, onnx, images = models
    missing = tmp_path / "missing.png"
    broken = tmp_path / "notes.png"
    broken.write_text("not an image")
    table = tmp_path / "out.csv"
    code = main(["predict", str(onnx), str(images[0]), str(missing), str(broken),
                 str(images[1]), "--topk", "1", "--csv", str(table)])
    lines = capsys.readouterr().out.splitlines()

    assert code == 1  # some failed
    assert lines[0].startswith(f"{images[0]}: ") and "error" not in lines[0]
    assert lines[1] == f"{missing}: error: no such file or folder"
    assert lines[2].startswith(f"{broken}: error: cannot read image: ")
    assert lines[3].startswith(f"{images[1]}: ") and "error" not in lines[3]
    with open(table, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["path"], bool(row["top1_class"]), bool(row["error"])) for row in rows] == [
        (str(images[0]), True, False), (str(missing), False, True),
        (str(broken), False, True), (str(images[1]), True, False)]


def test_only_good_images_exit_zero_and_a_damaged_onnx_file_says_so(models, tmp_path, capsys):
    _, onnx, images = models
    assert main(["predict", str(onnx), str(images[2])]) == 0
    capsys.readouterr()
    damaged = tmp_path / "damaged.onnx"
    damaged.write_bytes(onnx.read_bytes()[: len(onnx.read_bytes()) // 2])
    assert main(["predict", str(damaged), str(images[2])]) == 2
    assert f"'{damaged}' is not an ONNX model or is damaged" in capsys.readouterr().err
