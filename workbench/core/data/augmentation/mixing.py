"""Mixup and CutMix of a prepared training batch, as torchvision's reference recipe applies them.

The reference (``references/classification/train.py``) mixes each collated batch with
``v2.MixUp`` or ``v2.CutMix`` (one of the two at random when both are on) and trains on the
soft targets. ``mix_batch`` does the same with the same draws and formulas as those two
transforms (the same global random numbers give the same pixels and targets), and also copes
with images that failed to decode (label -1): they hold no target and are left out of the loss.
Training accuracy counts each image against its dominant label (the larger share of its
target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from workbench.core.data.multicrop import IGNORE_LABEL


@dataclass(frozen=True)
class MixedBatch:
    """Mixed images, their soft targets ``[B,N]``, and the dominant label of each (-1 where
    the image failed to decode); ``method`` is 'mixup' or 'cutmix', ``share`` the share of each
    image's own content."""

    images: torch.Tensor
    targets: torch.Tensor
    dominant_labels: torch.Tensor
    method: str
    share: float


@dataclass(frozen=True)
class BatchMixer:
    """Mixup with ``Beta(mixup_alpha, mixup_alpha)`` shares and/or CutMix with
    ``Beta(cutmix_alpha, cutmix_alpha)``; an alpha of 0 turns that one off."""

    num_classes: int
    mixup_alpha: float = 0.0
    cutmix_alpha: float = 0.0

    def __call__(self, images: torch.Tensor, labels: torch.Tensor) -> MixedBatch:
        """Mix a ``[B,C,H,W]`` batch with itself rolled by one image (torch's global
        generator draws, as the v2 transforms draw)."""
        methods = [(name, alpha) for name, alpha in (("mixup", self.mixup_alpha),
                                                     ("cutmix", self.cutmix_alpha)) if alpha > 0]
        if not methods:
            raise ValueError("mixup_alpha and cutmix_alpha are both 0: nothing to mix")
        if len(methods) > 1:  # v2.RandomChoice: equal chances
            methods = [methods[int(torch.multinomial(torch.tensor([0.5, 0.5]), 1))]]
        method, alpha = methods[0]
        share = float(torch.distributions.Beta(torch.tensor([alpha]),
                                               torch.tensor([alpha])).sample(()))
        targets = one_hot_targets(labels, self.num_classes, images.dtype)
        if method == "mixup":
            mixed = images.roll(1, 0).mul_(1.0 - share).add_(images.mul(share))
        else:
            mixed, share = _cut_and_paste(images, share)
        targets = targets.roll(1, 0).mul_(1.0 - share).add_(targets.mul(share))
        dominant = torch.where(labels == IGNORE_LABEL, labels, targets.argmax(dim=1))
        return MixedBatch(mixed, targets, dominant, method, share)


def one_hot_targets(labels: torch.Tensor, num_classes: int, dtype: torch.dtype) -> torch.Tensor:
    """``[B,N]`` one-hot rows; an ignored label (-1) gets a row of zeros."""
    targets = F.one_hot(labels.clamp(min=0), num_classes).to(dtype)
    return targets * (labels != IGNORE_LABEL).unsqueeze(1).to(dtype)


def _cut_and_paste(images: torch.Tensor, share: float) -> tuple[torch.Tensor, float]:
    """v2.CutMix's box (random centre, sides ``sqrt(1 - share)`` of the image's) filled from
    the rolled batch; returns the images and the share the box left to each image."""
    height, width = images.shape[-2:]
    centre_x = torch.randint(width, size=(1,))
    centre_y = torch.randint(height, size=(1,))
    half = 0.5 * math.sqrt(1.0 - share)
    half_w, half_h = int(half * width), int(half * height)
    x1 = int(torch.clamp(centre_x - half_w, min=0))
    y1 = int(torch.clamp(centre_y - half_h, min=0))
    x2 = int(torch.clamp(centre_x + half_w, max=width))
    y2 = int(torch.clamp(centre_y + half_h, max=height))
    mixed = images.clone()
    mixed[..., y1:y2, x1:x2] = images.roll(1, 0)[..., y1:y2, x1:x2]
    return mixed, float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))


def soft_target_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    labels: torch.Tensor,
    class_weights: torch.Tensor | None = None,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Cross-entropy against soft ``targets`` ``[B,N]`` (mean over the images whose own
    ``labels`` are not -1), with optional class weights and label smoothing as
    ``F.cross_entropy`` applies them to probability targets."""
    kept = labels != IGNORE_LABEL
    if not bool(kept.any()):
        return logits.sum() * 0.0
    weight = None if class_weights is None else class_weights.to(logits.device, logits.dtype)
    return F.cross_entropy(logits[kept], targets[kept].to(logits.dtype), weight=weight,
                           label_smoothing=label_smoothing)


def batch_mixer_for(config: Any, num_classes: int) -> BatchMixer | None:
    """The training batches' mixer of ``config``; None when mixup and cutmix are off (or the
    crop mode is not standard)."""
    if config.crop_mode != "standard" or (config.mixup_alpha <= 0 and config.cutmix_alpha <= 0):
        return None
    return BatchMixer(num_classes, config.mixup_alpha, config.cutmix_alpha)
