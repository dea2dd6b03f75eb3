"""Grad-CAM (Selvaraju et al., 2017): where in an image the model looked for a class.

The gradient of the class score with respect to the last convolutional feature maps, averaged
over each map, weighs those maps; their ReLU'd sum, scaled up to the image, is the heat map.
The layer is each family's last stage of feature maps (``target_layer``): ResNet's ``layer4``,
RegNet's ``trunk_output``, ShuffleNet's ``conv5``, the ``features`` of MobileNet,
EfficientNet and ConvNeXt, the small CNN's last convolution; Swin's ``features`` give
channels-last maps, and ViT's tokens entering its last block (``ln_1``: the class token reads
them there, so they have gradients) are laid back on their patch grid. The whole resized
image goes through the network (the convolutional ones pool adaptively, Swin pads), so the
map covers the picture the user sees, not one crop of it; ViT takes only its own square size,
so the image is resized to it and the map back. The class and probability it
names are the run's own prediction, made as predictions.csv's is: the evaluation crops'
logits averaged, then the softmax. The whole image would give another figure, and the
caption would contradict the gallery beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch import Tensor, nn

from workbench.core.data.image_cache import load_image_uint8
from workbench.core.data.transforms import build_eval_transform, normalization_for
from workbench.core.models.building import SmallCNN
from workbench.core.models.checkpoint_format import load_model_file
from workbench.core.runs.config import TrainConfig

# Share of the overlay's colour that comes from the heat map.
OVERLAY_ALPHA = 0.45


@dataclass(frozen=True)
class GradCam:
    """A heat map over an image.

    Attributes:
        path: the image file.
        image: the image as the model saw it, uint8 ``HxWx3`` (gray images repeated to RGB).
        heatmap: float32 ``HxW`` in 0..1, 1 where the class evidence is strongest.
        class_name: the class the map explains.
        probability: the model's probability of that class for this image, from its
            evaluation crops as predictions.csv has it.
    """

    path: str
    image: np.ndarray
    heatmap: np.ndarray
    class_name: str
    probability: float

    def overlay(self, alpha: float = OVERLAY_ALPHA) -> np.ndarray:
        """The image with the heat map blended over it, uint8 ``HxWx3``."""
        return overlay_heatmap(self.image, self.heatmap, alpha)


_FEATURES_STAGE = (torchvision.models.MobileNetV3, torchvision.models.EfficientNet,
                   torchvision.models.ConvNeXt, torchvision.models.SwinTransformer)


def target_layer(model: nn.Module) -> nn.Module:
    """The layer Grad-CAM reads (see the module's docstring for each family).

    Raises:
        TypeError: the model is of no family Workbench trains.
    """
    models = torchvision.models
    if isinstance(model, models.ResNet):
        return model.layer4
    if isinstance(model, models.RegNet):
        return model.trunk_output
    if isinstance(model, models.ShuffleNetV2):
        return model.conv5
    if isinstance(model, _FEATURES_STAGE):
        return model.features
    if isinstance(model, models.VisionTransformer):
        return model.encoder.layers[-1].ln_1
    if isinstance(model, SmallCNN):
        convolutions = [m for m in model.features if isinstance(m, nn.Conv2d)]
        return convolutions[-1]
    raise TypeError(f"Grad-CAM does not know the last feature maps of a {type(model).__name__}")


def _as_maps(model: nn.Module, activations: Tensor) -> Tensor:
    """The target layer's output as ``[N, C, h, w]`` maps."""
    if isinstance(model, torchvision.models.SwinTransformer):
        return activations.permute(0, 3, 1, 2)  # Swin's stages are channels-last
    if isinstance(model, torchvision.models.VisionTransformer):
        patches = activations[:, 1:]  # the class token has no place on the grid
        side = math.isqrt(patches.shape[1])
        return patches.transpose(1, 2).reshape(patches.shape[0], -1, side, side)
    return activations


def _network_input(model: nn.Module, images: Tensor) -> Tensor:
    """``images`` at a size the network takes: ViT's own square, any size for the others."""
    if isinstance(model, torchvision.models.VisionTransformer):
        size = (model.image_size, model.image_size)
        if tuple(images.shape[-2:]) != size:
            return F.interpolate(images, size=size, mode="bilinear", align_corners=False)
    return images


def class_activation_map(model: nn.Module, images: Tensor, class_index: int | None = None
                         ) -> tuple[Tensor, int, float]:
    """Grad-CAM of one normalised image ``[1,C,H,W]`` for ``class_index`` (default: predicted).

    Returns:
        The map ``[H,W]`` in 0..1 at the image's size, the class index and its probability.
    """
    layer = target_layer(model)
    captured: dict[str, Tensor] = {}

    def keep(_module: nn.Module, _inputs: object, output: Tensor) -> None:
        output.retain_grad()
        captured["maps"] = output

    handle = layer.register_forward_hook(keep)
    try:
        model.eval()
        with torch.enable_grad():
            inputs = _network_input(model, images.detach()).requires_grad_(True)  # even if frozen
            logits = model(inputs)
            index = int(logits.argmax(dim=1)) if class_index is None else class_index
            model.zero_grad(set_to_none=True)
            logits[0, index].backward()
    finally:
        handle.remove()
    maps, gradients = (_as_maps(model, tensor) for tensor in
                       (captured["maps"], captured["maps"].grad))
    weights = gradients.mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * maps).sum(dim=1, keepdim=True)).detach()
    cam = F.interpolate(cam, size=images.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    peak = float(cam.max())
    cam = cam / peak if peak > 0 else cam
    probability = float(logits.detach().softmax(dim=1)[0, index])
    return cam, index, probability


def grad_cam_for_image(model: nn.Module, class_names: list[str], config: TrainConfig,
                       image_path: str | Path, class_name: str | None = None) -> GradCam:
    """Grad-CAM of ``image_path`` under a trained model, preprocessed as its run was.

    Raises:
        ImageDecodeError: the image cannot be decoded.
        ValueError: ``class_name`` is not one of ``class_names``.
    """
    if class_name is not None and class_name not in class_names:
        raise ValueError(f"'{class_name}' is not one of the model's classes {class_names}")
    grayscale = config.in_channels == 1
    image = load_image_uint8(str(image_path), config.resize_size, grayscale=grayscale,
                             interpolation=config.interpolation)
    mean, std = normalization_for(config)
    mean_t = torch.tensor(mean).view(1, -1, 1, 1)
    std_t = torch.tensor(std).view(1, -1, 1, 1)
    probabilities = crop_probabilities(model, image, config, mean_t, std_t)
    index = int(probabilities.argmax()) if class_name is None else class_names.index(class_name)
    inputs = (image.unsqueeze(0).float() / 255.0 - mean_t) / std_t
    cam, _, _ = class_activation_map(model, inputs, index)
    rgb = image.permute(1, 2, 0).numpy()
    if rgb.shape[2] == 1:
        rgb = np.repeat(rgb, 3, axis=2)
    return GradCam(str(image_path), np.ascontiguousarray(rgb), cam.numpy().astype(np.float32),
                   class_names[index], float(probabilities[index]))


def crop_probabilities(model: nn.Module, image: Tensor, config: TrainConfig, mean: Tensor,
                       std: Tensor) -> Tensor:
    """Class probabilities of a decoded uint8 ``[C,H,W]`` image as the run's evaluation gives
    them: its evaluation crops (centre, five or ten) through the model in eval mode, their
    logits averaged, then the softmax."""
    crops = build_eval_transform(config)(image)
    crops = crops if crops.dim() == 4 else crops.unsqueeze(0)
    model.eval()
    with torch.no_grad():
        logits = model((crops.float() / 255.0 - mean) / std)
    return logits.float().mean(dim=0).softmax(dim=0)


def grad_cam_from_model_file(model_file: str | Path, image_path: str | Path,
                             class_name: str | None = None) -> GradCam:
    """Load a best-model or checkpoint file on the CPU and compute ``grad_cam_for_image``.

    Raises:
        CheckpointError: the model file cannot be used.
        ImageDecodeError: the image cannot be decoded.
    """
    model, class_names, config = load_model_file(model_file)
    return grad_cam_for_image(model, class_names, config, image_path, class_name)


def overlay_heatmap(image: np.ndarray, heatmap: np.ndarray, alpha: float = OVERLAY_ALPHA
                    ) -> np.ndarray:
    """Blend a 0..1 heat map (blue: cold, red: hot) over a uint8 ``HxWx3`` image."""
    colours = _jet(np.clip(heatmap, 0.0, 1.0))
    blended = (1.0 - alpha) * image.astype(np.float32) + alpha * colours
    return np.clip(blended + 0.5, 0, 255).astype(np.uint8)


def _jet(values: np.ndarray) -> np.ndarray:
    """The 'jet' colour map as float RGB 0..255 (piecewise linear, no matplotlib)."""
    red = np.clip(1.5 - np.abs(4.0 * values - 3.0), 0.0, 1.0)
    green = np.clip(1.5 - np.abs(4.0 * values - 2.0), 0.0, 1.0)
    blue = np.clip(1.5 - np.abs(4.0 * values - 1.0), 0.0, 1.0)
    return np.stack([red, green, blue], axis=-1) * 255.0
