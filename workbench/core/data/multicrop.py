"""Several crops per image, done right: flatten for the model, judge per original sample.

A ``[B,K,C,H,W]`` batch must become ``[B*K,C,H,W]`` before the model sees it; the loss then
either repeats each label over its K crops or averages the K crops' logits, and accuracy is
counted once per original image. Label -1 marks a sample to ignore (an undecodable image).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE_LABEL = -1
STRATEGIES = ("repeat_labels", "average_logits")


def flatten_crops(images: torch.Tensor) -> torch.Tensor:
    """``[B,K,C,H,W]`` -> ``[B*K,C,H,W]``, sample 0's crops first; a 4-D batch is unchanged."""
    if images.dim() == 5:
        return images.flatten(0, 1)
    if images.dim() == 4:
        return images
    raise ValueError(
        f"expected images of shape [B,C,H,W] or [B,K,C,H,W], got {list(images.shape)}"
    )


def sample_logits_of(logits: torch.Tensor, batch: int, crops: int) -> torch.Tensor:
    """Mean of each sample's ``crops`` rows of ``[B*K,N]`` logits; ``[B,N]``."""
    if logits.dim() != 2 or logits.shape[0] != batch * crops:
        raise ValueError(
            f"logits of shape {list(logits.shape)} do not match {batch} samples x {crops} crops; "
            f"expected [{batch * crops}, classes] (were the crops flattened before the model?)"
        )
    if crops == 1:
        return logits
    return logits.view(batch, crops, logits.shape[1]).mean(dim=1)


def multicrop_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    crops: int,
    strategy: str,
    class_weights: torch.Tensor | None = None,
    label_smoothing: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy over crops of the same sample.

    Args:
        logits: ``[B*K,N]``, the model's output on flattened crops.
        labels: ``[B]``, one class per original sample; -1 to ignore a sample.
        crops: K, crops per sample (1 for a plain batch).
        strategy: "repeat_labels" (every crop against its sample's label, mean over crops) or
            "average_logits" (cross-entropy of the mean of the K crops' logits).
        class_weights: optional ``[N]`` weights of the cross-entropy.
        label_smoothing: share of each target spread evenly over the classes (training only).

    Returns:
        ``(loss, sample_logits)``, sample_logits being ``[B,N]`` crop means (for accuracy).
        When every label is -1 the loss is a zero that still backpropagates.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"crop strategy '{strategy}' is not one of {', '.join(STRATEGIES)}")
    if crops < 1:
        raise ValueError(f"crops must be at least 1 (got {crops})")
    batch = labels.shape[0]
    sample_logits = sample_logits_of(logits, batch, crops)
    if not bool((labels != IGNORE_LABEL).any()):
        return logits.sum() * 0.0, sample_logits
    weight = None if class_weights is None else class_weights.to(logits.device, logits.dtype)
    if strategy == "repeat_labels":
        loss = F.cross_entropy(
            logits, labels.repeat_interleave(crops), weight=weight, ignore_index=IGNORE_LABEL,
            label_smoothing=label_smoothing)
    else:
        loss = F.cross_entropy(sample_logits, labels, weight=weight, ignore_index=IGNORE_LABEL,
                               label_smoothing=label_smoothing)
    return loss, sample_logits


def count_correct(sample_logits: torch.Tensor, labels: torch.Tensor) -> tuple[int, int]:
    """(correct, counted) over original samples whose label is not -1."""
    counted = labels >= 0
    predicted = sample_logits.argmax(dim=1)
    correct = (predicted == labels) & counted
    return int(correct.sum()), int(counted.sum())
