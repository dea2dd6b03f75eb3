"""The parity bench: Workbench and the reference recipe read the same images the same way.

Each stage of the two pipelines is checked on real digit scans written to ``tmp_path``: the
config ``workbench train`` builds from the flags, the samples, the validation pixels, the
training crops under the same draws, the losses of the first steps, and one tiny run of each.
The expected values come from torchvision's own transforms and loop, never from Workbench.
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import pytest
import torch
import torchvision
from torchvision.datasets import ImageFolder
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

from workbench.bench.real_image_sets import write_real_set
from workbench.bench.reference.parity_benchmark import (
    MEAN,
    STD,
    Flags,
    RunResult,
    SetResult,
    format_results,
    reference_run,
    reference_transforms,
    rows_for,
    workbench_config,
    workbench_run,
)
from workbench.cli.config_flags import add_config_flags, config_from_args
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import CallbackList
from workbench.core.training.session import TrainingSession


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """ResNet18 steps on a shared 2-core machine: one thread is several times faster than two
    threads that compete with other processes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real 8x8 digit scans: 4 a class for training, 2 for validation."""
    return write_real_set("digits", tmp_path_factory.mktemp("digits"), 4, 2, seed=0)


@pytest.fixture(scope="module")
def session(digits: Path, tmp_path_factory: pytest.TempPathFactory) -> TrainingSession:
    """A Workbench session prepared from the bench's flags, as ``workbench train`` builds it."""
    output = tmp_path_factory.mktemp("out")
    prepared = TrainingSession(workbench_config(digits, output, Flags(), seed=0),
                               CallbackList([]), RunControl())
    prepared.prepare()
    yield prepared
    prepared.close()


def test_workbench_trains_with_the_flags_as_given(digits: Path, tmp_path: Path):
    """No recipe, warm-up or smoothing slips in around the flags (from random weights the CLI
    would otherwise apply the from-scratch recipe's lr 0.001)."""
    config = workbench_config(digits, tmp_path, Flags(), seed=3)
    # The bench's config is the one `workbench train` builds from the same flags.
    parser = argparse.ArgumentParser()
    parser.add_argument("--config")
    add_config_flags(parser)
    argv = []
    for name, value in Flags().workbench_fields(digits, tmp_path, seed=3).items():
        flag = "--" + name.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    assert config_from_args(parser.parse_args(argv)) == config
    assert (config.model, config.weights, config.finetune) == ("resnet18", "none", "full")
    assert (config.optimizer, config.lr, config.momentum, config.weight_decay) == \
        ("sgd", 0.01, 0.9, 1e-4)
    assert (config.scheduler, config.lr_step_size, config.lr_gamma) == ("step", 7, 0.1)
    assert (config.epochs, config.batch_size, config.seed) == (5, 32, 3)
    assert (config.resize_size, config.crop_size, config.crop_mode) == (32, 28, "standard")
    assert (config.crop_scale_min, config.crop_scale_max) == (0.08, 1.0)
    assert config.crop_ratio_min == 0.75
    assert config.crop_ratio_max == pytest.approx(4 / 3, abs=1e-6)
    assert config.train_hflip is True and config.interpolation == "bilinear"
    assert (config.label_smoothing, config.mixup_alpha, config.cutmix_alpha) == (0, 0, 0)
    assert not config.augmentations_on
    assert config.progressive_resize_start == 1.0 and config.imbalance == "none"


def test_both_pipelines_read_the_same_samples_and_validation_pixels(
        digits: Path, session: TrainingSession):
    _train, evaluation = reference_transforms(Flags())
    reference = ImageFolder(str(digits / "val"), evaluation)
    assert session.scan.class_names == reference.classes
    assert [(Path(p).name, c) for p, c in session.scan.val] == \
        [(Path(p).name, c) for p, c in reference.samples]
    expected = torch.stack([reference[i][0] for i in range(len(reference))])
    source = session.sources.val_epoch(session.pipeline.val_loader, 64)
    raw, labels = next(iter(source.batches))
    ours, labels = session.preparer(raw, labels)
    assert labels.tolist() == reference.targets
    assert ours.shape == expected.shape == (20, 3, 28, 28)
    # Resize 32 (antialiased bilinear from 8 px) + CenterCrop 28: the same grey levels.
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=0)


def reference_crops(digits: Path, indices: list[int], draws) -> torch.Tensor:
    """torchvision's crop of each Pillow image with the given boxes and flips, normalised."""
    images = ImageFolder(str(digits / "train"))
    finish = v2.Compose([v2.PILToTensor(), v2.ToDtype(torch.float, scale=True),
                         v2.Normalize(MEAN, STD)])
    crops = []
    for k, index in enumerate(indices):
        pil = images.loader(images.samples[index][0])
        crop = F.resized_crop(pil, int(draws.top[k]), int(draws.left[k]), int(draws.height[k]),
                              int(draws.width[k]), [28, 28], antialias=True)
        crops.append(finish(F.horizontal_flip(crop) if bool(draws.flip[k]) else crop))
    return torch.stack(crops)


def first_batch_with_draws(session: TrainingSession, seed: int):
    """Workbench's first training batch of epoch 0 and the draws that cut it, taken from the
    same generator the session seeds."""
    from workbench.core.data.batched_crops import draw_resized_crops
    from workbench.core.training.feature_cache import epoch_order
    from workbench.core.training.session_setup import epoch_seed

    cfg = session.config
    images = session.sources.device_images
    assert images is not None, "the digits should be kept on the device"
    order = epoch_order(len(images.train), epoch_seed(seed, 0, "shuffle"))[:cfg.batch_size]
    draws = draw_resized_crops(len(order), 8, 8, (cfg.crop_scale_min, cfg.crop_scale_max),
                               (cfg.crop_ratio_min, cfg.crop_ratio_max), 0.5,
                               torch.Generator().manual_seed(epoch_seed(seed, 0, "crops")))
    source = session.sources.train_epoch(session.train_loader, seed, 0, cfg.batch_size, None)
    raw, labels = next(iter(source.batches))
    return order.tolist(), draws, session.preparer(raw, labels)


def test_first_training_batch_matches_torchvisions_crops_under_the_same_draws(
        digits: Path, session: TrainingSession):
    order, draws, (ours, labels) = first_batch_with_draws(session, seed=0)
    assert bool(draws.flip.any()) and not bool(draws.flip.all())
    assert len({(int(h), int(w)) for h, w in zip(draws.height, draws.width, strict=True)}) > 3
    expected = reference_crops(digits, order, draws)
    targets = ImageFolder(str(digits / "train")).targets
    assert labels.tolist() == [targets[i] for i in order]
    one_grey_level = 1 / (255 * min(STD)) + 1e-5
    difference = (ours - expected).abs()
    assert float(difference.max()) <= one_grey_level
    assert float(difference.mean()) < 0.1 * one_grey_level


def test_the_first_steps_train_as_the_reference_loop_does(session: TrainingSession):
    """The same batches through Workbench's step loop and torchvision's train_one_epoch give
    the same losses: the optimiser, the loss's reduction and BatchNorm's train mode agree."""
    from workbench.core.runs.events import Callback
    from workbench.core.training.steps import run_training_steps

    model = torchvision.models.get_model("resnet18", weights=None, num_classes=10)
    model.load_state_dict(copy.deepcopy(session.model.state_dict()))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    criterion = torch.nn.CrossEntropyLoss()
    batches = [next(iter(session.sources.train_epoch(session.train_loader, 0, epoch, 8,
                                                     None).batches)) for epoch in range(3)]
    expected = []
    model.train()
    for raw, labels in batches:
        images, targets = session.preparer(raw, labels)
        loss = criterion(model(images), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        expected.append(loss.item())

    losses: list[float] = []

    class Losses(Callback):
        def on_step(self, event) -> None:
            losses.append(event.loss)

    session.ctx.callback = Losses()
    session.model.train()
    run_training_steps(session.ctx, iter(batches), len(batches), session.model, session.preparer)
    assert losses == pytest.approx(expected, rel=1e-5)
    assert len(set(round(x, 4) for x in expected)) == 3


def test_one_tiny_run_of_each_pipeline(digits: Path, tmp_path: Path):
    flags = Flags(epochs=2, lr_step_size=1, workers=0)
    reference = reference_run(digits, flags, seed=0, output=tmp_path / "reference")
    ours = workbench_run(digits, tmp_path, flags, seed=0)
    # The script's files after each epoch: the epoch's checkpoint, and the latest again.
    assert sorted(p.name for p in (tmp_path / "reference").iterdir()) == [
        "checkpoint.pth", "model_0.pth", "model_1.pth"]
    latest = torch.load(tmp_path / "reference" / "checkpoint.pth", weights_only=True)
    assert latest["epoch"] == 1 and latest["args"]["lr"] == 0.01
    assert latest["lr_scheduler"]["last_epoch"] == 2
    assert set(latest["model"]) == set(torchvision.models.resnet18().state_dict())
    for result in (reference, ours):
        assert len(result.accuracies) == 2
        assert result.best == max(result.accuracies)
        assert all(accuracy in [k / 20 for k in range(21)] for accuracy in result.accuracies)
        assert result.seconds > 0
        # step 1 x 0.1: each epoch's lr as the reference's StepLR gives it
        assert result.lrs == pytest.approx([0.01, 0.001])


def test_the_table_gives_means_spreads_the_paired_difference_and_the_time_ratio():
    reference = [RunResult(0.80, 10.0), RunResult(0.70, 10.0), RunResult(0.75, 10.0)]
    ours = [RunResult(0.82, 8.0), RunResult(0.74, 8.0), RunResult(0.74, 9.0)]
    table = format_results([SetResult("faces", 140, 60, reference, ours)])
    row = table.splitlines()[-1]
    # means 0.750 / 0.767; sd 0.050 / 0.046; differences +0.02 +0.04 -0.01: mean +0.017,
    # sd 0.0252, se 0.0145; time 30 s / 25 s = 1.20x
    assert "| faces (140 / 60) | 0.750 +- 0.050 | 0.767 +- 0.046 | +0.017 +- 0.015 |" in row
    assert row.endswith("| 30 s / 25 s = 1.20x |")

    accuracy, wall = rows_for([SetResult("faces", 140, 60, reference, ours)], Flags(), 3)
    assert accuracy.ratio == pytest.approx(0.76667 / 0.75, abs=1e-4)
    assert accuracy.target == pytest.approx(1 - 0.014530 / 0.75, abs=1e-3)
    assert accuracy.met and wall.met and wall.ratio == pytest.approx(1.2)
    worse = [RunResult(0.70, 8.0), RunResult(0.60, 8.0), RunResult(0.65, 9.0)]
    assert rows_for([SetResult("faces", 140, 60, reference, worse)], Flags(), 3)[0].met is False
