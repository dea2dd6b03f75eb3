"""What the size of a training set means for a run: the batch it trains with, and how far its
validation figures can be trusted.

Pure functions of the config and the image counts, so the run's log, the command line and a
check before a run starts all say the same sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workbench.core.runs.config import TrainConfig

# Below this many validation images one image moves val accuracy by more than 2 points.
SMALL_VALIDATION_SET = 50


@dataclass(frozen=True)
class EffectiveBatch:
    """The batch a run trains with.

    Attributes:
        batch_size: images per step (per process under torchrun) the run uses.
        requested: the config's ``batch_size``.
        sentence: why the run uses a smaller batch than requested; '' when it does not.
    """

    batch_size: int
    requested: int
    sentence: str = ""

    @property
    def clamped(self) -> bool:
        """True when the run uses fewer images a step than the config asks for."""
        return self.batch_size < self.requested


def effective_batch_size(config: TrainConfig, train_images: int,
                         world_size: int = 1) -> EffectiveBatch:
    """The batch ``config`` will train with on ``train_images`` training images.

    A batch larger than the training set (each process's share of it under torchrun) is
    lowered to the whole set: one step an epoch, every image in it. Never refused, so the
    defaults train a folder of a few images a class.

    Args:
        config: the run's settings (only ``batch_size`` is read).
        train_images: images in the training set (all processes together).
        world_size: processes under torchrun; each reads ``ceil(train_images / world_size)``.
    """
    requested = config.batch_size
    per_process = math.ceil(train_images / max(1, world_size))
    if per_process < 1 or requested <= per_process:
        return EffectiveBatch(requested, requested)
    share = (f"the {train_images} training images" if world_size <= 1 else
             f"the {per_process} training images each of the {world_size} processes reads")
    return EffectiveBatch(per_process, requested, (
        f"Batch size (batch_size) {requested} is more than {share}, so the run trains with a "
        f"batch of {per_process}: one step an epoch, every image in it."))


def small_set_expectation(train_images: int, val_images: int) -> str | None:
    """What to expect of val accuracy measured on few images, or None when there are enough
    (``SMALL_VALIDATION_SET`` or more) or none."""
    if val_images < 1 or val_images >= SMALL_VALIDATION_SET:
        return None
    points = 100 / val_images
    return (f"Small dataset: {train_images} training and {val_images} validation images. Each "
            f"validation image is ~{points:.0f} points of val accuracy, so expect it to move in "
            f"steps of ~{points:.0f} and to swing from run to run (another seed, another split); "
            f"a few dozen images a class give steadier figures.")
