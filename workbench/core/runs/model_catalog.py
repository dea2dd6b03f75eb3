"""The models Workbench trains: torchvision classification models with ImageNet weights, and
the small digits CNN.

Which torchvision models are offered, and the family each belongs to, is chosen here; every
figure about them (ImageNet acc@1, parameters, GFLOPS, file size, smallest input) comes from
the weights' ``meta`` and their preprocessing (resize, crop, interpolation, mean, std) from
``weights.transforms()``, read when first asked for: importing torchvision takes seconds,
and the command line's parser and ``--help`` must not wait for it.

The family decides the fine-tuning recipe. Networks with BatchNorm and a plain pooled head
(ResNet, RegNet, ShuffleNet, MobileNet, EfficientNet) fine-tune well with PyTorch's
transfer-learning recipe, SGD lr 0.001 with momentum; ConvNeXt, Swin and ViT were trained with
AdamW and are fine-tuned with it at a lower learning rate and a larger weight decay (fastai's
and timm's recipes for them), with a warm-up so the new head does not wreck the
LayerNorm-based features at the start.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

SMALL_CNN = "small_cnn"

# torchvision builder name -> (family, label shown beside the name).
_TORCHVISION_MODELS: dict[str, tuple[str, str]] = {
    "resnet18": ("resnet", "ResNet-18"),
    "resnet34": ("resnet", "ResNet-34"),
    "resnet50": ("resnet", "ResNet-50"),
    "mobilenet_v3_small": ("mobilenet", "MobileNetV3 small"),
    "mobilenet_v3_large": ("mobilenet", "MobileNetV3 large"),
    "efficientnet_b0": ("efficientnet", "EfficientNet-B0"),
    "efficientnet_b1": ("efficientnet", "EfficientNet-B1"),
    "efficientnet_v2_s": ("efficientnet", "EfficientNetV2-S"),
    "regnet_y_400mf": ("regnet", "RegNetY-400MF"),
    "regnet_y_800mf": ("regnet", "RegNetY-800MF"),
    "shufflenet_v2_x1_0": ("shufflenet", "ShuffleNetV2 x1.0"),
    "convnext_tiny": ("convnext", "ConvNeXt-Tiny"),
    "swin_t": ("swin", "Swin-T"),
    "vit_b_16": ("vit", "ViT-B/16"),
}
TORCHVISION_MODELS = tuple(_TORCHVISION_MODELS)
MODEL_NAMES = (*TORCHVISION_MODELS, SMALL_CNN)
MODEL_LABELS = {**{name: f"{label} (colour photos)"
                   for name, (_, label) in _TORCHVISION_MODELS.items()},
                SMALL_CNN: "Small CNN (greyscale, digit-sized images)"}

# The random resized crop and flip of torchvision's reference training, for every ImageNet model.
_IMAGENET_CROPS: dict[str, Any] = {
    "weights": "imagenet", "finetune": "last_layer", "crop_mode": "standard",
    "train_hflip": True, "crop_scale_min": 0.08, "crop_scale_max": 1.0,
    "crop_ratio_min": 0.75, "crop_ratio_max": 1.333333, "batch_size": 32,
}
RECIPES: dict[str, dict[str, Any]] = {
    "sgd_step": {"optimizer": "sgd", "lr": 0.001, "momentum": 0.9, "weight_decay": 1e-4,
                 "scheduler": "step", "lr_step_size": 7, "lr_gamma": 0.1},
    "adamw_cosine": {"optimizer": "adamw", "lr": 1e-4, "weight_decay": 0.05,
                     "scheduler": "warmup_cosine"},
}
_FAMILY_RECIPES = {"resnet": "sgd_step", "regnet": "sgd_step", "shufflenet": "sgd_step",
                   "mobilenet": "sgd_step", "efficientnet": "sgd_step",
                   "convnext": "adamw_cosine", "swin": "adamw_cosine", "vit": "adamw_cosine"}
# Every layer trained from random weights (weights 'none', the offline fallback): the recipe
# sweep's "from scratch" stage measured each family's fine-tuning recipe (SGD lr 0.001 for
# ResNet, MobileNet, RegNet and ShuffleNet: made to nudge pretrained features) against recipes for
# training from scratch, on real sets (README). A family listed here won with its recipe; the
# others keep their own (ConvNeXt's AdamW recipe won that stage; EfficientNet's tied within
# 0.01; Swin and ViT were too slow to sweep here).
_FAMILY_SCRATCH_RECIPES: dict[str, dict[str, Any]] = {
    "resnet": {"optimizer": "adamw", "lr": 1e-3, "weight_decay": 1e-4,
               "scheduler": "warmup_cosine"},
    "mobilenet": {"optimizer": "adamw", "lr": 2e-3, "weight_decay": 1e-4,
                  "scheduler": "warmup_cosine"},
    "regnet": {"optimizer": "adamw", "lr": 2e-3, "weight_decay": 1e-4,
               "scheduler": "warmup_cosine"},
    "shufflenet": {"optimizer": "sgd", "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4,
                   "scheduler": "cosine"},
}
FAMILY_LABELS = {"resnet": "ResNet", "regnet": "RegNet", "shufflenet": "ShuffleNet",
                 "mobilenet": "MobileNet", "efficientnet": "EfficientNet",
                 "convnext": "ConvNeXt", "swin": "Swin", "vit": "ViT"}
# The fields a recipe sets: one is the user's, so all are (a recipe is not mixed from two).
RECIPE_FIELDS = ("optimizer", "lr", "momentum", "weight_decay", "scheduler", "lr_step_size",
                 "lr_gamma")


def family_recipe(name: str) -> dict[str, Any]:
    """The fine-tuning recipe of torchvision model ``name``'s family (no torchvision import)."""
    family, _label = _TORCHVISION_MODELS[name]
    return RECIPES[_FAMILY_RECIPES[family]]


def scratch_recipe(name: str) -> dict[str, Any] | None:
    """Model ``name``'s recipe for training from random weights where its family has one
    (``_FAMILY_SCRATCH_RECIPES``), else None (it keeps its fine-tuning recipe)."""
    family = _TORCHVISION_MODELS[name][0] if name in _TORCHVISION_MODELS else None
    return _FAMILY_SCRATCH_RECIPES.get(family) if family else None


def scratch_recipe_values(field: str) -> dict[str, Any]:
    """Each family's from-scratch value of ``field`` (family label -> value)."""
    return {FAMILY_LABELS[family]: recipe[field]
            for family, recipe in _FAMILY_SCRATCH_RECIPES.items() if field in recipe}


@dataclass(frozen=True)
class ModelFacts:
    """One torchvision model as its ImageNet weights describe it.

    Attributes:
        name: torchvision's builder name, e.g. ``convnext_tiny``.
        family: which head and recipe it has: resnet, regnet, shufflenet, mobilenet,
            efficientnet, convnext, swin or vit.
        label: the name as people write it, e.g. ``ConvNeXt-Tiny``.
        weights: the weights entry used for 'imagenet', e.g. ``IMAGENET1K_V1``.
        url: where torchvision publishes that file (its name carries its hash).
        acc1: ImageNet-1K top-1 accuracy in percent.
        params: number of parameters.
        gflops: GFLOPS of one image at the crop size.
        file_mib: size of the weights file in MiB.
        min_size: smallest input side the architecture takes.
        resize_size, crop_size: the evaluation resize (shorter side) and centre crop.
        interpolation: the resize's interpolation, e.g. 'bilinear'.
        mean, std: the normalisation.
        recipe: the fine-tuning recipe's name (a key of ``RECIPES``).
    """

    name: str
    family: str
    label: str
    weights: str
    url: str
    acc1: float
    params: int
    gflops: float
    file_mib: float
    min_size: int
    resize_size: int
    crop_size: int
    interpolation: str
    mean: tuple[float, ...]
    std: tuple[float, ...]
    recipe: str


def unknown_model_message(name: str) -> str:
    return f"unknown model '{name}'; choose one of {', '.join(MODEL_NAMES)}"


def model_names_from_list(text: str) -> list[str]:
    """The models a comma-separated list names ('resnet18, vit_b_16'), as ``--models`` of the
    command line and the benches takes them.

    Raises:
        ValueError: a name that is not a model of the catalogue; the message lists them.
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in MODEL_NAMES:
            raise ValueError(unknown_model_message(name))
    return names


def imagenet_weights_entry(name: str) -> Any:
    """torchvision's weights entry that 'imagenet' loads for ``name`` (its DEFAULT).

    Raises:
        ValueError: ``name`` is not a torchvision model of the catalogue; the message lists them.
    """
    if name not in _TORCHVISION_MODELS:
        raise ValueError(unknown_model_message(name))
    import torchvision.models

    return torchvision.models.get_model_weights(name).DEFAULT


@functools.cache
def model_facts(name: str) -> ModelFacts:
    """What ``name``'s ImageNet weights say about it.

    Raises:
        ValueError: ``name`` is not a torchvision model of the catalogue (small_cnn has no
            ImageNet weights); the message lists the models.
    """
    entry = imagenet_weights_entry(name)
    meta, transforms = entry.meta, entry.transforms()
    family, label = _TORCHVISION_MODELS[name]
    return ModelFacts(
        name=name, family=family, label=label, weights=entry.name, url=entry.url,
        acc1=float(meta["_metrics"]["ImageNet-1K"]["acc@1"]), params=int(meta["num_params"]),
        gflops=float(meta["_ops"]), file_mib=float(meta["_file_size"]),
        min_size=int(max(meta["min_size"])), resize_size=int(transforms.resize_size[0]),
        crop_size=int(transforms.crop_size[0]), interpolation=transforms.interpolation.value,
        mean=tuple(transforms.mean), std=tuple(transforms.std), recipe=_FAMILY_RECIPES[family])


def catalogue_defaults(name: str) -> dict[str, Any]:
    """The settings choosing torchvision model ``name`` sets: ImageNet weights, last-layer
    fine-tuning, its weights' resize, interpolation and crop, the reference random crop and
    its family's recipe."""
    facts = model_facts(name)
    return {**_IMAGENET_CROPS, "resize_size": facts.resize_size, "crop_size": facts.crop_size,
            "interpolation": facts.interpolation, **RECIPES[facts.recipe]}
