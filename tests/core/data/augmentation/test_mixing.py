"""Mixup and CutMix as torchvision's v2 transforms do them, soft targets into the loss, and
label smoothing of the training loss, checked on numbers worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch
from torchvision.transforms import v2

from workbench.core.data.augmentation.mixing import BatchMixer, batch_mixer_for, soft_target_loss
from workbench.core.data.multicrop import multicrop_loss
from workbench.core.runs.config import TrainConfig


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.rand(6, 3, 16, 16, generator=generator), torch.tensor([0, 1, 2, 3, 4, 0])


@pytest.mark.parametrize("alphas, reference", [
    ((0.4, 0.0), v2.MixUp(alpha=0.4, num_classes=5)),
    ((0.0, 1.0), v2.CutMix(alpha=1.0, num_classes=5)),
    ((0.4, 1.0), v2.RandomChoice([v2.MixUp(alpha=0.4, num_classes=5),
                                  v2.CutMix(alpha=1.0, num_classes=5)])),
], ids=["mixup", "cutmix", "both"])
def test_mixing_is_torchvisions_mixup_and_cutmix(alphas, reference) -> None:
    images, labels = _batch()
    for seed in range(4):
        torch.manual_seed(seed)
        mixed = BatchMixer(5, *alphas)(images, labels)
        torch.manual_seed(seed)
        expected_images, expected_targets = reference(images, labels)
        assert torch.equal(mixed.images, expected_images)
        assert torch.allclose(mixed.targets, expected_targets)
        assert not torch.equal(mixed.images, images)


def test_dominant_labels_and_failed_images() -> None:
    images, _ = _batch()
    labels = torch.tensor([0, 1, -1, 3, 4, 0])
    torch.manual_seed(1)
    mixed = BatchMixer(5, mixup_alpha=0.4)(images, labels)
    share = mixed.share
    own = labels.clamp(min=0)
    previous = labels.roll(1)
    expected = torch.where(torch.tensor(share >= 0.5), own, previous)
    expected = torch.where(labels == -1, labels, expected)
    assert mixed.dominant_labels.tolist() == expected.tolist()
    # The failed image holds no target: its neighbour's row keeps only its own share.
    assert mixed.targets[3].sum().item() == pytest.approx(share)
    logits = torch.randn(6, 5)
    loss = soft_target_loss(logits, mixed.targets, labels)
    kept = labels != -1
    by_hand = -(mixed.targets[kept] * logits[kept].log_softmax(1)).sum(1).mean()
    assert loss.item() == pytest.approx(by_hand.item(), rel=1e-6)


def test_soft_target_loss_on_known_numbers() -> None:
    # Two equal logits and a half/half target: ln 2.
    loss = soft_target_loss(torch.zeros(1, 2), torch.tensor([[0.5, 0.5]]), torch.tensor([0]))
    assert loss.item() == pytest.approx(math.log(2))
    # logits (ln 3, 0): p = (3/4, 1/4); target (0.8, 0.2): -(0.8 ln 3/4 + 0.2 ln 1/4).
    logits = torch.tensor([[math.log(3.0), 0.0]])
    loss = soft_target_loss(logits, torch.tensor([[0.8, 0.2]]), torch.tensor([0]))
    assert loss.item() == pytest.approx(-(0.8 * math.log(0.75) + 0.2 * math.log(0.25)))
    # Smoothing 0.2 over two classes moves that target to (0.74, 0.26).
    smoothed = soft_target_loss(logits, torch.tensor([[0.8, 0.2]]), torch.tensor([0]),
                                label_smoothing=0.2)
    assert smoothed.item() == pytest.approx(-(0.74 * math.log(0.75) + 0.26 * math.log(0.25)))


def test_label_smoothing_of_mixed_targets_on_numbers_worked_out_by_hand(monkeypatch) -> None:
    # Four classes, smoothing 0.1, labels (0, 2), a mixup share forced to 0.7. smooth(y) =
    # 0.9 y + 0.025, so image 0's target is 0.7 smooth(e0) + 0.3 smooth(e2)
    # = (0.655, 0.025, 0.295, 0.025) and image 1's (0.295, 0.025, 0.655, 0.025).
    monkeypatch.setattr(torch.distributions.Beta, "sample",
                        lambda self, shape=(): torch.tensor([0.7]))
    images = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([0, 2])
    mixed = BatchMixer(4, mixup_alpha=0.2)(images, labels)
    assert mixed.share == pytest.approx(0.7)
    torch.testing.assert_close(mixed.targets, torch.tensor([[0.7, 0.0, 0.3, 0.0],
                                                          [0.3, 0.0, 0.7, 0.0]]))
    expected = torch.tensor([[0.655, 0.025, 0.295, 0.025], [0.295, 0.025, 0.655, 0.025]])
    assert (expected >= 0.1 / 4).all() and expected.sum(1).tolist() == pytest.approx([1, 1])
    logits = torch.tensor([[2.0, -1.0, 0.5, 0.0], [0.3, 1.2, -0.7, 2.5]])
    by_hand = -(expected * logits.log_softmax(1)).sum(1).mean()
    loss = soft_target_loss(logits, mixed.targets, labels, label_smoothing=0.1)
    assert loss.item() == pytest.approx(by_hand.item(), rel=1e-6)
    # Smoothing moves this loss by far more than the tolerance above.
    assert soft_target_loss(logits, mixed.targets, labels).item() != pytest.approx(
        by_hand.item(), rel=1e-3)


@pytest.mark.parametrize("strategy", ["repeat_labels", "average_logits"])
def test_label_smoothing_reaches_the_training_loss_on_known_numbers(strategy) -> None:
    # Three classes, logits (ln 2, 0, 0): p = (1/2, 1/4, 1/4). Smoothing 0.3 moves the target
    # from (1, 0, 0) to (0.8, 0.1, 0.1). Two crops of one image, both with those logits.
    logits = torch.tensor([[math.log(2.0), 0.0, 0.0]] * 2)
    labels = torch.tensor([0])
    plain, _ = multicrop_loss(logits, labels, 2, strategy)
    smoothed, _ = multicrop_loss(logits, labels, 2, strategy, label_smoothing=0.3)
    assert plain.item() == pytest.approx(math.log(2))
    assert smoothed.item() == pytest.approx(-(0.8 * math.log(0.5) + 0.2 * math.log(0.25)))


def test_a_mixer_only_where_mixing_is_on_and_the_crop_is_random() -> None:
    assert batch_mixer_for(TrainConfig(crop_mode="standard"), 3) is None
    assert batch_mixer_for(TrainConfig(crop_mode="standard", cutmix_alpha=1.0), 3) == \
        BatchMixer(3, 0.0, 1.0)
    assert batch_mixer_for(TrainConfig(crop_mode="five_crop", mixup_alpha=0.2), 3) is None

