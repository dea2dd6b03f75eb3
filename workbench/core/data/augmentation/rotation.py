"""torchvision's ``RandomRotation`` for a whole uint8 batch, each image at its own angle.

``v2.RandomRotation`` given a batch turns all of it by one angle. Here every image gets its own
angle, uniform in ``[-degrees, degrees]``, and the batch is turned in one ``grid_sample`` call
with torchvision's own sampling grid (``rotate``'s inverse matrix and pixel-centred grid,
nearest pixel, corners left black), so one image turns exactly as ``v2.functional.rotate``
turns it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class RandomRotation:
    """Rotation by a random angle in ``[-degrees, degrees]`` (counter-clockwise positive)."""

    degrees: float = 0.0

    @property
    def active(self) -> bool:
        return self.degrees > 0

    def draw(self, count: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``count`` angles in degrees, float64."""
        uniform = torch.rand(count, dtype=torch.float64, generator=generator)
        return -self.degrees + 2.0 * self.degrees * uniform

    def __call__(self, images: torch.Tensor, generator: torch.Generator | None = None
                 ) -> torch.Tensor:
        """Turn every image of uint8 ``[B,C,H,W]`` by its own angle from ``generator``."""
        return rotate(images, self.draw(images.shape[0], generator))


def rotate(images: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Turn image ``i`` of uint8 ``[B,C,H,W]`` by ``angles[i]`` degrees about its centre."""
    count, _, height, width = images.shape
    radians = torch.deg2rad(angles.double())
    cos, sin = torch.cos(radians), torch.sin(radians)
    zero = torch.zeros_like(cos)
    # torchvision's inverse matrix of rotate(angle): output pixel -> source pixel, about the
    # centre, in pixel units; rows (x, y).
    theta = torch.stack((torch.stack((cos, -sin, zero), 1), torch.stack((sin, cos, zero), 1)), 1)
    theta = theta.to(device=images.device, dtype=torch.float32)
    grid = _pixel_grid(height, width, images.device)  # [H*W, 3]
    scale = torch.tensor([0.5 * width, 0.5 * height], device=images.device)
    rescaled = theta.transpose(1, 2) / scale  # [B,3,2]
    sampling = grid.expand(count, -1, -1).bmm(rescaled).view(count, height, width, 2)
    turned = F.grid_sample(images.float(), sampling, mode="nearest", padding_mode="zeros",
                           align_corners=False)
    return turned.round_().to(torch.uint8)


def _pixel_grid(height: int, width: int, device: torch.device) -> torch.Tensor:
    """Pixel centres relative to the image centre, with a 1 for the translation: [H*W, 3]."""
    grid = torch.empty(height, width, 3, device=device)
    grid[..., 0] = torch.linspace((1.0 - width) * 0.5, (width - 1.0) * 0.5, steps=width,
                                  device=device)
    grid[..., 1] = torch.linspace((1.0 - height) * 0.5, (height - 1.0) * 0.5, steps=height,
                                  device=device).unsqueeze(-1)
    grid[..., 2] = 1.0
    return grid.view(1, height * width, 3)

