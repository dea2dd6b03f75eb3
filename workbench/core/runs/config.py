"""The one training configuration: GUI form, CLI flags, saved runs and torchrun jobs share it."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODELS = ("resnet18", "small_cnn")
WEIGHTS = ("imagenet", "none", "file")
FINETUNE_MODES = ("last_layer", "full")
CROP_MODES = ("standard", "five_crop", "ten_crop")
CROP_STRATEGIES = ("repeat_labels", "average_logits")
OPTIMIZERS = ("sgd", "adamw")
SCHEDULERS = ("step", "cosine", "none")
IMBALANCE_OPTIONS = ("none", "weighted_loss", "weighted_sampler")
AMP_DTYPES = ("auto", "float16", "bfloat16")
EARLY_STOPPING = ("off", "val_loss", "val_accuracy")


def default_workers() -> int:
    """Loader processes: enough to keep a laptop GPU fed, never more than the CPU has."""
    return max(0, min(8, (os.cpu_count() or 1) - 1))


class ConfigError(ValueError):
    """Raised when a config file or mapping cannot be turned into a TrainConfig."""


@dataclass
class TrainConfig:
    """Everything a training run needs; field names follow torchvision's reference scripts.

    ``validate()`` lists every problem in words a user can act on; an empty list means the
    config can be trained.
    """

    # data
    data_root: str = ""
    val_fraction: float = 0.2
    # model
    model: str = "resnet18"
    weights: str = "imagenet"
    weights_file: str = ""
    finetune: str = "last_layer"
    # crops: images are resized so the shorter side is resize_size, then cropped to crop_size
    crop_mode: str = "five_crop"
    crop_strategy: str = "average_logits"
    resize_size: int = 256
    crop_size: int = 224
    train_hflip: bool = True
    # standard crop: the random crop's share of the image area and its aspect-ratio range,
    # as torchvision's RandomResizedCrop(scale=..., ratio=...)
    crop_scale_min: float = 0.08
    crop_scale_max: float = 1.0
    crop_ratio_min: float = 0.75
    crop_ratio_max: float = 1.333333  # 4/3 to the six decimals the form shows
    # optimisation
    epochs: int = 10
    # batch_size is per process: under torchrun with N processes the global batch is
    # N * batch_size, and lr applies to that global batch (gradients are averaged).
    batch_size: int = 32
    optimizer: str = "sgd"
    lr: float = 0.001
    momentum: float = 0.9
    weight_decay: float = 1e-4
    scheduler: str = "step"
    lr_step_size: int = 7
    lr_gamma: float = 0.1
    imbalance: str = "none"
    # stop once the watched validation figure has not improved for this many epochs
    early_stopping: str = "off"
    early_stopping_patience: int = 3
    # speed
    amp: bool = True
    amp_dtype: str = "auto"  # auto: bfloat16 where the GPU supports it, else float16
    channels_last: bool = True
    workers: int = field(default_factory=default_workers)
    pin_memory: bool = True
    cache_images: bool = True
    cache_features: bool = True
    # a small dataset whose images share one size after resizing stays on the device as uint8
    # and is cropped there a batch at a time, with no loader processes
    images_on_device: bool = True
    cache_dir: str = ""
    max_steps_per_epoch: int = 0
    # faults
    max_failed_images: int = 20  # the run stops when more images than this fail to decode
    loader_timeout: float = 120.0  # seconds a loader process may take for one batch
    oom_retry_smaller_batch: bool = False  # on CUDA out of memory, retry with half the batch
    # reproducibility and placement
    seed: int = 0
    deterministic: bool = False
    device: str = "auto"
    output_dir: str = "runs"
    run_name: str = ""
    resume: str = ""

    # ----------------------------------------------------------------- derived values
    @property
    def crops_per_sample(self) -> int:
        return {"standard": 1, "five_crop": 5, "ten_crop": 10}.get(self.crop_mode, 1)

    @property
    def in_channels(self) -> int:
        return 1 if self.model == "small_cnn" else 3

    @property
    def train_transform_is_deterministic(self) -> bool:
        """True when every epoch sees the same pixels, so frozen-backbone features can be cached."""
        return self.crop_mode in ("five_crop", "ten_crop")

    # ----------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> TrainConfig:
        """Build a config from a mapping; unknown keys and wrong types are named in the error."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a JSON object, got {type(data).__name__}")
        if isinstance(data.get("config"), dict) and "environment" in data:
            data = data["config"]  # a run folder's config.json: the config plus its context
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ConfigError(f"{source}: unknown field(s) {', '.join(unknown)}")
        defaults = cls()
        values: dict[str, Any] = {}
        for name, value in data.items():
            expected = type(getattr(defaults, name))
            values[name] = _coerce(name, value, expected, source)
        return cls(**values)

    @classmethod
    def from_json(cls, text: str, source: str = "config") -> TrainConfig:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TrainConfig:
        """Read a config file, a run's config.json, or the config.json inside a run folder."""
        path = Path(path)
        if path.is_dir():
            path = path / "config.json"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config ({exc.strerror or exc})") from exc
        return cls.from_json(text, source=str(path))

    def save(self, path: str | os.PathLike[str]) -> None:
        from workbench.core.runs.atomic_io import atomic_write_text

        atomic_write_text(Path(path), self.to_json() + "\n")

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    # ----------------------------------------------------------------- validation
    def validate(self, check_paths: bool = True) -> list[str]:
        """Every problem with this config, as messages that name the field."""
        problems: list[str] = []

        def choice(name: str, options: tuple[str, ...]) -> None:
            value = getattr(self, name)
            if value not in options:
                problems.append(f"{name}: '{value}' is not one of {', '.join(options)}")

        choice("model", MODELS)
        choice("weights", WEIGHTS)
        choice("finetune", FINETUNE_MODES)
        choice("crop_mode", CROP_MODES)
        choice("crop_strategy", CROP_STRATEGIES)
        choice("optimizer", OPTIMIZERS)
        choice("scheduler", SCHEDULERS)
        choice("imbalance", IMBALANCE_OPTIONS)
        choice("amp_dtype", AMP_DTYPES)
        choice("early_stopping", EARLY_STOPPING)

        if not self.data_root:
            problems.append("data_root: choose an image folder")
        elif check_paths and not Path(self.data_root).is_dir():
            problems.append(f"data_root: folder '{self.data_root}' does not exist")
        if not 0.0 < self.val_fraction < 1.0:
            problems.append(f"val_fraction: must be between 0 and 1 (got {self.val_fraction})")
        if self.weights == "file":
            if not self.weights_file:
                problems.append("weights_file: choose a state_dict file, or pick other weights")
            elif check_paths and not Path(self.weights_file).is_file():
                problems.append(f"weights_file: file '{self.weights_file}' does not exist")
        if self.model == "small_cnn" and self.weights == "imagenet":
            problems.append("weights: small_cnn has no ImageNet weights; use 'none' or 'file'")
        if self.resize_size < 8:
            problems.append(f"resize_size: must be at least 8 pixels (got {self.resize_size})")
        if self.crop_size < 8:
            problems.append(f"crop_size: must be at least 8 pixels (got {self.crop_size})")
        if self.crop_size > self.resize_size:
            problems.append(
                f"crop_size: {self.crop_size} is larger than resize_size {self.resize_size}; "
                "crops must fit inside the resized image"
            )
        if not 0.0 < self.crop_scale_min <= self.crop_scale_max <= 1.0:
            problems.append(
                f"crop_scale_min: the crop's area share must satisfy 0 < min <= max <= 1 "
                f"(got {self.crop_scale_min} to {self.crop_scale_max})")
        if not 0.0 < self.crop_ratio_min <= self.crop_ratio_max:
            problems.append(
                f"crop_ratio_min: the crop's aspect ratios must satisfy 0 < min <= max "
                f"(got {self.crop_ratio_min} to {self.crop_ratio_max})")
        if self.epochs < 1:
            problems.append(f"epochs: must be at least 1 (got {self.epochs})")
        if self.batch_size < 1:
            problems.append(f"batch_size: must be at least 1 (got {self.batch_size})")
        if not self.lr > 0:
            problems.append(f"lr: must be greater than 0 (got {self.lr})")
        if not 0.0 <= self.momentum < 1.0:
            problems.append(f"momentum: must be in [0, 1) (got {self.momentum})")
        if self.weight_decay < 0:
            problems.append(f"weight_decay: must not be negative (got {self.weight_decay})")
        if self.lr_step_size < 1:
            problems.append(f"lr_step_size: must be at least 1 (got {self.lr_step_size})")
        if not 0.0 < self.lr_gamma <= 1.0:
            problems.append(f"lr_gamma: must be in (0, 1] (got {self.lr_gamma})")
        if self.early_stopping_patience < 1:
            problems.append(f"early_stopping_patience: must be at least 1 epoch "
                            f"(got {self.early_stopping_patience})")
        if self.workers < 0:
            problems.append(f"workers: must not be negative (got {self.workers})")
        if self.max_failed_images < 0:
            problems.append(
                f"max_failed_images: must not be negative (got {self.max_failed_images})"
            )
        if not self.loader_timeout > 0:
            problems.append(
                f"loader_timeout: must be more than 0 seconds (got {self.loader_timeout})"
            )
        if self.max_steps_per_epoch < 0:
            problems.append(
                f"max_steps_per_epoch: must not be negative (got {self.max_steps_per_epoch})"
            )
        if self.seed < 0:
            problems.append(f"seed: must not be negative (got {self.seed})")
        if not _valid_device_name(self.device):
            problems.append(f"device: '{self.device}' is not 'auto', 'cpu', 'cuda' or 'cuda:N'")
        if not self.output_dir:
            problems.append("output_dir: choose where runs are saved")
        if self.cache_images and self.cache_dir and check_paths \
                and Path(self.cache_dir).is_file():
            problems.append(f"cache_dir: '{self.cache_dir}' is a file; choose a folder for "
                            "the resized images")
        if self.resume and check_paths and not Path(self.resume).is_file():
            problems.append(f"resume: checkpoint '{self.resume}' does not exist")
        return problems


def _valid_device_name(name: str) -> bool:
    if name in ("auto", "cpu", "cuda"):
        return True
    if name.startswith("cuda:"):
        return name[5:].isdigit()
    return False


def _coerce(name: str, value: Any, expected: type, source: str) -> Any:
    if expected is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{source}: field '{name}' must be true or false, got {value!r}")
    if expected is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(f"{source}: field '{name}' must be a whole number, got {value!r}")
        return value
    if expected is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: field '{name}' must be a number, got {value!r}")
        return float(value)
    if expected is str:
        if not isinstance(value, str):
            raise ConfigError(f"{source}: field '{name}' must be text, got {value!r}")
        return value
    return value
