"""What a run will do, decided once before anything is built: the run's plan.

Each decision that depends on more than one setting (the config, the device, torchrun) is made
here, once, with the sentence that explains it; the session builds what the plan says and the
rest of the run reads the plan, never the settings again.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.data.data_pipeline import pins_memory
from workbench.core.runs.config import TrainConfig
from workbench.core.training.precision import (
    CardInfo,
    Precision,
    precision_message,
    resolve_precision,
)


@dataclass(frozen=True)
class RunPlan:
    """The decisions of one run.

    Attributes:
        device: the resolved device this process trains on ("cpu", "cuda:0", ...).
        precision: float32 or mixed precision, and whether the loss is scaled.
        channels_last: the model and its batches use the channels-last memory format.
        cache_features: frozen-backbone features are computed once (last-layer fine-tuning).
        cache_train_features: the training images' features too (their crops never change).
        images_on_device: try to keep the decoded images on the device (they may not fit).
        notes: (level, text) messages that explain the decisions, for the run log.
    """

    device: str
    precision: Precision
    channels_last: bool
    cache_features: bool
    cache_train_features: bool
    images_on_device: bool
    notes: tuple[tuple[str, str], ...] = ()
    pin_memory: bool = False

    def what_ran(self) -> dict[str, object]:
        """What this run does on its device, whatever the settings asked for (amp,
        channels_last and pin_memory only take effect on CUDA): for config.json and the
        report."""
        return {"device": self.device, "precision": self.precision.label,
                "memory_format": "channels_last" if self.channels_last else "contiguous",
                "pin_memory": self.pin_memory}


def channels_last_applies(device: str) -> bool:
    """Whether a run on ``device`` uses the channels_last setting: on CUDA only. On the CPU
    the default layout is kept whatever the setting says (its convolutions gain nothing
    reliable from it, and the speed probe measures only what a run will use)."""
    return device.startswith("cuda")


def plan_run(
    config: TrainConfig,
    device: str,
    distributed: bool,
    card: CardInfo | None = None,
) -> RunPlan:
    """Decide how ``config`` runs on ``device``; ``distributed``: under torchrun.

    Args:
        config: the run's settings.
        device: the resolved device name of this process.
        distributed: several processes train together (torchrun).
        card: the CUDA card's capability and name, read from ``device`` when None (given
            in tests).
    """
    notes: list[tuple[str, str]] = []
    precision = resolve_precision(config.amp, config.amp_dtype, device, card)
    said = precision_message(precision, config.amp, config.amp_dtype)
    if said:
        notes.append(("info", said))
    cache_features = config.finetune == "last_layer" and config.cache_features
    if cache_features and distributed:
        notes.append(("info", "Feature caching is off under torchrun; every process trains "
                              "the head on freshly computed features."))
        cache_features = False
    cache_train_features = cache_features and config.train_transform_is_deterministic
    if cache_features and not cache_train_features:
        notes.append(("info", _random_training_pixels(config)))
    images_on_device = config.images_on_device
    if images_on_device and distributed:
        notes.append(("info", "Under torchrun each process reads its own share of the images "
                              "through the loader; images_on_device applies to single runs."))
        images_on_device = False
    return RunPlan(
        device=device, precision=precision,
        channels_last=config.channels_last and channels_last_applies(device),
        cache_features=cache_features, cache_train_features=cache_train_features,
        images_on_device=images_on_device, notes=tuple(notes),
        pin_memory=pins_memory(config, device),
    )


def _random_training_pixels(config: TrainConfig) -> str:
    """Why the training images' features cannot be cached, in one sentence."""
    augmentations = config.augmentations_on
    if augmentations:
        return (f"The training augmentations ({', '.join(augmentations)}) change the training "
                "pixels every epoch, so only validation features are cached.")
    return ("Standard crops are random every epoch, so only validation features are cached; "
            "choose five_crop or ten_crop to cache both.")
