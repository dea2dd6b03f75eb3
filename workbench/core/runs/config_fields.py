"""What every TrainConfig field means: its label, help, unit, choices and when it applies.

One description per field, read by the settings form (labels, tooltips, greyed-out fields),
the command line (``--help``) and ``TrainConfig.validate()`` (messages name the label, with the
JSON field name in parentheses). This module sits below ``config.py`` and does not import it:
the ``applies`` predicates read the config's attributes only.

A new TrainConfig field needs a description here (``tests/core/runs/test_config_fields.py``
fails until it has one), a row in the settings form's ``_LAYOUT`` unless another panel edits
it, and its validation problems as ``(field, message)`` pairs in ``config.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from workbench.core.runs.model_catalog import MODEL_LABELS, scratch_recipe_values


@dataclass(frozen=True)
class FieldContext:
    """What the machine and the dataset say about the settings; None where not known yet.

    Attributes:
        cuda_available: a CUDA device was detected (None until detection has finished).
        has_split: the data folder holds train/ and val/ subfolders (None until scanned).
    """

    cuda_available: bool | None = None
    has_split: bool | None = None


AppliesWhen = Callable[[Any, FieldContext], bool]


def _always(_config: Any, _context: FieldContext) -> bool:
    return True


@dataclass(frozen=True)
class FieldDescription:
    """One config field as a person reads it.

    Attributes:
        name: the dataclass and JSON field name, e.g. ``crop_mode``.
        label: a short human label, e.g. "Crop mode".
        help: one sentence saying what the field does.
        unit: what the number counts ("pixels", "epochs"), '' where it is not a number.
        choices: allowed value -> human label, in the order to offer them; empty for free values.
        open_choices: the choices are examples (``device`` also takes ``cuda:N``), not a closed set.
        applies: ``applies(config, context)`` is False when the current settings ignore the field.
        applies_text: when the field applies, in words ('' when it always does).
    """

    name: str
    label: str
    help: str
    unit: str = ""
    choices: Mapping[str, str] = field(default_factory=dict)
    open_choices: bool = False
    applies: AppliesWhen = _always
    applies_text: str = ""

    def choice_label(self, value: str) -> str:
        """The human label of ``value`` (the value itself when it is not a listed choice)."""
        return self.choices.get(value, value)

    def values(self) -> tuple[str, ...]:
        """The allowed values, in order."""
        return tuple(self.choices)


def _uses_cuda(config: Any, context: FieldContext) -> bool:
    """CUDA-only options matter when a CUDA device exists and the run is not pinned to the CPU."""
    return context.cuda_available is not False and config.device != "cpu"


_CUDA_ONLY = "with a CUDA GPU (detected, and the device is not cpu)"


def _one_crop(config: Any, _context: FieldContext) -> bool:
    return config.crop_mode == "standard"


_ONE_CROP = "with one crop per image (crop mode standard)"

_DESCRIPTIONS: tuple[FieldDescription, ...] = (
    # data
    FieldDescription(
        "data_root", "Data folder",
        "The image folder: one subfolder per class, or train/ and val/ folders that each hold "
        "one subfolder per class."),
    FieldDescription(
        "val_fraction", "Validation fraction",
        "The share of each class's images held back for validation when the folder has no "
        "train/ and val/ split.", unit="fraction of the images, between 0 and 1",
        applies=lambda c, x: x.has_split is not True,
        applies_text="when the data folder has no train/ and val/ subfolders"),
    FieldDescription(
        "exclude_file", "Images left out",
        "A text file of image paths (one a line, relative to the data folder or absolute) "
        "that training leaves out; written by the data health check's 'Leave out of "
        "training'. Empty trains on every image; the files themselves are never touched."),
    # model
    FieldDescription(
        "model", "Model",
        "The network to train. Choosing one sets its own defaults (starting weights, resize, "
        "crop and fine-tuning recipe) in the fields not edited; 'workbench models' lists "
        "them with each model's ImageNet accuracy, size and cost.",
        choices=MODEL_LABELS),
    FieldDescription(
        "weights", "Starting weights", "What the network's weights are before training starts.",
        choices={"imagenet": "ImageNet (pretrained, downloaded once)",
                 "none": "None (random initialisation)",
                 "file": "From a file (a state_dict you saved)"}),
    FieldDescription(
        "weights_file", "Weights file", "A state_dict .pt file saved from the same model.",
        applies=lambda c, x: c.weights == "file", applies_text="when the weights come from a file"),
    FieldDescription(
        "finetune", "Fine-tune", "Which layers learn.",
        choices={"last_layer": "Last layer only (frozen backbone)",
                 "full": "Whole network (full fine-tuning)",
                 "head_then_full": "Head first, then the whole network (fastai's fine_tune)"}),
    FieldDescription(
        "head_epochs", "Head-only epochs",
        "The first epochs train only the head on the frozen backbone (its BatchNorm kept as "
        "it is); after them the whole network learns, the backbone at a lower rate.",
        unit="epochs, at least 1 and fewer than the run's epochs",
        applies=lambda c, x: c.finetune == "head_then_full",
        applies_text="with head-first fine-tuning (finetune head_then_full)"),
    FieldDescription(
        "backbone_lr_factor", "Backbone lr factor",
        "Once the whole network learns, the backbone's learning rate is the learning rate "
        "times this factor; the head keeps the full rate.",
        unit="factor, more than 0 and at most 1",
        applies=lambda c, x: c.finetune == "head_then_full",
        applies_text="with head-first fine-tuning (finetune head_then_full)"),
    # crops
    FieldDescription(
        "crop_mode", "Crop mode", "How each resized image becomes the model's input.",
        choices={"standard": "One crop (random when training, centre when validating)",
                 "five_crop": "Five crops (corners + centre)",
                 "ten_crop": "Ten crops (five crops + their mirror images)"}),
    FieldDescription(
        "crop_strategy", "Crop strategy", "How the several crops of one image are trained on.",
        choices={"average_logits": "Average the crops' logits (one prediction per image)",
                 "repeat_labels": "Each crop is a sample (the label repeated)"},
        applies=lambda c, x: c.crop_mode in ("five_crop", "ten_crop"),
        applies_text="with five or ten crops"),
    FieldDescription(
        "resize_size", "Resize shorter side to",
        "Images are resized so that their shorter side has this length, then cropped.",
        unit="pixels"),
    FieldDescription(
        "interpolation", "Resize interpolation",
        "How pixels are interpolated when an image is resized (antialiased, as torchvision's "
        "v2.Resize): for training, validation, the preview, prediction and exported models. "
        "Each model's default is its ImageNet weights' own (bicubic for EfficientNet-B0 and "
        "Swin-T).",
        choices={"bilinear": "Bilinear", "bicubic": "Bicubic"}),
    FieldDescription(
        "crop_size", "Crop size",
        "The side of the square crops the model sees; it must fit inside the resized image.",
        unit="pixels"),
    FieldDescription(
        "progressive_resize_start", "Progressive resizing, first size",
        "Train the first epoch on crops this share of the crop size, growing in equal steps "
        "to the full crop by three quarters of the epochs (the last ones train at the full "
        "crop): small images cost a fraction of the compute. Validation, prediction and "
        "exports always use the full crop. 1 is off.",
        unit="share of the crop size, more than 0, 1 is off",
        applies=lambda c, x: c.finetune != "last_layer",
        applies_text="when the backbone trains (finetune full or head_then_full)"),
    FieldDescription(
        "crop_scale_min", "Crop area, smallest",
        "The smallest share of the image's area a random training crop may cover, as "
        "torchvision's RandomResizedCrop scale.",
        unit="share of the image area, more than 0 and at most the largest",
        applies=lambda c, x: c.crop_mode == "standard", applies_text="with one crop per image"),
    FieldDescription(
        "crop_scale_max", "Crop area, largest",
        "The largest share of the image's area a random training crop may cover.",
        unit="share of the image area, at most 1",
        applies=lambda c, x: c.crop_mode == "standard", applies_text="with one crop per image"),
    FieldDescription(
        "crop_ratio_min", "Crop aspect ratio, smallest",
        "The narrowest width-to-height ratio of a random training crop.",
        unit="width / height",
        applies=lambda c, x: c.crop_mode == "standard", applies_text="with one crop per image"),
    FieldDescription(
        "crop_ratio_max", "Crop aspect ratio, largest",
        "The widest width-to-height ratio of a random training crop.",
        unit="width / height",
        applies=lambda c, x: c.crop_mode == "standard", applies_text="with one crop per image"),
    FieldDescription(
        "train_hflip", "Random horizontal flip",
        "Mirror half of the training crops at random; validation images are never flipped.",
        applies=lambda c, x: c.crop_mode == "standard", applies_text="with one crop per image"),
    # augmentation (torchvision.transforms.v2), training images only, one crop only
    FieldDescription(
        "color_jitter_brightness", "Colour jitter: brightness",
        "Scale each training crop's brightness by a random factor in [1 - x, 1 + x], as "
        "torchvision's ColorJitter; 0 leaves it.", unit="strength, 0 or more",
        applies=_one_crop, applies_text=_ONE_CROP),
    FieldDescription(
        "color_jitter_contrast", "Colour jitter: contrast",
        "Scale each training crop's contrast by a random factor in [1 - x, 1 + x]; 0 leaves it.",
        unit="strength, 0 or more", applies=_one_crop, applies_text=_ONE_CROP),
    FieldDescription(
        "color_jitter_saturation", "Colour jitter: saturation",
        "Scale each training crop's colour saturation by a random factor in [1 - x, 1 + x] "
        "(greyscale images have none); 0 leaves it.", unit="strength, 0 or more",
        applies=_one_crop, applies_text=_ONE_CROP),
    FieldDescription(
        "color_jitter_hue", "Colour jitter: hue",
        "Shift each training crop's hue by a random amount in [-x, x] of the colour circle "
        "(greyscale images have none); 0 leaves it.", unit="share of the colour circle, 0 to 0.5",
        applies=_one_crop, applies_text=_ONE_CROP),
    FieldDescription(
        "rotation_degrees", "Random rotation",
        "Rotate each training crop about its centre by a random angle in [-x, x], as "
        "torchvision's RandomRotation (nearest pixel, corners filled black); 0 leaves it.",
        unit="degrees, 0 to 180", applies=_one_crop, applies_text=_ONE_CROP),
    FieldDescription(
        "auto_augment", "Automatic augmentation policy",
        "A policy of random image operations applied to each training crop, as torchvision's "
        "reference --auto-augment.",
        choices={"none": "None",
                 "trivial_augment_wide": "TrivialAugmentWide (one random operation, random "
                                         "strength)",
                 "rand_augment": "RandAugment (a few random operations at a set magnitude)"},
        applies=_one_crop, applies_text=_ONE_CROP),
    FieldDescription(
        "rand_augment_num_ops", "RandAugment operations",
        "How many random operations RandAugment applies to each training crop.",
        unit="operations", applies=lambda c, x: _one_crop(c, x) and c.auto_augment ==
        "rand_augment", applies_text="with the RandAugment policy and one crop per image"),
    FieldDescription(
        "rand_augment_magnitude", "RandAugment magnitude",
        "The strength of RandAugment's operations, as torchvision's reference --ra-magnitude.",
        unit="step of 31, 0 to 30", applies=lambda c, x: _one_crop(c, x) and c.auto_augment ==
        "rand_augment", applies_text="with the RandAugment policy and one crop per image"),
    FieldDescription(
        "mixup_alpha", "Mixup alpha",
        "Blend each training batch with itself shifted by one image, in a share drawn from "
        "Beta(alpha, alpha), and the labels likewise (torchvision's v2.MixUp; with cutmix on "
        "too, each batch takes one of the two at random). Training accuracy then counts the "
        "label with the larger share; 0 is off.", unit="Beta alpha, 0 or more",
        applies=_one_crop, applies_text=_ONE_CROP),
    FieldDescription(
        "cutmix_alpha", "CutMix alpha",
        "Paste a random box of the batch's neighbouring image into each training image, the "
        "labels mixed by the box's area (torchvision's v2.CutMix). Training accuracy then counts "
        "the label with the larger share; 0 is off.", unit="Beta alpha, 0 or more",
        applies=_one_crop, applies_text=_ONE_CROP),
    FieldDescription(
        "label_smoothing", "Label smoothing",
        "Move this share of each training target evenly onto all classes (the loss's "
        "label_smoothing); the validation loss stays plain cross-entropy, so it stays "
        "comparable between runs.", unit="share, from 0 up to (not including) 1"),
    # optimisation
    FieldDescription("epochs", "Epochs", "How many times training goes over every image.",
                     unit="passes over the training images"),
    FieldDescription(
        "batch_size", "Batch size",
        "Images per training step, per process under torchrun; a larger batch needs more "
        "memory. A batch larger than the training set trains on the whole set, one step an "
        "epoch.", unit="images (each with all its crops)"),
    FieldDescription(
        "optimizer", "Optimizer", "The rule that turns gradients into weight updates.",
        choices={"sgd": "SGD with momentum", "adamw": "AdamW"}),
    FieldDescription(
        "lr", "Learning rate",
        "The size of each update step, for the whole batch of all processes."),
    FieldDescription(
        "momentum", "Momentum",
        "The share of the previous update that SGD carries into the next one.",
        unit="fraction, from 0 up to (not including) 1",
        applies=lambda c, x: c.optimizer == "sgd", applies_text="with the SGD optimizer"),
    FieldDescription(
        "weight_decay", "Weight decay",
        "A pull of every weight towards zero at each step; a little curbs overfitting."),
    FieldDescription(
        "scheduler", "Learning-rate schedule", "How the learning rate changes over the epochs.",
        choices={"step": "Step (multiply by gamma every few epochs)",
                 "cosine": "Cosine (smoothly down to zero)",
                 "warmup_cosine": "Warm-up, then cosine (first quarter up)",
                 "onecycle": "One-cycle (up then down over the run, every step)",
                 "none": "Constant"}),
    FieldDescription(
        "lr_step_size", "Step size", "Epochs between two learning-rate drops.", unit="epochs",
        applies=lambda c, x: c.scheduler == "step", applies_text="with the step schedule"),
    FieldDescription(
        "lr_gamma", "Gamma", "The factor the learning rate is multiplied by at each drop.",
        unit="factor, more than 0 and at most 1",
        applies=lambda c, x: c.scheduler == "step", applies_text="with the step schedule"),
    FieldDescription(
        "early_stopping", "Early stopping",
        "Stop the run when the chosen validation figure has not improved for a number of "
        "epochs; the best model stays on disk.",
        choices={"off": "Off (train every epoch)",
                 "val_loss": "When validation loss stops falling",
                 "val_accuracy": "When validation accuracy stops rising"}),
    FieldDescription(
        "early_stopping_patience", "Patience",
        "Epochs without improvement before early stopping ends the run.", unit="epochs",
        applies=lambda c, x: c.early_stopping != "off", applies_text="with early stopping on"),
    FieldDescription(
        "imbalance", "Class imbalance", "How classes with few images are made to count.",
        choices={"none": "Ignore (plain loss)",
                 "weighted_loss": "Weight the loss by inverse class frequency",
                 "weighted_sampler": "Sample rare classes more often"}),
    # speed
    FieldDescription(
        "amp", "Mixed precision (AMP)",
        "Compute in 16-bit floats where it is safe: faster and smaller on a CUDA GPU; CPU runs "
        "use float32.", applies=_uses_cuda, applies_text=_CUDA_ONLY),
    FieldDescription(
        "amp_dtype", "AMP precision", "The 16-bit float type mixed precision computes in.",
        choices={"auto": "Automatic (bfloat16 where the GPU supports it, else float16)",
                 "float16": "float16 (with loss scaling)",
                 "bfloat16": "bfloat16"},
        applies=lambda c, x: c.amp and _uses_cuda(c, x),
        applies_text="with mixed precision on a CUDA GPU"),
    FieldDescription(
        "channels_last", "Channels-last memory format",
        "Store images and weights channels-last, which a CUDA GPU's tensor cores run faster.",
        applies=_uses_cuda, applies_text=_CUDA_ONLY),
    FieldDescription(
        "workers", "Loader workers",
        "Processes that decode and resize images while the model trains; 0 loads them in the "
        "training process, and the default is one less than the CPU cores, at most 8.",
        unit="processes"),
    FieldDescription(
        "pin_memory", "Pinned memory",
        "Page-locked host memory, for faster copies of each batch to the GPU.",
        applies=_uses_cuda, applies_text=_CUDA_ONLY),
    FieldDescription(
        "cache_images", "Cache resized images",
        "Keep every image resized in a disk cache, so each file is decoded only once."),
    FieldDescription(
        "cache_dir", "Image cache folder",
        "Where the resized images are kept; empty uses the user cache folder.",
        applies=lambda c, x: c.cache_images, applies_text="while resized images are cached"),
    FieldDescription(
        "cache_features", "Cache backbone features",
        "With a frozen backbone, compute its features once and train the last layer on them.",
        applies=lambda c, x: c.finetune == "last_layer",
        applies_text="when only the last layer is trained"),
    FieldDescription(
        "images_on_device", "Keep small datasets on the device",
        "A dataset that fits stays on the device as uint8 and is cropped there a batch at a "
        "time, with no loader processes."),
    FieldDescription(
        "max_steps_per_epoch", "Max steps per epoch",
        "End each epoch after this many steps, for quick trials; 0 goes over every image.",
        unit="steps"),
    # faults
    FieldDescription(
        "max_failed_images", "Max failed images",
        "The run stops when more images than this cannot be decoded.", unit="images"),
    FieldDescription(
        "loader_timeout", "Loader timeout",
        "How long a loader process may take for one batch before the run reports it stuck.",
        unit="seconds", applies=lambda c, x: c.workers > 0,
        applies_text="with one or more loader workers"),
    FieldDescription(
        "oom_retry_smaller_batch", "Retry with half the batch on out of memory",
        "When the GPU runs out of memory, offer to train again with half the batch size.",
        applies=_uses_cuda, applies_text=_CUDA_ONLY),
    # reproducibility and placement
    FieldDescription(
        "seed", "Seed",
        "Seeds the random numbers (initial weights, shuffling, the validation split), so a run "
        "can be repeated."),
    FieldDescription(
        "deterministic", "Deterministic algorithms",
        "Use only deterministic kernels, so a repeated run gives identical numbers; slower."),
    FieldDescription(
        "device", "Device", "Where the model trains.",
        choices={"auto": "Automatic (the first CUDA GPU, else the CPU)", "cpu": "CPU",
                 "cuda": "The first CUDA GPU", "cuda:N": "CUDA GPU number N (cuda:0, cuda:1, ...)"},
        open_choices=True),
    FieldDescription("output_dir", "Output folder", "The folder that receives one folder per run."),
    FieldDescription("run_name", "Run name",
                     "The name of the run's folder; empty uses the date and time."),
    FieldDescription("resume", "Resume from checkpoint",
                     "A checkpoint to continue training from; empty starts a new run."),
)

FIELDS: Mapping[str, FieldDescription] = MappingProxyType({d.name: d for d in _DESCRIPTIONS})


def describe(name: str) -> FieldDescription:
    """The description of field ``name``; KeyError names the field when there is none."""
    try:
        return FIELDS[name]
    except KeyError:
        raise KeyError(f"no description for config field '{name}'") from None


def choices_of(name: str) -> tuple[str, ...]:
    """The allowed values of a choice field, e.g. ``choices_of("crop_mode")``."""
    return describe(name).values()


def problem_text(name: str, message: str) -> str:
    """A validation message as a person reads it: 'Crop size (crop_size): must be ...'."""
    return f"{describe(name).label} ({name}): {message}"


def applies(name: str, config: Any, context: FieldContext | None = None) -> bool:
    """Whether the settings in ``config`` (and what ``context`` knows) use field ``name``."""
    return describe(name).applies(config, context or FieldContext())


def help_text(name: str, default: Any = None, list_values: bool = True,
              per_model: Mapping[str, Any] | None = None) -> str:
    """Help, unit, values, when it applies and default in one paragraph.

    Args:
        name: the field.
        default: the value shown as the default; None leaves the default out.
        list_values: list every choice as ``value = label`` (the command line's ``--help``);
            False where the choices are on screen already (a combo box's tooltip), which then
            names the default by its label.
        per_model: each model's default (model -> value), shown instead of ``default``: one
            value where the models agree, else the value with each model, as choosing a
            model sets it.
    """
    description = describe(name)
    parts = [description.help]
    if description.unit:
        parts.append(f"Unit: {description.unit}.")
    if description.choices and list_values:
        listed = "; ".join(f"{value} = {label}" for value, label in description.choices.items())
        parts.append(f"Values: {listed}.")
    if description.applies_text:
        parts.append(f"Used only {description.applies_text}.")
    if per_model and len({repr(value) for value in per_model.values()}) > 1:
        shown = ", ".join(f"{_shown_default(description, value, list_values)} with {model}"
                          for model, value in per_model.items())
        parts.append(f"Default: {shown}.")
    elif per_model:
        common = next(iter(per_model.values()))
        parts.append(f"Default: {_shown_default(description, common, list_values)}.")
    elif default is not None:
        parts.append(f"Default: {_shown_default(description, default, list_values)}.")
    scratch = scratch_recipe_values(name) if per_model else {}
    if scratch:
        shown = ", ".join(f"{_shown_default(description, value, list_values)} with {family}"
                          for family, value in scratch.items())
        parts.append(f"With weights none: {shown} (their recipes for training from scratch), "
                     "unless you set the recipe.")
    return " ".join(parts)


def _shown_default(description: FieldDescription, default: Any, list_values: bool) -> str:
    if isinstance(default, bool):
        return "on" if default else "off"
    if default == "":
        return "empty"
    if description.choices and not list_values:
        return description.choice_label(str(default))
    return str(default)
