"""Flattening crops, the two crop losses checked against hand computation, per-sample accuracy."""

from __future__ import annotations

import math

import pytest
import torch

from workbench.core.data.multicrop import count_correct, flatten_crops, multicrop_loss

B, K, N = 3, 4, 5


def _logits() -> torch.Tensor:
    generator = torch.Generator().manual_seed(7)
    return torch.randn(B * K, N, dtype=torch.float64, generator=generator, requires_grad=True)


def _cross_entropy(row: list[float], label: int) -> float:
    """-log softmax(row)[label], written out."""
    exps = [math.exp(value) for value in row]
    return -math.log(exps[label] / sum(exps))


def _hand_repeat_labels(logits, labels, weights=None) -> float:
    total = weight_sum = 0.0
    for b in range(B):
        if labels[b] < 0:
            continue
        for k in range(K):
            row = logits[b * K + k].tolist()
            w = 1.0 if weights is None else weights[labels[b]]
            total += w * _cross_entropy(row, labels[b])
            weight_sum += w
    return total / weight_sum


def _hand_average_logits(logits, labels, weights=None) -> float:
    total = weight_sum = 0.0
    for b in range(B):
        if labels[b] < 0:
            continue
        rows = [logits[b * K + k].tolist() for k in range(K)]
        mean_row = [sum(r[n] for r in rows) / K for n in range(N)]
        w = 1.0 if weights is None else weights[labels[b]]
        total += w * _cross_entropy(mean_row, labels[b])
        weight_sum += w
    return total / weight_sum


def test_flatten_keeps_each_samples_crops_together() -> None:
    images = torch.arange(2 * 5 * 1 * 2 * 2).view(2, 5, 1, 2, 2)
    flat = flatten_crops(images)
    assert tuple(flat.shape) == (10, 1, 2, 2)
    for b in range(2):
        for k in range(5):
            assert torch.equal(flat[b * 5 + k], images[b, k])
    plain = torch.zeros(4, 3, 2, 2)
    assert flatten_crops(plain) is plain
    with pytest.raises(ValueError, match=r"\[B,K,C,H,W\]"):
        flatten_crops(torch.zeros(3, 2, 2))


@pytest.mark.parametrize(
    ("strategy", "hand"),
    [("repeat_labels", _hand_repeat_labels), ("average_logits", _hand_average_logits)],
)
@pytest.mark.parametrize("labels", [[2, 0, 4], [1, -1, 3]])
@pytest.mark.parametrize("weights", [None, [0.5, 2.0, 1.0, 3.0, 0.25]])
def test_losses_match_hand_computation(strategy, hand, labels, weights) -> None:
    logits = _logits()
    class_weights = None if weights is None else torch.tensor(weights)
    loss, sample_logits = multicrop_loss(logits, torch.tensor(labels), K, strategy,
                                         class_weights)
    assert loss.item() == pytest.approx(hand(logits.detach(), labels, weights), rel=1e-9)
    for b in range(B):
        for n in range(N):
            expected = sum(logits[b * K + k, n].item() for k in range(K)) / K
            assert sample_logits[b, n].item() == pytest.approx(expected, rel=1e-9)
    loss.backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    ignored = [b for b in range(B) if labels[b] < 0]
    for b in ignored:
        assert torch.count_nonzero(logits.grad[b * K:(b + 1) * K]) == 0


def test_strategies_differ_and_single_crop_passes_logits_through() -> None:
    logits = _logits()
    labels = torch.tensor([2, 0, 4])
    repeat, _ = multicrop_loss(logits, labels, K, "repeat_labels")
    average, _ = multicrop_loss(logits, labels, K, "average_logits")
    assert repeat.item() > average.item()  # CE is convex: mean of CEs >= CE of mean
    single = logits[:B]
    loss, sample_logits = multicrop_loss(single, labels, 1, "repeat_labels")
    assert sample_logits is single
    expected = sum(_cross_entropy(single[b].tolist(), int(labels[b])) for b in range(B)) / B
    assert loss.item() == pytest.approx(expected, rel=1e-9)


def test_all_ignored_labels_give_a_zero_loss_that_backpropagates() -> None:
    logits = _logits()
    for strategy in ("repeat_labels", "average_logits"):
        loss, _ = multicrop_loss(logits, torch.tensor([-1, -1, -1]), K, strategy)
        assert loss.item() == 0.0 and loss.requires_grad
        loss.backward()
        assert torch.count_nonzero(logits.grad) == 0


def test_unflattened_or_mismatched_logits_are_explained() -> None:
    with pytest.raises(ValueError, match="were the crops flattened"):
        multicrop_loss(torch.zeros(B, N), torch.zeros(B, dtype=torch.long), K, "repeat_labels")
    with pytest.raises(ValueError, match="crop strategy 'vote'"):
        multicrop_loss(_logits(), torch.zeros(B, dtype=torch.long), K, "vote")


def test_accuracy_counts_original_samples_not_crops() -> None:
    # Sample 0: three crops weakly favour class 1, one strongly favours class 0 -> mean says 0.
    crop_logits = torch.tensor([
        [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [9.0, 0.0],
        [0.0, 2.0], [0.0, 2.0], [0.0, 2.0], [0.0, 2.0],
        [5.0, 0.0], [5.0, 0.0], [5.0, 0.0], [5.0, 0.0],
    ])
    labels = torch.tensor([0, 0, -1])
    _, sample_logits = multicrop_loss(crop_logits, labels, K, "average_logits")
    assert count_correct(sample_logits, labels) == (1, 2)
    assert count_correct(sample_logits, torch.tensor([0, 1, 0])) == (3, 3)
    assert count_correct(sample_logits, torch.tensor([-1, -1, -1])) == (0, 0)
