"""BatchNorm statistics recomputed on training images before every validation.

A BatchNorm layer normalises with the batch's own mean and variance in training and with its
running averages in evaluation. Each step moves those averages by ``momentum`` towards the
batch's, so in evaluation a network is normalised with figures that are wrong in two ways:

- They keep part of their start: after ``n`` steps ``(1 - momentum) ** n`` of it is left. From
  random weights the start is mean 0 and variance 1, values the network's activations do not
  have; from pretrained weights (ImageNet's or a weights file) it is the source images', not
  this folder's. torchvision's MobileNetV3 and EfficientNet use a momentum of 0.01, so 60 steps
  leave 55% of the start, and in evaluation their activations shrink layer after layer until
  every image gets the same output (validation at chance, loss ln(classes), while training
  accuracy climbs). On the real faces set, MobileNetV3-Small trained from scratch validated at
  0.50 after every epoch and at 0.90-1.00 with the statistics recomputed; fine-tuned in full
  from features pretrained on clip art (``bench/reference/pretrained_standin.py``), ResNet-18
  on 15 digit scans a class validated at 0.22-0.49 without and 0.34-0.64 with it.
- They lag the weights: with momentum 0.1 they average the last ten or so batches, each
  computed by weights that the steps since have changed. On the 8 px digit scans (600
  training images, ResNet-18 from random weights, SGD lr 0.01, 5 epochs), recomputing before
  every validation instead of only while more than 1% of the start was left raised the best
  validation accuracy by 0.043 +- 0.007 (20 seeds, 18 better; docs/speed.md).

The fix is the "precise BN" of Wu and Johnson (2021) and of fvcore / detectron2's
``update_bn_stats``: before validating, run training batches through the network in training
mode without gradients and set each layer's running averages to the plain mean over them. It
costs forward passes of about ``MAX_IMAGES`` training images an epoch (no backward pass).
The session applies it to the torchvision models only: small_cnn's two BatchNorm layers
validated the same with and without it on the real sets. A frozen backbone's layers
(``last_layer``) are in evaluation mode and keep their averages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import torch
from torch import nn

# Training images averaged over (whole batches, the last one may pass it): 10 batches of 32.
# Half as many, at half the cost, validated 0.007 +- 0.002 lower on the parity bench's 8 px
# digit scans (15 of 20 seeds lower) and the same on its other real sets (docs/speed.md).
MAX_IMAGES = 320

Prepare = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def batch_norm_layers(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    """The BatchNorm layers whose running statistics training updates: those in training
    mode (a frozen backbone's are in evaluation mode and keep the averages they have)."""
    return [module for module in model.modules()
            if isinstance(module, nn.modules.batchnorm._BatchNorm)
            and module.track_running_stats and module.training]


def recompute_batch_norm_statistics(
    model: nn.Module,
    batches: Iterator[tuple[torch.Tensor, torch.Tensor]],
    prepare: Prepare,
    autocast: Callable[[], AbstractContextManager],
    max_images: int = MAX_IMAGES,
) -> int:
    """Set the running mean and variance of every BatchNorm layer in training mode (the model
    as it trains: frozen layers in evaluation mode are left alone) to their average over the
    first of ``batches`` (prepared as for training) until ``max_images`` images have been seen.
    The weights, the layers' momenta and every module's mode are as before. Returns the batches
    used."""
    layers = batch_norm_layers(model)
    if not layers:
        return 0
    momenta = [layer.momentum for layer in layers]
    before = [{name: buffer.clone() for name, buffer in layer.named_buffers()}
              for layer in layers]
    used = images = 0
    try:
        for layer in layers:
            layer.reset_running_stats()
            layer.momentum = None  # a plain average over the batches that follow
        with torch.no_grad(), autocast():
            for raw_inputs, raw_labels in batches:
                if images >= max_images:
                    break
                inputs, _labels = prepare(raw_inputs, raw_labels)
                if inputs.shape[0] < 2:  # one image has no batch variance
                    continue
                model(inputs)
                used += 1
                images += inputs.shape[0]
    finally:
        for layer, momentum, buffers in zip(layers, momenta, before, strict=True):
            layer.momentum = momentum
            if used == 0:  # nothing seen (or an error): the averages as they were
                for name, value in buffers.items():
                    getattr(layer, name).copy_(value)
    return used
