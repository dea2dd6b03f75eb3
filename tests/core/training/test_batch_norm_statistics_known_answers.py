"""BatchNorm recomputation with batches whose averages are known: which batches count (those of
two images or more), that they are prepared as for training (images and labels), and a network
without BatchNorm recomputes nothing."""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from workbench.core.training.batch_norm_statistics import recompute_batch_norm_statistics


def test_batches_of_two_or_more_images_are_averaged_and_a_single_image_is_not() -> None:
    bn = nn.BatchNorm1d(1)
    net = nn.Sequential(bn).train()
    labels_seen = []

    def prepare(inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        labels_seen.append(labels.tolist())  # as training prepares them: images and labels
        return inputs, labels.to("cpu")

    one = (torch.tensor([[100.0]]), torch.tensor([0]))
    two = (torch.tensor([[1.0], [3.0]]), torch.tensor([0, 1]))  # mean 2, unbiased variance 2
    three = (torch.tensor([[4.0], [6.0], [8.0]]), torch.tensor([1, 1, 0]))  # mean 6, variance 4
    used = recompute_batch_norm_statistics(net, iter([one, two, three]), prepare,
                                           contextlib.nullcontext)
    assert used == 2
    assert labels_seen == [[0], [0, 1], [1, 1, 0]]
    # The plain average of the two counted batches; the single image (100) is left out.
    assert bn.running_mean.item() == 4.0
    assert bn.running_var.item() == 3.0


def test_a_network_without_batch_norm_recomputes_nothing() -> None:
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    batches = iter([(torch.ones(4, 2), torch.zeros(4, dtype=torch.long))])
    assert recompute_batch_norm_statistics(
        net, batches, lambda x, y: (x, y), contextlib.nullcontext) == 0
