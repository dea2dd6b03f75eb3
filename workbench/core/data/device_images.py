"""A small dataset kept on the training device as uint8, cropped there a whole batch at a time.

For digit-sized images a loader process costs more than it saves: on a machine with few cores
it competes with the model's own threads, and its per-image work (crop, collate, hand-over) is
as long as a small model's step. When every image has the same size after resizing and all of
them fit in a budget, the run decodes them once (through ``ImageSampleDataset``, so the disk
cache and the failure log work as usual), keeps them as one tensor on the device, and crops each
batch with the loader's own transforms: the pixels a loader process would produce for the same
draws.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import DataLoader

from workbench.core.data.data_pipeline import DataPipeline, ImageSampleDataset
from workbench.core.data.multicrop import IGNORE_LABEL
from workbench.core.data.transforms import (
    CropTransform,
    build_eval_transform,
    build_train_transform,
)
from workbench.core.devices.memory import free_device_memory, memory_total
from workbench.core.runs.control import RunControl
from workbench.core.units import byte_amount

Batch = tuple[torch.Tensor, torch.Tensor]

# Images kept on the device at most; on a GPU also at most this share of its memory, so the
# model and its batches keep the rest.
DEVICE_IMAGES_BYTES = 512 * 2**20
GPU_MEMORY_SHARE = 1 / 8
# Images decoded per hand-over while loading them.
LOAD_BATCH = 256


@dataclass
class DeviceImages:
    """Resized uint8 images ``[N,C,H,W]`` and labels ``[N]`` (-1 for undecodable images)."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def nbytes(self) -> int:
        return self.images.nelement() * self.images.element_size()


@dataclass
class DeviceImageSet:
    """Both splits on the device and the loader's own transforms, which crop whole batches
    (``batch``) with the pixels they give one image at a time."""

    train: DeviceImages
    val: DeviceImages
    train_transform: CropTransform
    eval_transform: CropTransform

    @property
    def nbytes(self) -> int:
        return self.train.nbytes + self.val.nbytes

    def train_batches(self, order: torch.Tensor, batch_size: int, seed: int) -> Iterator[Batch]:
        """uint8 crops and labels of the training images in ``order``, ``batch_size`` at a
        time; random crops and flips are drawn from a generator seeded with ``seed``."""
        generator = torch.Generator().manual_seed(seed)
        for images, labels in _batches(self.train, order, batch_size):
            yield self.train_transform.batch(images, generator), labels

    def val_batches(self, batch_size: int) -> Iterator[Batch]:
        """uint8 evaluation crops (center, or five/ten) of every validation image, in order."""
        for images, labels in _batches(self.val, torch.arange(len(self.val)), batch_size):
            yield self.eval_transform.batch(images), labels


def device_images_budget(device: str) -> int:
    """Bytes of images a run may keep on ``device``."""
    total = memory_total(device) if device.startswith("cuda") else 0
    return min(DEVICE_IMAGES_BYTES, int(total * GPU_MEMORY_SHARE)) if total else \
        DEVICE_IMAGES_BYTES


def load_device_images(
    config: Any, pipeline: DataPipeline, device: str, control: RunControl
) -> tuple[DeviceImageSet | None, str]:
    """Decode both splits into tensors on ``device`` if they qualify.

    Returns:
        The images (None when they stay with the loader) and a sentence for the run's log
        that says which, and why.
    """
    train_set = pipeline.train_loader.dataset
    val_set = pipeline.val_loader.dataset
    assert isinstance(train_set, ImageSampleDataset) and isinstance(val_set, ImageSampleDataset)
    count = len(train_set) + len(val_set)
    channels = 1 if train_set.grayscale else 3
    budget = device_images_budget(device)
    loader_note = (f"images are read by {config.workers} loader process(es)"
                   if config.workers else "images are read in the training process")
    # At validation size: training images may be smaller than their target (never enlarged),
    # so this is a first check only; decoding checks the real sizes against the budget.
    estimate = count * channels * config.resize_size ** 2
    if estimate > budget:
        return None, (f"The {count:,} images would take about {byte_amount(estimate)} on {device}, "
                      f"more than the {byte_amount(budget)} kept there, so {loader_note}.")
    train = _decode_all(train_set, config, budget, control)
    if isinstance(train, str):
        return None, f"{train}, so {loader_note}."
    val = _decode_all(val_set, config, budget - train.nbytes, control)
    if isinstance(val, str):
        return None, f"{val}, so {loader_note}."
    moved = _to_device(train, val, device)
    if moved is None:
        free_device_memory(device)  # outside the except block: the failed copy is gone
        return None, (f"{device} has no room for the {byte_amount(estimate)} of images, so "
                      f"{loader_note}.")
    train, val = moved
    images = DeviceImageSet(train, val, build_train_transform(config),
                            build_eval_transform(config))
    sizes = _size(train.images) if train.images.shape[1:] == val.images.shape[1:] else \
        f"{_size(train.images)} (training) and {_size(val.images)} (validation)"
    return images, (
        f"All {len(train):,} training and {len(val):,} validation images are "
        f"{sizes} after resizing, so they stay on {device} "
        f"({byte_amount(images.nbytes)}) and are cropped there a batch at a time, with no loader "
        "processes.")


def _decode_all(
    dataset: ImageSampleDataset, config: Any, budget: int, control: RunControl
) -> DeviceImages | str:
    """Every image of ``dataset`` resized, uncropped, in one CPU tensor; or why not."""
    whole = ImageSampleDataset(dataset.samples, _unchanged, dataset.resize_size,
                               dataset.grayscale, dataset.cache_dir, dataset.failure_log,
                               dataset.upscale, dataset.interpolation)
    workers = decoding_workers(config.workers)
    whole.cache_in_background = workers == 0  # the run need not wait for the cache's files
    loader = DataLoader(whole, batch_size=LOAD_BATCH, shuffle=False, num_workers=workers,
                        collate_fn=stack_if_same_size,
                        timeout=float(config.loader_timeout) if workers else 0.0)
    images: list[torch.Tensor] = []
    labels: list[torch.Tensor] = []
    for chunk, chunk_labels in loader:
        if control.cancel_requested:
            return "The run was stopped while its images were loading"
        if isinstance(chunk, str):
            return f"Images differ in size after resizing ({chunk})"
        if images and chunk.shape[1:] != images[0].shape[1:]:
            return (f"Images differ in size after resizing ({_size(images[0])} and "
                    f"{_size(chunk)})")
        images.append(chunk)
        labels.append(chunk_labels)
        needed = chunk[0].nelement() * len(dataset)
        if needed > budget:
            return (f"The images would take {byte_amount(needed)}, more than the "
                    f"{byte_amount(budget)} left")
    return DeviceImages(torch.cat(images), torch.cat(labels))


def decoding_workers(workers: int) -> int:
    """Loader processes for decoding a split once: none for a single worker, which would
    decode no faster than this process while it waits, and cost a process start and copying
    every image back (0.36-0.42 s a run on the parity bench's real sets of 200-1,139 images,
    docs/speed.md); two or more decode side by side."""
    return workers if workers >= 2 else 0


def stack_if_same_size(samples: list[tuple[torch.Tensor, int]]) -> tuple[Any, torch.Tensor]:
    """Collate uncropped images into one tensor, or name two sizes that differ."""
    labels = torch.tensor([label for _, label in samples], dtype=torch.long)
    decoded = [image for image, label in samples if label != IGNORE_LABEL]
    first = (decoded or [samples[0][0]])[0].shape
    # An undecodable image's stand-in takes its neighbours' size: training images that are
    # never enlarged need not be as large as the stand-in's nominal size.
    images = [image if label != IGNORE_LABEL else torch.zeros(first, dtype=torch.uint8)
              for image, label in samples]
    for image in images[1:]:
        if image.shape != first:
            return f"{_shape_text(first)} and {_shape_text(image.shape)}", labels
    return torch.stack(images), labels


def _to_device(
    train: DeviceImages, val: DeviceImages, device: str
) -> tuple[DeviceImages, DeviceImages] | None:
    try:
        return (DeviceImages(train.images.to(device), train.labels.to(device)),
                DeviceImages(val.images.to(device), val.labels.to(device)))
    except torch.OutOfMemoryError:
        return None


def _batches(data: DeviceImages, order: torch.Tensor, batch_size: int) -> Iterator[Batch]:
    order = order.to(data.images.device)
    for start in range(0, len(order), batch_size):
        chosen = order[start:start + batch_size]
        yield data.images.index_select(0, chosen), data.labels.index_select(0, chosen)


def _unchanged(image: torch.Tensor) -> torch.Tensor:
    return image


def _size(images: torch.Tensor) -> str:
    return _shape_text(images.shape[-3:])


def _shape_text(shape: torch.Size) -> str:
    channels, height, width = shape[-3:]
    return f"{width}x{height}" + (" grey" if channels == 1 else "")
