"""torchvision's TrivialAugmentWide and RandAugment, one image at a time, each with its own draws.

A v2 policy given a batch picks one operation and one strength for all of it, so the batch is
walked image by image (on whatever device it lives). The policies draw from torch's global
generator; with a ``generator`` each image's draws are seeded from it inside a forked random
state, so a seeded caller (the preview, the images kept on the device) gets repeatable draws and
leaves the global state alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torchvision.transforms import v2

# The reference recipe's --interpolation default.
INTERPOLATION = v2.InterpolationMode.BILINEAR
SEED_RANGE = 2**62


@dataclass(frozen=True)
class AutoAugmentPolicy:
    """``name``: none, trivial_augment_wide or rand_augment (with ``num_ops``, ``magnitude``)."""

    name: str = "none"
    num_ops: int = 2
    magnitude: int = 9

    @property
    def active(self) -> bool:
        return self.name != "none"

    def policy(self) -> v2.Transform:
        if self.name == "trivial_augment_wide":
            return v2.TrivialAugmentWide(interpolation=INTERPOLATION)
        if self.name == "rand_augment":
            return v2.RandAugment(num_ops=self.num_ops, magnitude=self.magnitude,
                                  interpolation=INTERPOLATION)
        raise ValueError(f"auto_augment: '{self.name}' is not trivial_augment_wide or "
                         "rand_augment")

    def __call__(self, images: torch.Tensor, generator: torch.Generator | None = None
                 ) -> torch.Tensor:
        """Apply the policy to every image of uint8 ``[B,C,H,W]``, each with its own draws."""
        policy = self.policy()
        if generator is None:
            return torch.stack([policy(image) for image in images])
        seeds = torch.randint(SEED_RANGE, (images.shape[0],), generator=generator).tolist()
        augmented = []
        with torch.random.fork_rng(devices=[]):
            for image, seed in zip(images, seeds, strict=True):
                # The policies draw on the CPU generator only; reseeding just that one is
                # far cheaper than torch.manual_seed, which visits every device type.
                torch.default_generator.manual_seed(seed)
                augmented.append(policy(image))
        return torch.stack(augmented)
