"""Grad-CAM on a hand-weighted small CNN whose answer is known. Its last convolution has two
live channels, the image (brightness) and its inverse (darkness); class 0's score is the mean
brightness minus the mean darkness of the bottom-right corner, class 1's is the mirror (minus
that). In an image with a bright patch in that corner, class 0's map must light up the patch
and class 1's must stay dark over it (the patch is evidence against class 1) and light up the
dark background instead."""

from __future__ import annotations

import pytest
import torch

from workbench.core.models.building import SmallCNN
from workbench.core.models.grad_cam import class_activation_map

SIZE = 56  # 28 at the Grad-CAM layer, 14 after its pooling, 7x7 cells of 8 pixels at the end
PATCH = (slice(36, 52), slice(36, 52))  # inside the corner cells (rows and columns 4-6)
BACKGROUND, BRIGHT = 0.2, 1.0


def _corner_model() -> SmallCNN:
    """Channel 0 of both convolutions copies the image, channel 1 its inverse (1 - x, by the
    first batch norm's bias); hidden unit 0 averages channel 0 over the corner cells, unit 1
    channel 1; logit 0 is unit 0 - unit 1, logit 1 its negative. Everything else is 0."""
    model = SmallCNN(num_classes=2, in_channels=1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        conv1, norm1, _, _, conv2, norm2 = list(model.features)[:6]
        conv1.weight[0, 0, 1, 1] = 1.0
        conv1.weight[1, 0, 1, 1] = -1.0
        norm1.bias[1] = 1.0
        conv2.weight[0, 0, 1, 1] = 1.0
        conv2.weight[1, 1, 1, 1] = 1.0
        for norm in (norm1, norm2):  # otherwise identity: mean 0, variance 1, scale 1
            norm.weight.fill_(1.0)
        hidden = model.features[10]
        for channel in (0, 1):
            for row in range(4, 7):
                for column in range(4, 7):
                    hidden.weight[channel, channel * 49 + row * 7 + column] = 1.0 / 9.0
        model.fc.weight[0, :2] = torch.tensor([1.0, -1.0])
        model.fc.weight[1, :2] = torch.tensor([-1.0, 1.0])
    return model.eval()


def _image_with_a_bright_patch() -> torch.Tensor:
    image = torch.full((1, 1, SIZE, SIZE), BACKGROUND)
    image[0, 0, PATCH[0], PATCH[1]] = BRIGHT
    return image


def _inside_patch(margin: int = 0) -> torch.Tensor:
    """The patch's pixels; ``margin`` leaves out its edge, where scaling the map up from the
    layer's 28x28 blends in the pixels next to it."""
    mask = torch.zeros(SIZE, SIZE, dtype=torch.bool)
    start, stop = PATCH[0].start + margin, PATCH[0].stop - margin  # the patch is square
    mask[start:stop, start:stop] = True
    return mask


def test_the_map_of_the_class_the_patch_supports_lights_up_the_patch() -> None:
    cam, index, probability = class_activation_map(_corner_model(), _image_with_a_bright_patch())

    # The corner's 36 pooled cells: 16 of the patch (1.0), 20 of background (0.2). Class 0's
    # score is (16 + 20 * 0.2) / 36 - 20 * 0.8 / 36 = 1/9, class 1's -1/9: class 0 predicted
    # with probability sigmoid(2/9).
    assert index == 0
    assert probability == pytest.approx(float(torch.sigmoid(torch.tensor(2 / 9))), rel=1e-4)
    assert cam.shape == (SIZE, SIZE)
    row, column = divmod(int(cam.argmax()), SIZE)
    assert PATCH[0].start <= row < PATCH[0].stop and PATCH[1].start <= column < PATCH[1].stop
    inside = _inside_patch()
    assert float(cam[inside].mean()) > 0.5 > float(cam[~inside].mean())
    # Brightness and darkness weigh equally: relu(x - (1 - x)) is 1 on the patch and 0 on the
    # background (2 * 0.2 - 1 < 0).
    assert float(cam[44, 44]) == pytest.approx(1.0, abs=1e-5)
    assert float(cam[8, 8]) == pytest.approx(0.0, abs=1e-6)


def test_the_map_of_the_mirror_class_is_dark_over_the_patch() -> None:
    cam, index, _ = class_activation_map(_corner_model(), _image_with_a_bright_patch(),
                                         class_index=1)
    assert index == 1
    assert float(cam[_inside_patch(margin=2)].abs().max()) < 1e-6
    assert float(cam[_inside_patch()].mean()) < 0.1
    # Its evidence is the darkness around the patch, relu((1 - x) - x), scaled to a peak of 1.
    assert float(cam[8, 8]) == pytest.approx(1.0, abs=1e-5)


class _BrightnessStage(torch.nn.Module):
    """Stands in for Swin's ``features``, channels-last as Swin's stages are: each 16x16 cell's
    mean brightness in channel 0 and its darkness (1 - brightness) in channel 1, the rest 0."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.channels = channels

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        brightness = torch.nn.functional.avg_pool2d(images.mean(dim=1, keepdim=True), 16)
        maps = torch.cat([brightness, 1.0 - brightness], dim=1)
        maps = torch.nn.functional.pad(maps, (0, 0, 0, 0, 0, self.channels - 2))
        return maps.permute(0, 2, 3, 1)  # [N, h, w, C]


def test_swin_maps_are_read_channels_last_and_light_up_the_patch() -> None:
    """A Swin-T whose stages report brightness per cell, on a wide image (4x8 cells) with a
    bright patch at the right of the top row: its channels-last maps must be turned into
    [N, C, h, w] before weighting, or the map lands elsewhere (or has the wrong shape)."""
    import torchvision

    model = torchvision.models.swin_t(weights=None, num_classes=2)
    channels = model.head.in_features
    model.features = _BrightnessStage(channels)
    model.norm = torch.nn.Identity()
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
        model.head.weight[0, :2] = torch.tensor([1.0, -1.0])
        model.head.weight[1, :2] = torch.tensor([-1.0, 1.0])
    image = torch.full((1, 3, 64, 128), BACKGROUND)
    image[:, :, 0:16, 96:112] = BRIGHT  # cell (row 0, column 6)

    cam, index, _ = class_activation_map(model, image, 0)

    assert index == 0 and cam.shape == (64, 128)
    row, column = divmod(int(cam.argmax()), 128)
    assert row < 16 and 96 <= column < 112
    patch = torch.zeros(64, 128, dtype=torch.bool)
    patch[0:12, 100:108] = True  # away from the edges the upscaling blends
    assert float(cam[patch].mean()) > 0.6 and float(cam[32:, :64].max()) == 0.0
