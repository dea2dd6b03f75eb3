"""Mixup and CutMix with answers known by hand: a pixel of a mixed image holds its own image's
share of the label, a cut box's area is the rolled image's label weight, and the mixer is
there only when a config turns it on."""

from __future__ import annotations

import pytest
import torch

from workbench.core.data.augmentation.mixing import (
    BatchMixer,
    batch_mixer_for,
    one_hot_targets,
    soft_target_loss,
)
from workbench.core.runs.config import TrainConfig


def _white_and_black() -> tuple[torch.Tensor, torch.Tensor]:
    """Image 0 white (1.0), image 1 black, labels 0 and 1: a pixel's value is image 0's share."""
    images = torch.zeros(2, 3, 10, 10)
    images[0] = 1.0
    return images, torch.tensor([0, 1])


def test_a_mixup_pixel_holds_the_same_share_as_its_label() -> None:
    images, labels = _white_and_black()
    for seed in range(5):
        torch.manual_seed(seed)
        mixed = BatchMixer(2, mixup_alpha=0.4)(images, labels)
        torch.manual_seed(seed)
        drawn = float(torch.distributions.Beta(torch.tensor([0.4]), torch.tensor([0.4])).sample(()))
        assert mixed.method == "mixup" and mixed.share == pytest.approx(drawn)
        share = mixed.share
        torch.testing.assert_close(mixed.images[0], torch.full((3, 10, 10), share))
        torch.testing.assert_close(mixed.images[1], torch.full((3, 10, 10), 1.0 - share))
        torch.testing.assert_close(mixed.targets, torch.tensor([[share, 1 - share],
                                                              [1 - share, share]]))
        dominant = [0, 1] if share >= 0.5 else [1, 0]
        assert mixed.dominant_labels.tolist() == dominant
    assert torch.equal(images[0], torch.ones(3, 10, 10)), "the caller's images were changed"


def test_a_cutmix_box_area_is_the_label_weight_of_the_image_it_came_from() -> None:
    images, labels = _white_and_black()
    seen_boxes = set()
    for seed in range(12):
        torch.manual_seed(seed)
        mixed = BatchMixer(2, cutmix_alpha=1.0)(images, labels)
        assert mixed.method == "cutmix"
        pasted = 1.0 - mixed.images[0, 0].mean().item()  # black pixels in the white image
        assert mixed.images[1, 0].mean().item() == pytest.approx(pasted)
        assert mixed.share == pytest.approx(1.0 - pasted)
        torch.testing.assert_close(mixed.targets, torch.tensor(
            [[1 - pasted, pasted], [pasted, 1 - pasted]]))
        # The box is one rectangle of whole pixels.
        rows = (mixed.images[0, 0] == 0).any(1).nonzero().flatten()
        cols = (mixed.images[0, 0] == 0).any(0).nonzero().flatten()
        if rows.numel():
            box = mixed.images[0, 0, rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
            assert (box == 0).all()
            assert box.numel() == round(pasted * 100)
            seen_boxes.add((rows[0].item(), cols[0].item(), rows.numel(), cols.numel()))
    assert len(seen_boxes) >= 6


def test_a_cutmix_box_has_sides_of_the_square_root_of_the_drawn_share(monkeypatch) -> None:
    # Share drawn 0.64 (Beta forced): sides sqrt(0.36) = 0.6 of 20 px, half 6 px each way
    # round a centre far from the edges: a 12 x 12 box, 144 of 400 pixels.
    images = torch.zeros(2, 1, 20, 20)
    images[0] = 1.0
    monkeypatch.setattr(torch.distributions.Beta, "sample",
                        lambda self, shape=(): torch.tensor([0.64]))
    for seed in range(40):
        torch.manual_seed(seed)
        state = torch.get_rng_state()
        mixed = BatchMixer(2, cutmix_alpha=1.0)(images, torch.tensor([0, 1]))
        torch.set_rng_state(state)
        centre_x, centre_y = int(torch.randint(20, (1,))), int(torch.randint(20, (1,)))
        if 6 <= centre_x <= 14 and 6 <= centre_y <= 14:
            break
    else:
        raise AssertionError("no centre away from the edges in 40 seeds")
    black = (mixed.images[0, 0] == 0).nonzero()
    assert black[:, 0].min() == centre_y - 6 and black[:, 0].max() == centre_y + 5
    assert black[:, 1].min() == centre_x - 6 and black[:, 1].max() == centre_x + 5
    assert len(black) == 144
    assert mixed.share == pytest.approx(1 - 144 / 400)


def test_a_cutmix_box_near_the_top_left_corner_is_cut_at_the_edge(monkeypatch) -> None:
    # Share 0.64, a 12 x 12 box round a centre 2 px from the left and top edges: columns and
    # rows 0 to 7, 64 pixels, and the share is what is left: 1 - 64 / 400.
    images = torch.zeros(2, 1, 20, 20)
    images[0] = 1.0
    monkeypatch.setattr(torch.distributions.Beta, "sample",
                        lambda self, shape=(): torch.tensor([0.64]))
    monkeypatch.setattr(torch, "randint", lambda high, size: torch.tensor([2]))
    mixed = BatchMixer(2, cutmix_alpha=1.0)(images, torch.tensor([0, 1]))
    black = (mixed.images[0, 0] == 0).nonzero()
    assert black.min(0).values.tolist() == [0, 0] and black.max(0).values.tolist() == [7, 7]
    assert len(black) == 64
    assert mixed.share == pytest.approx(1 - 64 / 400)


def test_with_both_on_each_is_chosen_about_half_the_time() -> None:
    images, labels = _white_and_black()
    methods = []
    for seed in range(100):
        torch.manual_seed(seed)
        methods.append(BatchMixer(2, mixup_alpha=0.4, cutmix_alpha=1.0)(images, labels).method)
    assert 30 <= methods.count("mixup") <= 70


def test_nothing_to_mix_is_refused() -> None:
    images, labels = _white_and_black()
    with pytest.raises(ValueError) as refused:
        BatchMixer(2)(images, labels)
    assert str(refused.value) == "mixup_alpha and cutmix_alpha are both 0: nothing to mix"


def test_one_hot_rows_and_a_failed_image_holds_none() -> None:
    targets = one_hot_targets(torch.tensor([2, -1, 0]), 3, torch.float64)
    assert targets.dtype == torch.float64
    assert targets.tolist() == [[0, 0, 1], [0, 0, 0], [1, 0, 0]]


def test_the_loss_of_a_batch_of_failed_images_is_zero_and_keeps_its_gradient() -> None:
    logits = torch.randn(2, 3, requires_grad=True)
    loss = soft_target_loss(logits, torch.zeros(2, 3), torch.tensor([-1, -1]))
    assert loss.item() == 0.0
    loss.backward()
    assert torch.equal(logits.grad, torch.zeros(2, 3))


def test_class_weights_weigh_the_soft_target_loss() -> None:
    # Two equal logits, target (1, 0), weight 3 for class 0: F.cross_entropy's mean over
    # probability targets does not divide by the weight: 3 ln 2.
    logits = torch.zeros(1, 2)
    loss = soft_target_loss(logits, torch.tensor([[1.0, 0.0]]), torch.tensor([0]),
                            class_weights=torch.tensor([3.0, 1.0]))
    assert loss.item() == pytest.approx(3 * 0.6931471805599453)
    # bfloat16 logits (a model trained in bfloat16) with float32 weights and targets: both
    # follow the logits' type, and so does the loss.
    half = torch.tensor([[0.5, -0.25, 1.0]], dtype=torch.bfloat16)
    targets = torch.tensor([[0.7, 0.2, 0.1]])
    weights = torch.tensor([3.0, 1.0, 0.5])
    loss = soft_target_loss(half, targets, torch.tensor([0]), class_weights=weights)
    expected = torch.nn.functional.cross_entropy(half, targets.bfloat16(),
                                                 weight=weights.bfloat16())
    assert loss.dtype == torch.bfloat16 and loss.item() == expected.item()


def test_a_mixer_for_mixup_alone_and_only_for_positive_alphas() -> None:
    assert batch_mixer_for(TrainConfig(crop_mode="standard", mixup_alpha=0.2), 4) == \
        BatchMixer(4, 0.2, 0.0)
    assert batch_mixer_for(TrainConfig(crop_mode="standard", mixup_alpha=0.2,
                                       cutmix_alpha=1.0), 4) == BatchMixer(4, 0.2, 1.0)
    assert batch_mixer_for(TrainConfig(crop_mode="ten_crop", cutmix_alpha=1.0), 4) is None
