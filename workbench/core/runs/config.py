"""The one training configuration: GUI form, CLI flags, saved runs and torchrun jobs share it."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.runs.config_fields import choices_of, problem_text
from workbench.core.runs.model_catalog import TORCHVISION_MODELS, model_facts
from workbench.core.runs.model_defaults import DEFAULT_MODEL, MODEL_DEFAULTS

# The allowed values, with their human labels, live in config_fields (one description a field).
MODELS = choices_of("model")
WEIGHTS = choices_of("weights")
FINETUNE_MODES = choices_of("finetune")
CROP_MODES = choices_of("crop_mode")
CROP_STRATEGIES = choices_of("crop_strategy")
OPTIMIZERS = choices_of("optimizer")
SCHEDULERS = choices_of("scheduler")
IMBALANCE_OPTIONS = choices_of("imbalance")
AMP_DTYPES = choices_of("amp_dtype")
EARLY_STOPPING = choices_of("early_stopping")
AUTO_AUGMENT_POLICIES = choices_of("auto_augment")
INTERPOLATIONS = choices_of("interpolation")
_CHOICE_FIELDS = ("model", "weights", "finetune", "crop_mode", "crop_strategy", "optimizer",
                  "scheduler", "imbalance", "amp_dtype", "early_stopping", "auto_augment",
                  "interpolation")
# Training augmentations that change the pixels (all 0 / 'none', off, by default); they apply
# to the one random crop of the standard mode only.
PIXEL_AUGMENTATION_FIELDS = ("color_jitter_brightness", "color_jitter_contrast",
                             "color_jitter_saturation", "color_jitter_hue", "rotation_degrees",
                             "auto_augment", "mixup_alpha", "cutmix_alpha")

_NOT_SET = object()


def _model_default(name: str, otherwise: Any = _NOT_SET) -> Any:
    """The default model's value of field ``name`` in ``model_defaults.MODEL_DEFAULTS``, or
    ``otherwise`` where that model leaves the field alone: a new config is the default model's
    run, as the settings form, ``--help`` and a run from the command line all show it."""
    defaults = MODEL_DEFAULTS[DEFAULT_MODEL]
    if otherwise is _NOT_SET:
        return defaults[name]
    return defaults.get(name, otherwise)


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
    # images left out of training: a text file of paths, one a line (see core.data.health)
    exclude_file: str = ""
    # model (this block and the optimisation block: the default model's settings)
    model: str = DEFAULT_MODEL
    weights: str = _model_default("weights")
    weights_file: str = _model_default("weights_file", "")
    finetune: str = _model_default("finetune")
    # head_then_full: head_epochs with only the head learning, then the whole network with
    # the backbone at lr * backbone_lr_factor (fastai's fine_tune)
    head_epochs: int = _model_default("head_epochs", 1)
    backbone_lr_factor: float = _model_default("backbone_lr_factor", 0.1)
    # crops: images are resized so the shorter side is resize_size, then cropped to crop_size
    crop_mode: str = _model_default("crop_mode")
    crop_strategy: str = _model_default("crop_strategy", "average_logits")
    resize_size: int = _model_default("resize_size")
    # of every resize (antialiased): each model's weights' own, e.g. bicubic for EfficientNet
    interpolation: str = _model_default("interpolation", "bilinear")
    crop_size: int = _model_default("crop_size")
    # progressive resizing: the first epoch trains at this share of crop_size, growing to the
    # full crop (core.data.augmentation.progressive_resizing); 1 is off
    progressive_resize_start: float = _model_default("progressive_resize_start", 1.0)
    train_hflip: bool = _model_default("train_hflip")
    # standard crop: the random crop's share of the image area and its aspect-ratio range,
    # as torchvision's RandomResizedCrop(scale=..., ratio=...)
    crop_scale_min: float = _model_default("crop_scale_min")
    crop_scale_max: float = _model_default("crop_scale_max")
    crop_ratio_min: float = _model_default("crop_ratio_min")
    crop_ratio_max: float = _model_default("crop_ratio_max")
    # training augmentations from torchvision.transforms.v2, standard crop only, all off
    color_jitter_brightness: float = _model_default("color_jitter_brightness", 0.0)
    color_jitter_contrast: float = _model_default("color_jitter_contrast", 0.0)
    color_jitter_saturation: float = _model_default("color_jitter_saturation", 0.0)
    color_jitter_hue: float = _model_default("color_jitter_hue", 0.0)
    rotation_degrees: float = _model_default("rotation_degrees", 0.0)
    auto_augment: str = _model_default("auto_augment", "none")
    # torchvision's reference --ra-magnitude (9) and RandAugment's num_ops (2)
    rand_augment_num_ops: int = _model_default("rand_augment_num_ops", 2)
    rand_augment_magnitude: int = _model_default("rand_augment_magnitude", 9)
    mixup_alpha: float = _model_default("mixup_alpha", 0.0)
    cutmix_alpha: float = _model_default("cutmix_alpha", 0.0)
    # of the training loss; the validation loss stays plain
    label_smoothing: float = _model_default("label_smoothing", 0.0)
    # optimisation
    epochs: int = _model_default("epochs", 10)
    # batch_size is per process: under torchrun with N processes the global batch is
    # N * batch_size, and lr applies to that global batch (gradients are averaged). A batch
    # larger than the training set trains on the whole set (training_set_size).
    batch_size: int = _model_default("batch_size")
    optimizer: str = _model_default("optimizer")
    lr: float = _model_default("lr")
    momentum: float = _model_default("momentum")
    weight_decay: float = _model_default("weight_decay")
    scheduler: str = _model_default("scheduler")
    lr_step_size: int = _model_default("lr_step_size")
    lr_gamma: float = _model_default("lr_gamma")
    imbalance: str = _model_default("imbalance", "none")
    # stop once the watched validation figure has not improved for this many epochs
    early_stopping: str = _model_default("early_stopping", "off")
    early_stopping_patience: int = _model_default("early_stopping_patience", 3)
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
    def augmentations_on(self) -> list[str]:
        """The pixel augmentations this config turns on (field names), in field order."""
        return [name for name in PIXEL_AUGMENTATION_FIELDS
                if getattr(self, name) not in (0, 0.0, "none")]

    @property
    def train_transform_is_deterministic(self) -> bool:
        """True when every epoch sees the same pixels, so frozen-backbone features can be cached."""
        return self.crop_mode in ("five_crop", "ten_crop") and not self.augmentations_on

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
        file, text = _read_config_file(path)
        return cls.from_json(text, source=str(file))

    def save(self, path: str | os.PathLike[str]) -> None:
        from workbench.core.runs.atomic_io import atomic_write_text

        atomic_write_text(Path(path), self.to_json() + "\n")

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    # ----------------------------------------------------------------- validation
    def validate(self, check_paths: bool = True) -> list[str]:
        """Every problem with this config, as messages that name the field.

        Each message starts with the field's label and its JSON name, e.g.
        "Data folder (data_root): folder 'x' does not exist".
        """
        return [text for _, text in self.field_problems(check_paths)]

    def field_problems(self, check_paths: bool = True) -> list[tuple[str, str]]:
        """``validate()``'s messages paired with the field each one is about."""
        raw = [*_choice_problems(self), *_path_problems(self, check_paths),
               *_model_problems(self), *_number_problems(self),
               *_augmentation_problems(self), *_progressive_resizing_problems(self)]
        return [(name, problem_text(name, message)) for name, message in raw]


def defaults_by_model(name: str) -> dict[str, Any]:
    """The default of field ``name`` with each model whose defaults are written out
    (``MODEL_DEFAULTS``: resnet18 and small_cnn): the value choosing that model sets, else the
    field's own default, which choosing it leaves alone. The catalogue's other models take
    theirs from their weights (``model_defaults.defaults_for``), which needs torchvision:
    help text built from this must not import it."""
    field_default = getattr(TrainConfig(), name)
    return {model: MODEL_DEFAULTS[model].get(name, field_default) for model in MODELS
            if model in MODEL_DEFAULTS}


_Problems = list[tuple[str, str]]


def fields_set_in_config_file(path: str | os.PathLike[str]) -> list[str]:
    """The config fields a file (or a run folder's config.json) sets, in its order: a partial
    config sets only some, and the others are left to the model's defaults.

    Raises:
        ConfigError: the file cannot be read or is not a JSON object; the message names it.
    """
    file, text = _read_config_file(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if isinstance(data, dict) and isinstance(data.get("config"), dict) and "environment" in data:
        data = data["config"]
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: expected a JSON object, got {type(data).__name__}")
    known = {field.name for field in dataclasses.fields(TrainConfig)}
    return [name for name in data if name in known]


def _read_config_file(path: str | os.PathLike[str]) -> tuple[Path, str]:
    """(the file, its text): ``path`` itself, or the config.json inside a run folder."""
    file = Path(path)
    if file.is_dir():
        file = file / "config.json"
    try:
        return file, file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read config ({exc.strerror or exc})") from exc


def _choice_problems(config: TrainConfig) -> _Problems:
    problems: _Problems = []
    for name in _CHOICE_FIELDS:
        value, options = getattr(config, name), choices_of(name)
        if value not in options:
            problems.append((name, f"'{value}' is not one of {', '.join(options)}"))
    if not _valid_device_name(config.device):
        problems.append(("device", f"'{config.device}' is not 'auto', 'cpu', 'cuda' or 'cuda:N'"))
    return problems


def _path_problems(config: TrainConfig, check_paths: bool) -> _Problems:
    problems: _Problems = []
    if not config.data_root:
        problems.append(("data_root", "choose an image folder"))
    elif check_paths and Path(config.data_root).is_file():
        problems.append(("data_root", f"'{config.data_root}' is a file, not a folder; choose "
                                      "the folder that holds the class folders"))
    elif check_paths and not Path(config.data_root).is_dir():
        problems.append(("data_root", f"folder '{config.data_root}' does not exist"))
    if config.exclude_file and check_paths and not Path(config.exclude_file).is_file():
        problems.append(("exclude_file", f"file '{config.exclude_file}' does not exist; clear "
                                         "the field to train on every image"))
    if config.weights == "file":
        if not config.weights_file:
            problems.append(("weights_file", "choose a state_dict file, or pick other weights"))
        elif check_paths and not Path(config.weights_file).is_file():
            problems.append(("weights_file", f"file '{config.weights_file}' does not exist"))
    if not config.output_dir:
        problems.append(("output_dir", "choose where runs are saved"))
    if config.cache_images and config.cache_dir and check_paths \
            and Path(config.cache_dir).is_file():
        problems.append(("cache_dir", f"'{config.cache_dir}' is a file; choose a folder for "
                                      "the resized images"))
    if config.resume and check_paths and not Path(config.resume).is_file():
        problems.append(("resume", f"checkpoint '{config.resume}' does not exist"))
    return problems


# The largest smallest input of the catalogue (ViT's and Swin's 224 px): crops at least this
# large fit every model, and checking them needs no torchvision import.
_CROP_FITS_EVERY_MODEL = 224


def _smallest_input(model: str, crop_size: int) -> int | None:
    """The smallest input side of ``model`` when ``crop_size`` is below it, else None."""
    if crop_size >= _CROP_FITS_EVERY_MODEL or model not in TORCHVISION_MODELS:
        return None
    smallest = model_facts(model).min_size
    return smallest if crop_size < smallest else None


def _model_problems(config: TrainConfig) -> _Problems:
    problems: _Problems = []
    if config.model == "small_cnn" and config.weights == "imagenet":
        problems.append(("weights", "small_cnn has no ImageNet weights; use 'none' or 'file'"))
    smallest = _smallest_input(config.model, config.crop_size)
    if smallest is not None:
        problems.append(("crop_size", f"{config.crop_size} is smaller than {config.model} "
                                      f"takes; its crops must be at least {smallest} px"))
    if config.crop_size > config.resize_size:
        problems.append(("crop_size", f"{config.crop_size} is larger than resize_size "
                                      f"{config.resize_size}; crops must fit inside the resized "
                                      "image"))
    if not 0.0 < config.crop_scale_min <= config.crop_scale_max <= 1.0:
        problems.append(("crop_scale_min", "the crop's area share must satisfy "
                                           "0 < min <= max <= 1 (got "
                                           f"{config.crop_scale_min} to {config.crop_scale_max})"))
    if not 0.0 < config.crop_ratio_min <= config.crop_ratio_max:
        problems.append(("crop_ratio_min", "the crop's aspect ratios must satisfy 0 < min <= max "
                                           f"(got {config.crop_ratio_min} to "
                                           f"{config.crop_ratio_max})"))
    return problems


def _number_problems(config: TrainConfig) -> _Problems:
    c = config
    checks: tuple[tuple[str, bool, str], ...] = (
        ("val_fraction", 0.0 < c.val_fraction < 1.0, "must be between 0 and 1"),
        ("resize_size", c.resize_size >= 8, "must be at least 8 pixels"),
        ("crop_size", c.crop_size >= 8, "must be at least 8 pixels"),
        ("epochs", c.epochs >= 1, "must be at least 1"),
        ("batch_size", c.batch_size >= 1, "must be at least 1"),
        ("lr", c.lr > 0, "must be greater than 0"),
        ("momentum", 0.0 <= c.momentum < 1.0, "must be in [0, 1)"),
        ("weight_decay", c.weight_decay >= 0, "must not be negative"),
        ("lr_step_size", c.lr_step_size >= 1, "must be at least 1"),
        ("lr_gamma", 0.0 < c.lr_gamma <= 1.0, "must be in (0, 1]"),
        ("early_stopping_patience", c.early_stopping_patience >= 1, "must be at least 1 epoch"),
        ("workers", c.workers >= 0, "must not be negative"),
        ("max_failed_images", c.max_failed_images >= 0, "must not be negative"),
        ("loader_timeout", c.loader_timeout > 0, "must be more than 0 seconds"),
        ("max_steps_per_epoch", c.max_steps_per_epoch >= 0, "must not be negative"),
        ("seed", c.seed >= 0, "must not be negative"),
    )
    problems = [(name, f"{message} (got {getattr(c, name)})") for name, ok, message in checks
                if not ok]
    return problems + _stage_problems(c)


def _stage_problems(c: TrainConfig) -> _Problems:
    """head_then_full's two fields, checked only in that mode (they are ignored otherwise)."""
    if c.finetune != "head_then_full":
        return []
    problems: _Problems = []
    if not 1 <= c.head_epochs < max(c.epochs, 1):
        problems.append(("head_epochs", f"must be at least 1 and fewer than epochs ({c.epochs}), "
                                        "so the whole network trains for at least one epoch "
                                        f"(got {c.head_epochs})"))
    if not 0.0 < c.backbone_lr_factor <= 1.0:
        problems.append(("backbone_lr_factor", "must be more than 0 and at most 1 (got "
                                               f"{c.backbone_lr_factor})"))
    return problems


def _augmentation_problems(config: TrainConfig) -> _Problems:
    c = config
    checks: tuple[tuple[str, bool, str], ...] = (
        ("color_jitter_brightness", c.color_jitter_brightness >= 0, "must not be negative"),
        ("color_jitter_contrast", c.color_jitter_contrast >= 0, "must not be negative"),
        ("color_jitter_saturation", c.color_jitter_saturation >= 0, "must not be negative"),
        ("color_jitter_hue", 0.0 <= c.color_jitter_hue <= 0.5, "must be between 0 and 0.5"),
        ("rotation_degrees", 0.0 <= c.rotation_degrees <= 180.0,
         "must be between 0 and 180 degrees"),
        ("rand_augment_num_ops", c.rand_augment_num_ops >= 1, "must be at least 1"),
        ("rand_augment_magnitude", 0 <= c.rand_augment_magnitude <= 30,
         "must be between 0 and 30"),
        ("mixup_alpha", c.mixup_alpha >= 0, "must not be negative"),
        ("cutmix_alpha", c.cutmix_alpha >= 0, "must not be negative"),
        ("label_smoothing", 0.0 <= c.label_smoothing < 1.0, "must be in [0, 1)"),
    )
    problems = [(name, f"{message} (got {getattr(c, name)})") for name, ok, message in checks
                if not ok]
    if c.crop_mode != "standard":
        # Five and ten crops are the same every epoch (their features are cached): a random
        # change of their pixels would defeat both.
        problems += [(name, f"applies only with one crop per image (crop_mode standard); "
                            f"{c.crop_mode} crops are fixed, so set it to "
                            f"{'none' if name == 'auto_augment' else '0'} or choose standard")
                     for name in c.augmentations_on]
    return problems


def _progressive_resizing_problems(config: TrainConfig) -> _Problems:
    share = config.progressive_resize_start
    if not 0.0 < share <= 1.0:
        return [("progressive_resize_start", f"must be more than 0 and at most 1, where 1 is "
                                             f"off (got {share})")]
    if share == 1.0:
        return []
    if config.finetune == "last_layer":
        return [("progressive_resize_start", "applies only when the backbone trains (finetune "
                                             "'full' or 'head_then_full'): a frozen backbone's "
                                             "features are computed once, at crop_size; set "
                                             "it to 1")]
    start = round(config.crop_size * share)
    smallest = max(8, _smallest_input(config.model, start) or 0)
    if smallest >= config.crop_size:
        return [("progressive_resize_start", f"{config.model} takes no crop smaller than "
                                             f"{smallest} px, so its training crops cannot "
                                             "start smaller; set it to 1")]
    if start < smallest:
        lowest = math.ceil(100 * smallest / config.crop_size) / 100
        return [("progressive_resize_start", f"starts the training crops at {start} px, "
                                             f"smaller than {config.model} takes "
                                             f"({smallest} px); raise it to at least "
                                             f"{lowest:g} or set it to 1")]
    return []


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
