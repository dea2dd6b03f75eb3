"""What a run checks and sets up before its first step, and how its loader processes end."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import numpy as np
import torch

from workbench.core.data.cache_folder import cache_messages
from workbench.core.data.data_pipeline import image_cache_dir
from workbench.core.data.dataset_scan import DatasetError, DatasetScan
from workbench.core.data.image_cache import cache_path
from workbench.core.data.training_scan import scan_for_run
from workbench.core.data.transforms import train_source_size
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_catalog import RECIPE_FIELDS, scratch_recipe
from workbench.core.runs.model_defaults import defaults_for, recipe_words
from workbench.core.runs.training_set_size import effective_batch_size, small_set_expectation

# Images looked up in the cache to judge how much of a dataset it already holds.
CACHE_PROBES = 64


def scan_for_training(config: TrainConfig) -> DatasetScan:
    """Scan ``config.data_root`` as the Dataset tab shows it (``scan_for_run``: headers
    checked, the health check's copies kept on one side, the exclusion list applied) and
    refuse what cannot be trained.

    Raises:
        DatasetError: Fewer than 2 classes, no training or no validation images; the
            message names the folder (and the class) and what to add.
    """
    scan = scan_for_run(config.data_root, config.val_fraction, config.seed,
                        cache_dir=config.cache_dir, exclude_file=config.exclude_file)
    if len(scan.class_names) < 2:
        found = ", ".join(f"'{name}'" for name in scan.class_names)
        raise DatasetError(f"{config.data_root}: needs at least 2 class folders, found "
                           f"{len(scan.class_names)} ({found}); a classifier tells classes "
                           "apart, so add a folder of images for each other class")
    if not scan.train:
        raise DatasetError(f"{config.data_root}: no training images found"
                           + (f" ({len(scan.left_out):,} left out by {config.exclude_file})"
                              if scan.left_out else ""))
    if not scan.val:
        raise DatasetError(f"{config.data_root}: no validation images: no class has 2 usable "
                           "images to split; add a val/ folder, or at least 2 images to a "
                           "class for the automatic split")
    return scan


def fit_to_training_set(config: TrainConfig, scan: DatasetScan,
                        world_size: int = 1) -> tuple[TrainConfig, list[tuple[str, str]]]:
    """``config`` with its batch lowered to the training set where it is larger, and
    (level, text) lines saying so and what to expect of a small validation set."""
    batch = effective_batch_size(config, len(scan.train), world_size)
    notes = [("info", batch.sentence)] if batch.clamped else []
    expectation = small_set_expectation(len(scan.train), len(scan.val))
    notes += [("info", expectation)] if expectation else []
    return config.replace(batch_size=batch.batch_size), notes


# Models whose default lr won ``bench/recipe_sweep.py`` against the LR finder's suggestion.
MEASURED_RECIPES = frozenset({"small_cnn"})


def learning_rate_note(config: TrainConfig) -> str:
    """Which learning rate the run trains at and where it comes from: the model's default
    (small_cnn's kept over the LR finder's suggestion by the recipe sweep), its family's recipe
    for random weights (``scratch_recipe``), or the user's own."""
    scratch = scratch_recipe(config.model) if config.weights == "none" else None
    if scratch is not None:
        default, whose = scratch["lr"], "the from-scratch recipe's"
        measured = f" for every layer of {config.model} from random weights, measured in the " \
                   "recipe sweep"
    else:
        default, whose = defaults_for(config.model).get("lr"), f"{config.model}'s default"
        measured = (", which beat the LR finder's suggestion on small real folders in the "
                    "recipe sweep" if config.model in MEASURED_RECIPES else "")
    words = recipe_words({name: getattr(config, name) for name in RECIPE_FIELDS},
                         with_lr=False)
    rate = f"Learning rate {config.lr:g} ({words}"
    if config.finetune == "head_then_full":
        rate += f"; the backbone at {config.backbone_lr_factor:g} x once it unfreezes"
    if default is not None and config.lr == default:
        return (f"{rate}): {whose}{measured}. Find learning rate… (or "
                "`workbench lr-find`) suggests one for this folder.")
    known = f"; {whose} is {default:g}" if default is not None else ""
    return f"{rate}): as set{known}."


def image_cache_messages(config: TrainConfig, scan: DatasetScan) -> list[tuple[str, str]]:
    """(level, text) lines saying where resized images are cached and whether the cache's disk
    has room for the images not cached yet; none when ``cache_images`` is off."""
    cache_dir = image_cache_dir(config)
    if cache_dir is None:
        return []
    samples = scan.train + scan.val
    uncached = round(len(samples) * uncached_share(samples, config, cache_dir))
    return cache_messages(cache_dir, uncached, config.resize_size, config.in_channels)


def uncached_share(samples: list[tuple[str, int]], config: TrainConfig, cache_dir: str,
                   probes: int = CACHE_PROBES) -> float:
    """The share of ``samples`` the cache does not hold yet, judged from up to ``probes`` of
    them spread over the list (a few file lookups instead of one per image). An image counts
    as cached at either size the run reads: validation's ``resize_size`` or the training
    crops' source size (``train_source_size``)."""
    probed = samples[::max(1, len(samples) // probes)][:probes]
    if not probed:
        return 0.0
    grayscale = config.in_channels == 1
    sizes = {(config.resize_size, True), train_source_size(config)}
    missing = 0
    for path, _ in probed:
        try:
            found = any(cache_path(path, size, grayscale, cache_dir, upscale=upscale,
                                   interpolation=config.interpolation).is_file()
                        for size, upscale in sizes)
        except OSError:
            found = False  # gone since the scan: it will be reported when it is read
        missing += not found
    return missing / len(probed)


def seed_everything(seed: int, deterministic: bool, device: str) -> None:
    """Seed Python, NumPy and torch; pick cuDNN's deterministic or fastest algorithms."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    elif device.startswith("cuda"):
        # Fixed input shapes: let cuDNN pick the fastest convolution once.
        torch.backends.cudnn.benchmark = True


# An epoch's random draws: its shuffle, its crops and flips, and torch's global generator
# (dropout, loader workers' seeds, augmentations drawn in the loader).
EPOCH_DRAWS = ("shuffle", "crops", "torch")


def epoch_seed(seed: int, epoch: int, draw: str) -> int:
    """A 63-bit seed for ``draw`` (one of ``EPOCH_DRAWS``) in epoch ``epoch`` (0-based) of a
    run seeded ``seed``, any int ``torch.Generator.manual_seed`` takes.

    It depends on (seed, epoch, draw) only, so a resumed run draws what the uninterrupted run
    would have. It is a hash rather than ``seed + epoch``: with that sum the run of seed 1
    shuffled and cropped each epoch as the run of seed 0 did one epoch later, so "five seeds"
    of a benchmark were largely one run shifted by an epoch.
    """
    if draw not in EPOCH_DRAWS:
        raise ValueError(f"unknown draw {draw!r}; one of {', '.join(EPOCH_DRAWS)}")
    digest = hashlib.blake2b(f"{seed}/{epoch}/{draw}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def share_batches_by_name() -> None:
    """Loader batches travel as named shared memory, not as file descriptors handed over a
    socket: a worker killed during that handover would leave the run blocked for good."""
    torch.multiprocessing.set_sharing_strategy("file_system")


def shutdown_loader_workers(loader: Any, kill: bool = False) -> None:
    """Stop ``loader``'s worker processes; ``kill`` for workers that died or hung."""
    iterator = getattr(loader, "_iterator", None)
    if kill:
        for worker in getattr(iterator, "_workers", []):
            if worker.is_alive():
                worker.kill()
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if callable(shutdown):
        try:
            shutdown()
        except RuntimeError:
            pass  # torch reports a worker that died (again) while being stopped; it is reported
