"""torchvision's ``ColorJitter`` for a whole uint8 batch, with every image's own factors.

``v2.ColorJitter`` given a batch draws one set of factors for all of it. Here each image gets
its own brightness, contrast and saturation factors and hue shift (``[B,1,1,1]`` tensors) and
its own order of the four operations, as ``ColorJitter`` draws them for one image, and the
batch is adjusted in one go on its device. The operations are torchvision's formulas (blend
with black, with the image's mean grey, with its grey version; a shift of the hue) computed in
float and rounded once at the end, so a pixel is within a grey level or two of torchvision's
uint8 result, which rounds after each operation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torchvision.transforms.v2.functional._color import _hsv_to_rgb, _rgb_to_hsv

BRIGHTNESS, CONTRAST, SATURATION, HUE = range(4)
# The luma weights of torchvision's rgb_to_grayscale.
GREY_WEIGHTS = (0.2989, 0.587, 0.114)


@dataclass(frozen=True)
class ColourJitter:
    """Strengths as ``ColorJitter(brightness, contrast, saturation, hue)``; 0 leaves that one."""

    brightness: float = 0.0
    contrast: float = 0.0
    saturation: float = 0.0
    hue: float = 0.0

    @property
    def active(self) -> bool:
        return any((self.brightness, self.contrast, self.saturation, self.hue))

    def draw(self, count: int, generator: torch.Generator | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """(factors ``[count,4]`` float64: brightness, contrast, saturation, hue shift; order
        ``[count,4]``: each image's permutation of the four operations)."""
        uniform = torch.rand((count, 8), dtype=torch.float64, generator=generator)
        order = uniform[:, 4:].argsort(dim=1)
        factors = torch.empty((count, 4), dtype=torch.float64)
        for column, strength in enumerate((self.brightness, self.contrast, self.saturation)):
            low = max(0.0, 1.0 - strength)
            factors[:, column] = low + (1.0 + strength - low) * uniform[:, column]
        factors[:, HUE] = -self.hue + 2.0 * self.hue * uniform[:, HUE]
        return factors, order

    def __call__(self, images: torch.Tensor, generator: torch.Generator | None = None
                 ) -> torch.Tensor:
        """Jitter every image of uint8 ``[B,C,H,W]`` with its own draws from ``generator``."""
        factors, order = self.draw(images.shape[0], generator)
        return jitter(images, factors, order, self.strengths())

    def strengths(self) -> tuple[float, float, float, float]:
        return (self.brightness, self.contrast, self.saturation, self.hue)


def jitter(images: torch.Tensor, factors: torch.Tensor, order: torch.Tensor,
           strengths: tuple[float, float, float, float]) -> torch.Tensor:
    """Apply the operations whose strength is not 0 in each image's ``order``."""
    device = images.device
    pixels = images.float()
    factors = factors.to(dtype=torch.float32)
    order = order.cpu()  # which images take which step is decided here, without a GPU sync
    for position in range(4):
        for operation in range(4):
            if not strengths[operation]:
                continue
            chosen = (order[:, position] == operation).nonzero().squeeze(1)
            if chosen.numel():
                factor = factors[chosen, operation].view(-1, 1, 1, 1).to(device)
                chosen = chosen.to(device)
                pixels[chosen] = _ADJUST[operation](pixels[chosen], factor)
    return pixels.round_().clamp_(0, 255).to(torch.uint8)


def _blend(pixels: torch.Tensor, other: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    return (pixels * factor + other * (1.0 - factor)).clamp_(0.0, 255.0)


def _grey(pixels: torch.Tensor) -> torch.Tensor:
    if pixels.shape[1] == 1:
        return pixels
    red, green, blue = pixels.unbind(dim=1)
    return (red * GREY_WEIGHTS[0] + green * GREY_WEIGHTS[1] + blue * GREY_WEIGHTS[2]
            ).unsqueeze(1)


def _brightness(pixels: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    return _blend(pixels, torch.zeros_like(pixels), factor)


def _contrast(pixels: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    mean = _grey(pixels).mean(dim=(1, 2, 3), keepdim=True)
    return _blend(pixels, mean, factor)


def _saturation(pixels: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    if pixels.shape[1] == 1:
        return pixels  # a grey image has no saturation (torchvision leaves it too)
    return _blend(pixels, _grey(pixels), factor)


def _hue(pixels: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    if pixels.shape[1] == 1:
        return pixels  # nor a hue
    hsv = _rgb_to_hsv(pixels / 255.0)
    hue = (hsv[:, 0:1] + shift.view(-1, 1, 1, 1)).remainder(1.0)
    return _hsv_to_rgb(torch.cat((hue, hsv[:, 1:]), dim=1)) * 255.0


_ADJUST = (_brightness, _contrast, _saturation, _hue)
