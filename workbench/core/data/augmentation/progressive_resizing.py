"""Progressive resizing: the first epochs train on smaller images, the last at the full crop.

fast.ai's and FFCV's recipe for training sooner: a network learns coarse shapes as well from
small images, which cost a fraction of the compute (a half-size image a quarter), and finishes
at the size it is validated and deployed at. ``progressive_resize_start`` is the share of
``crop_size`` the first epoch trains at; the size grows in equal steps until the epoch at
``RAMP_SHARE`` of the run, and the epochs after it train at the full crop.

The batches are cropped at ``crop_size`` as always and resized on the device after their
normalisation (antialiased bilinear, as ``v2.Resize``; a weighted average of pixels, so it
commutes with the per-channel normalisation). Everything else sees ``crop_size``: validation,
the LR and batch-size finders (their memory is the full size's), prediction and export.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

# The share of the epochs over which the size grows; the later ones train at the full crop.
RAMP_SHARE = 0.75

Prepare = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def size_step(crop_size: int) -> int:
    """Sizes are rounded to multiples of this: 32 px for ImageNet-sized crops (as FFCV, for
    the GPU's convolution kernels), 8 px for mid-sized ones, 2 px for small ones."""
    if crop_size >= 160:
        return 32
    return 8 if crop_size >= 48 else 2


def training_sizes(crop_size: int, start_share: float, epochs: int,
                   smallest: int = 8) -> list[int]:
    """The training crop of each epoch (index 0 is the first epoch).

    Args:
        crop_size: the full crop, the last epochs' size.
        start_share: the first epoch's share of ``crop_size``; 1 (or more) is off.
        epochs: the run's epochs.
        smallest: no size below this (the model's smallest input).
    """
    if start_share >= 1.0 or epochs < 2:
        return [crop_size] * max(epochs, 0)
    ramp = max(2, math.ceil(RAMP_SHARE * epochs))  # epochs from the first to the full size
    start = crop_size * start_share
    step = size_step(crop_size)
    sizes = []
    for epoch in range(epochs):
        if epoch >= ramp - 1:  # the full crop as it is, a multiple of the step or not
            sizes.append(crop_size)
            continue
        grown = start + (crop_size - start) * epoch / (ramp - 1)
        sizes.append(min(crop_size, max(smallest, step * round(grown / step))))
    return sizes


def resize_prepared_batch(prepare: Prepare, size: int, channels_last: bool) -> Prepare:
    """``prepare`` followed by resizing its images to ``size`` x ``size``."""

    def prepare_and_resize(images: torch.Tensor, labels: torch.Tensor
                           ) -> tuple[torch.Tensor, torch.Tensor]:
        prepared, labels = prepare(images, labels)
        if prepared.shape[-2:] == (size, size):
            return prepared, labels
        resized = F.interpolate(prepared, size=(size, size), mode="bilinear",
                                align_corners=False, antialias=True)
        layout = torch.channels_last if channels_last else torch.contiguous_format
        return resized.contiguous(memory_format=layout), labels

    return prepare_and_resize


def describe_sizes(sizes: list[int], crop_size: int) -> str:
    """One sentence for the run's log: where the sizes start and when they reach the crop."""
    full_from = next(index for index, size in enumerate(sizes) if size == crop_size) + 1
    listed = ", ".join(str(size) for size in sizes)
    return (f"Progressive resizing: training crops grow from {sizes[0]} px in epoch 1 to "
            f"{crop_size} px from epoch {full_from} (epoch by epoch: {listed} px); "
            f"validation, prediction and exports use {crop_size} px.")
