"""The batch a config trains with on a given training set, and what a small validation set
means, as the run, the command line and a check before a run say it."""

from __future__ import annotations

import pytest

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.training_set_size import effective_batch_size, small_set_expectation


@pytest.mark.parametrize(("requested", "images", "used"), [(32, 40, 32), (40, 40, 40),
                                                           (1, 1, 1), (64, 0, 64)])
def test_a_batch_that_fits_the_training_set_is_kept(requested, images, used):
    batch = effective_batch_size(TrainConfig(batch_size=requested), images)
    assert (batch.batch_size, batch.requested, batch.clamped, batch.sentence) == \
        (used, requested, False, "")


def test_a_batch_larger_than_the_training_set_becomes_the_whole_set():
    batch = effective_batch_size(TrainConfig(batch_size=64), 40)
    assert (batch.batch_size, batch.requested, batch.clamped) == (40, 64, True)
    assert batch.sentence == (
        "Batch size (batch_size) 64 is more than the 40 training images, so the run trains "
        "with a batch of 40: one step an epoch, every image in it.")


def test_under_torchrun_the_batch_is_clamped_to_each_process_share():
    # 41 images over 2 processes: the sampler gives each ceil(41 / 2) = 21.
    batch = effective_batch_size(TrainConfig(batch_size=32), 41, world_size=2)
    assert (batch.batch_size, batch.clamped) == (21, True)
    assert "the 21 training images each of the 2 processes reads" in batch.sentence
    assert not effective_batch_size(TrainConfig(batch_size=21), 41, world_size=2).clamped


def test_a_small_validation_set_says_what_one_image_is_worth():
    text = small_set_expectation(14, 6)
    assert text is not None
    assert text.startswith("Small dataset: 14 training and 6 validation images. Each "
                           "validation image is ~17 points of val accuracy")  # 100 / 6
    assert "swing from run to run" in text
    assert "~2 points" in small_set_expectation(200, 49)
    assert small_set_expectation(200, 50) is None
    assert small_set_expectation(10, 0) is None
