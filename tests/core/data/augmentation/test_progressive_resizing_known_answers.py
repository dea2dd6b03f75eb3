"""Progressive resizing with answers worked out by hand: the size step for each crop, the
sizes of short and switched-off runs, the resized batch's size and layout, the log line."""

from __future__ import annotations

import torch

from workbench.core.data.augmentation.progressive_resizing import (
    describe_sizes,
    resize_prepared_batch,
    size_step,
    training_sizes,
)


def test_the_size_step_of_each_crop() -> None:
    assert [size_step(size) for size in (224, 160, 159, 64, 48, 47, 28)] == \
        [32, 32, 8, 8, 8, 2, 2]


def test_short_and_switched_off_runs_train_at_the_crop() -> None:
    assert training_sizes(64, 0.5, 1) == [64]  # one epoch: nothing to grow over
    assert training_sizes(64, 0.5, 0) == []
    assert training_sizes(64, 0.5, -1) == []
    assert training_sizes(64, 1.0, 2) == [64, 64]
    assert training_sizes(64, 1.5, 2) == [64, 64]
    # A crop that is not a multiple of its step (8 px) is kept as it is.
    assert training_sizes(100, 1.0, 3) == [100, 100, 100]


def test_a_crop_that_is_not_a_multiple_of_its_step_is_reached_at_the_end_of_the_ramp() -> None:
    # 100 px from 0.5 over 4 epochs (steps of 8, a ramp of ceil(3) = 3 epochs): 50, 75 -> 48,
    # 72, then 100 from the end of the ramp (not 96, the nearest multiple of 8).
    assert training_sizes(100, 0.5, 4) == [48, 72, 100, 100]
    assert training_sizes(200, 0.5, 8)[-3:] == [200, 200, 200]
    assert describe_sizes(training_sizes(100, 0.5, 4), 100).startswith(
        "Progressive resizing: training crops grow from 48 px in epoch 1 to 100 px from epoch 3")


def test_two_epochs_start_small_and_end_at_the_crop() -> None:
    # ramp max(2, ceil(1.5)) = 2: 32 then 64 (steps of 8).
    assert training_sizes(64, 0.5, 2) == [32, 64]
    # 4 epochs: ramp ceil(3) = 3, 32, 48, 64, 64.
    assert training_sizes(64, 0.5, 4) == [32, 48, 64, 64]
    # 96 px from 0.4 over 10 epochs: ramp ceil(7.5) = 8; 38.4 + 57.6 e / 7 in steps of 8:
    # 38.4, 46.6, 54.9, 63.1, 71.3, 79.5, 87.8, 96 -> 40, 48, 56, 64, 72, 80, 88, 96.
    assert training_sizes(96, 0.4, 10) == [40, 48, 56, 64, 72, 80, 88, 96, 96, 96]


def test_the_smallest_size_defaults_to_8_px() -> None:
    # From 2 px over a ramp of 3 epochs: 2, 11, 20 -> 2, 12 (banker's rounding of 5.5), 20.
    assert training_sizes(20, 0.1, 3) == [8, 12, 20]
    assert training_sizes(20, 0.1, 3, smallest=4) == [4, 12, 20]


def test_a_batch_at_its_size_passes_through_and_others_are_resized_in_the_layout_asked() -> None:
    images = torch.rand(2, 3, 16, 16)
    labels = torch.tensor([1, 0])

    def prepare(batch, batch_labels):
        return batch * 2.0, batch_labels + 1

    same, same_labels = resize_prepared_batch(prepare, 16, channels_last=True)(images, labels)
    torch.testing.assert_close(same, images * 2.0)
    # At its size the prepared batch passes through untouched, its layout kept.
    assert same.is_contiguous() and not same.is_contiguous(memory_format=torch.channels_last)
    assert same_labels.tolist() == [2, 1]
    small, small_labels = resize_prepared_batch(prepare, 8, channels_last=True)(images, labels)
    assert small.shape == (2, 3, 8, 8) and small_labels.tolist() == [2, 1]
    assert small.is_contiguous(memory_format=torch.channels_last)
    # A weighted average of pixels: a flat image stays flat.
    flat, _ = resize_prepared_batch(prepare, 5, channels_last=True)(
        torch.full((1, 3, 16, 16), 0.25), labels[:1])
    torch.testing.assert_close(flat, torch.full((1, 3, 5, 5), 0.5))
    plain, _ = resize_prepared_batch(prepare, 8, channels_last=False)(images, labels)
    assert plain.is_contiguous() and not plain.is_contiguous(memory_format=torch.channels_last)


def test_the_log_line_names_the_first_size_and_the_first_full_epoch() -> None:
    assert describe_sizes([32, 48, 64, 64], 64) == (
        "Progressive resizing: training crops grow from 32 px in epoch 1 to 64 px from "
        "epoch 3 (epoch by epoch: 32, 48, 64, 64 px); validation, prediction and exports "
        "use 64 px.")
