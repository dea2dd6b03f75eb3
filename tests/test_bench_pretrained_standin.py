"""The pretrained stand-in bench: its backbone file is what fine-tuning starts from.

A fixture pretrains a tiny stand-in (two steps of resnet18 on a few colour PNGs written to
``tmp_path``) through the bench's step A; step B's config must load that file into the model
it trains, and 'last_layer' must leave those tensors as the file has them. The expected values
are the file's own tensors, read back with ``torch.load``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from workbench.bench.real_image_sets import write_real_set
from workbench.bench.reference.pretrained_standin import (
    StandinWorkload,
    finetune_config,
    finetune_run,
    finetune_variants,
    head_prefix,
    largest_clipart_categories,
    pretrain,
    pretrain_config,
    save_backbone,
    write_clipart_set,
)
from workbench.core.models.building import build_model
from workbench.core.transparency import TRANSPARENT_BACKGROUND

TINY = StandinWorkload(pretrain_size=20, pretrain_crop=16, pretrain_epochs=1,
                       finetune_epochs=1, resize=20, crop=16, seeds=(0,))


def _write_colour_set(root: Path) -> Path:
    rng = np.random.default_rng(0)
    for split, count in (("train", 6), ("val", 2)):
        for label, colour in (("red", (200, 30, 30)), ("blue", (30, 30, 200))):
            folder = root / split / label
            folder.mkdir(parents=True)
            for index in range(count):
                noise = rng.integers(-25, 26, (20, 20, 3))
                pixels = np.clip(np.array(colour) + noise, 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(folder / f"{index}.png")
    return root


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, torch.Tensor]]:
    root = tmp_path_factory.mktemp("standin")
    data = _write_colour_set(root / "colours")
    weights_file, _accuracy, _seconds = pretrain(data, root / "pretrain", TINY)
    saved = torch.load(weights_file, map_location="cpu", weights_only=True)
    return weights_file, saved


def test_the_saved_file_is_the_backbone_without_the_head(standin) -> None:
    _path, saved = standin
    assert not [key for key in saved if key.startswith("fc.")]
    resnet18 = torchvision.models.resnet18(weights=None).state_dict()
    assert set(saved) == {key for key in resnet18 if not key.startswith("fc.")}


def test_last_layer_fine_tuning_starts_from_the_file_and_keeps_it(standin, tmp_path) -> None:
    weights_file, saved = standin
    data = write_real_set("faces", tmp_path / "faces", train_per_class=4, val_per_class=2)
    config = finetune_config(data, tmp_path / "out", weights_file, TINY, seed=0,
                             finetune="last_layer")
    assert (config.weights, config.finetune) == ("file", "last_layer")

    messages: list[tuple[str, str]] = []
    built = build_model(config, 2, lambda level, text: messages.append((level, text)))
    built = built.state_dict()
    assert ("info", f"Loaded {len(saved)} tensors from '{weights_file}'") in messages
    for key, tensor in saved.items():
        assert torch.equal(built[key], tensor), f"{key} was not loaded from the file"
    head_before = built["fc.weight"].clone()

    end, _seconds = finetune_run(config)
    trained = torch.load(end.last_checkpoint_path, map_location="cpu", weights_only=True)["model"]
    for key, tensor in saved.items():
        assert torch.equal(trained[key], tensor), f"last_layer changed backbone tensor {key}"
    assert trained["fc.weight"].shape == (2, 512)
    assert not torch.equal(trained["fc.weight"], head_before), "the head did not train"


def test_clip_art_is_decoded_with_transparency_over_workbench_grey(tmp_path) -> None:
    root = tmp_path / "png"
    for name, count in (("many", 3), ("few", 1), ("unsorted", 5)):
        (root / name).mkdir(parents=True)
        for index in range(count):
            pixels = np.zeros((10, 10, 4), np.uint8)     # fully transparent black
            pixels[:5, :, :] = (0, 0, 255, 255)           # opaque blue top half
            Image.fromarray(pixels, "RGBA").save(root / name / f"{index}.png")
    assert [f.name for f in largest_clipart_categories(root, 2)] == ["many", "few"]
    out = write_clipart_set(tmp_path / "set", size=10, count=1, root=root)
    files = sorted(out.rglob("*.png"))
    assert len(files) == 3 and {f.parent.parent.name for f in files} == {"train", "val"}
    image = np.asarray(Image.open(files[0]))
    assert image.shape == (10, 10, 3)
    assert tuple(image[0, 0]) == (0, 0, 255)
    assert tuple(image[9, 0]) == tuple(TRANSPARENT_BACKGROUND)


@pytest.mark.parametrize(("model", "head"), [("resnet18", "fc."),
                                             ("mobilenet_v3_small", "classifier.3."),
                                             ("convnext_tiny", "classifier.2.")])
def test_each_family_saves_its_backbone_without_its_own_head(model, head, tmp_path) -> None:
    network = torchvision.models.get_model(model, weights=None, num_classes=3)
    state = network.state_dict()
    checkpoint = tmp_path / "best.pt"
    torch.save({"model": {f"module.{key}": value for key, value in state.items()}}, checkpoint)

    saved = torch.load(save_backbone(checkpoint, tmp_path / "backbone.pt", model),
                       map_location="cpu", weights_only=True)

    assert head_prefix(model) == head
    assert set(saved) == {key for key in state if not key.startswith(head)}
    assert len(saved) == len(state) - 2        # the head's weight and bias, nothing else
    for key, tensor in saved.items():
        assert torch.equal(tensor, state[key])


def test_rows_of_a_step_recipe_family_and_of_a_cosine_recipe_family() -> None:
    resnet = {label: (weights, mode, overrides)
              for label, weights, mode, overrides in finetune_variants("resnet18")}
    assert resnet["full / ft recipe, cosine"] == ("file", "full", {"scheduler": "cosine"})
    assert resnet["full / ft lr x3"][2] == {"lr": pytest.approx(0.003)}
    assert resnet["full / scratch recipe"][2] == {
        "optimizer": "adamw", "lr": 1e-3, "weight_decay": 1e-4, "scheduler": "warmup_cosine",
        "momentum": 0.9, "lr_step_size": 7, "lr_gamma": 0.1}
    assert resnet["random init / scratch defaults"] == ("none", "full", {})
    assert len(resnet) == 8

    convnext = {label: overrides for label, _w, _m, overrides in finetune_variants("convnext_tiny")}
    # ConvNeXt trains from scratch with its fine-tuning recipe: no separate scratch row.
    assert "full / scratch recipe" not in convnext and "full / ft recipe, cosine" not in convnext
    assert convnext["full / ft recipe, step"] == {"scheduler": "step", "lr_step_size": 7,
                                                   "lr_gamma": 0.1}
    assert convnext["full / ft lr /3"] == {"lr": pytest.approx(1e-4 / 3)}


def test_the_mobilenet_config_is_the_one_workbench_train_builds_for_its_file(tmp_path) -> None:
    work = StandinWorkload(model="mobilenet_v3_small")
    config = finetune_config(tmp_path / "data", tmp_path / "out", tmp_path / "b.pt", work,
                             seed=2, finetune="full")
    assert (config.model, config.weights, config.weights_file, config.finetune) == (
        "mobilenet_v3_small", "file", str(tmp_path / "b.pt"), "full")
    # MobileNet's fine-tuning recipe (the catalogue's SGD step recipe), at the bench's sizes.
    assert (config.optimizer, config.lr, config.scheduler, config.lr_step_size) == (
        "sgd", 0.001, "step", 7)
    assert (config.resize_size, config.crop_size, config.epochs, config.seed) == (36, 32, 4, 2)
    scratch = pretrain_config(tmp_path / "data", tmp_path / "out", work)
    assert (scratch.model, scratch.weights, scratch.optimizer, scratch.lr, scratch.scheduler) == (
        "mobilenet_v3_small", "none", "adamw", 0.002, "warmup_cosine")


def test_a_table_run_leaves_no_run_folder_behind(standin, tmp_path) -> None:
    weights_file, _saved = standin
    data = write_real_set("faces", tmp_path / "faces", train_per_class=4, val_per_class=2)
    config = finetune_config(data, tmp_path / "out", weights_file, TINY, seed=0)
    end, seconds = finetune_run(config, keep=False)
    assert end.status == "completed" and seconds > 0 and 0.0 <= end.best_val_accuracy <= 1.0
    assert end.run_dir and not Path(end.run_dir).exists()


def test_the_earlier_batch_norm_rules_come_back_for_paired_rows(
        standin, tmp_path, monkeypatch) -> None:
    from workbench.bench.reference.pretrained_standin import batch_norm_while_stale
    from workbench.core.runs.events import Callback
    from workbench.core.training import session
    from workbench.core.training.engine import train
    from workbench.core.training.session import TrainingSession

    weights_file, _saved = standin
    data = write_real_set("faces", tmp_path / "faces", train_per_class=12, val_per_class=2)
    calls: list[int] = []
    real = session.recompute_batch_norm_statistics

    def counting(*args, **kwargs) -> int:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(session, "recompute_batch_norm_statistics", counting)

    def recomputations(weights: str, epochs: int = 1) -> int:
        """How many validations got recomputed statistics; 24 training images at batch 2."""
        config = finetune_config(data, tmp_path / weights, weights_file, TINY, seed=0,
                                 finetune="full", weights=weights).replace(
            batch_size=2, epochs=epochs)
        calls.clear()
        assert train(config, Callback()).status == "completed"
        return len(calls)

    # Today's rule: whatever the weights started from, before every validation, also after
    # 3 and 4 epochs of 12 steps (0.9 ** 36 and 0.9 ** 48: 2.3% and 0.6% of the start left).
    assert recomputations("file") == 1 and recomputations("none", epochs=4) == 4
    # The bench's switch replaces the session's method; monkeypatch puts it back afterwards.
    monkeypatch.setattr(TrainingSession, "_refresh_batch_norm_statistics",
                        TrainingSession._refresh_batch_norm_statistics)
    batch_norm_while_stale()
    assert recomputations("file") == 1 and recomputations("none", epochs=4) == 3
    batch_norm_while_stale(random_weights_only=True)
    assert recomputations("file") == 0 and recomputations("none") == 1
