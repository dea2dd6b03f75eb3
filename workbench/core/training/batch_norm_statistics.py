"""BatchNorm statistics recomputed on training images before validation, while they are stale.

A BatchNorm layer normalises with the batch's own mean and variance in training and with its
running averages in evaluation. Each step moves those averages by ``momentum`` towards the
batch's; after ``n`` steps ``(1 - momentum) ** n`` of where they started is left. From random
weights they start from mean 0 and variance 1, values the network's activations do not have; from
pretrained weights (ImageNet's or a weights file) they start from the source images', which are
not this folder's. torchvision's MobileNetV3 and EfficientNet use a momentum of 0.01, so 60 steps
leave 55% of the start, and in evaluation their activations shrink layer after layer until every
image gets the same output (validation at chance, loss ln(classes), while training accuracy
climbs). On the real faces set, MobileNetV3-Small trained from scratch validated at 0.50 after
every epoch and at 0.90-1.00 with the statistics recomputed. Fine-tuned in full from features
pretrained on clip art (``bench/reference/pretrained_standin.py``), MobileNetV3-Small validated
at 0.18-0.21 on 60 digit scans a class without the recomputation and at 0.20-0.44 with it, and
ResNet-18 on 15 scans a class at 0.22-0.49 without and 0.34-0.64 with it (the means of three
recipes over three seeds each; docs/recipes.md).

The fix is the "precise BN" of Wu and Johnson (2021) and of fvcore / detectron2's
``update_bn_stats``: before validating, run training batches through the network in training
mode without gradients and set each layer's running averages to the plain mean over them. It
costs forward passes of up to ``MAX_BATCHES`` batches, and only runs while the averages still
hold more than ``STALE_SHARE`` of their start, so large folders stop paying for it once enough
steps have passed. The session applies it to the torchvision models only: small_cnn's two
BatchNorm layers validated the same with and without it on the real sets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import torch
from torch import nn

# Recompute while a layer's running averages hold more than this share of their start.
STALE_SHARE = 0.01
# Training batches averaged over: enough images for the statistics (160 at batch 16), few
# enough that a small folder's first epochs do not pay much for them.
MAX_BATCHES = 10

Prepare = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def batch_norm_layers(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    """The BatchNorm layers whose running statistics training updates: those in training
    mode (a frozen backbone's are in evaluation mode and keep the averages they have)."""
    return [module for module in model.modules()
            if isinstance(module, nn.modules.batchnorm._BatchNorm)
            and module.track_running_stats and module.training]


def stale_share(model: nn.Module, steps_taken: int) -> float:
    """The largest share of their starting values the running averages of any BatchNorm layer
    in training mode still hold after ``steps_taken`` training steps (0 without such layers;
    a cumulative average, momentum None, holds none)."""
    shares = [(1.0 - layer.momentum) ** steps_taken for layer in batch_norm_layers(model)
              if layer.momentum is not None]
    return max(shares, default=0.0)


def statistics_are_stale(model: nn.Module, steps_taken: int) -> bool:
    """True while the running averages of a BatchNorm layer in training mode still hold more
    than ``STALE_SHARE`` of their start, whatever the weights started from."""
    return stale_share(model, steps_taken) > STALE_SHARE


def recompute_batch_norm_statistics(
    model: nn.Module,
    batches: Iterator[tuple[torch.Tensor, torch.Tensor]],
    prepare: Prepare,
    autocast: Callable[[], AbstractContextManager],
    max_batches: int = MAX_BATCHES,
) -> int:
    """Set the running mean and variance of every BatchNorm layer in training mode (the model
    as it trains: frozen layers in evaluation mode are left alone) to their average over up to
    ``max_batches`` of ``batches``, prepared as for training. The weights, the layers' momenta
    and every module's mode are as before. Returns the batches used."""
    layers = batch_norm_layers(model)
    if not layers:
        return 0
    momenta = [layer.momentum for layer in layers]
    before = [{name: buffer.clone() for name, buffer in layer.named_buffers()}
              for layer in layers]
    used = 0
    try:
        for layer in layers:
            layer.reset_running_stats()
            layer.momentum = None  # a plain average over the batches that follow
        with torch.no_grad(), autocast():
            for raw_inputs, raw_labels in batches:
                if used >= max_batches:
                    break
                inputs, _labels = prepare(raw_inputs, raw_labels)
                if inputs.shape[0] < 2:  # one image has no batch variance
                    continue
                model(inputs)
                used += 1
    finally:
        for layer, momentum, buffers in zip(layers, momenta, before, strict=True):
            layer.momentum = momentum
            if used == 0:  # nothing seen (or an error): the averages as they were
                for name, value in buffers.items():
                    getattr(layer, name).copy_(value)
    return used
