"""Settings that suit each model, applied to the fields a user has not set.

small_cnn is a small network trained from scratch, every layer, at its native 28 px with the
whole image (no flip: a mirrored 2 is not a 2). Each of its values won a stage of
``workbench/bench/recipe_sweep.py`` on real scans and photos and on generated digits, 20 to
50 images a class (the README's recipe table has the rows): AdamW lr 0.002 (SGD lr 0.05 fell
to 0.24-0.53 on small real sets), a warm-up then cosine over 8 epochs (6 reached the plain
reference's best on textures in 2 seeds of 5, 8 in 4; ``bench/time_to_accuracy.py``), batch 16
(more steps an epoch: on 50 images a class it reached the reference's best on textures in 5
seeds of 5 where 64 reached it in 4, and matched 64 on every image of the sets), no random crop
or label smoothing (both cost accuracy there). resnet18 follows PyTorch's
transfer-learning tutorial: ImageNet weights, RandomResizedCrop(224) and a flip for training,
Resize(256) + CenterCrop(224) for validation, SGD lr 0.001 with momentum 0.9, the lr divided by
ten every 7 epochs. resnet18's values are written out here because a new config starts with
them (``config.py`` reads them when it is imported, before torchvision is); they are what
``model_catalog.catalogue_defaults("resnet18")`` derives from its weights and family recipe. The
other torchvision models' defaults come from there (``defaults_for``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol, TypeVar

from workbench.core.runs.config_fields import describe
from workbench.core.runs.model_catalog import (
    RECIPE_FIELDS,
    TORCHVISION_MODELS,
    catalogue_defaults,
    family_recipe,
    model_facts,
    scratch_recipe,
)

# The model a new config starts with. TrainConfig's field defaults are this model's defaults
# (config.py reads them from here), so the form, the command line and --help agree with a run.
DEFAULT_MODEL = "resnet18"

MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "small_cnn": {
        "weights": "none", "finetune": "full", "crop_mode": "standard", "resize_size": 28,
        "crop_size": 28, "interpolation": "bilinear", "train_hflip": False,
        "crop_scale_min": 1.0, "crop_scale_max": 1.0,
        "crop_ratio_min": 1.0, "crop_ratio_max": 1.0, "batch_size": 16, "epochs": 8,
        "optimizer": "adamw", "lr": 0.002, "weight_decay": 1e-4, "label_smoothing": 0.0,
        "scheduler": "warmup_cosine",
    },
    "resnet18": {
        "weights": "imagenet", "finetune": "last_layer", "crop_mode": "standard",
        "resize_size": 256, "crop_size": 224, "interpolation": "bilinear", "train_hflip": True,
        "crop_scale_min": 0.08,
        "crop_scale_max": 1.0, "crop_ratio_min": 0.75, "crop_ratio_max": 1.333333,
        "batch_size": 32, "optimizer": "sgd", "lr": 0.001, "momentum": 0.9,
        "weight_decay": 1e-4, "scheduler": "step", "lr_step_size": 7, "lr_gamma": 0.1,
    },
}

RANDOM_FROZEN_BACKBONE = (
    "finetune: 'last_layer' with weights 'none' trains only the head on a random, frozen "
    "network, which learns next to nothing")


def defaults_for(model: str) -> dict[str, Any]:
    """The settings choosing ``model`` sets: its own written-out ones (``MODEL_DEFAULTS``), or
    those its weights and family give (``model_catalog``); empty for an unknown name."""
    if model in MODEL_DEFAULTS:
        return MODEL_DEFAULTS[model]
    if model in TORCHVISION_MODELS:
        return catalogue_defaults(model)
    return {}


def native_crop_size(model: str) -> int | None:
    """The crop a model is made for (small_cnn's 28 px digits, the ImageNet models' crop of
    their weights), None for an unknown model. Advice to crop smaller stops there."""
    size = defaults_for(model).get("crop_size")
    return int(size) if size is not None else None


class _Config(Protocol):
    """What these functions read of a TrainConfig (config.py imports this module, so it
    cannot be imported here)."""

    model: str
    weights: str
    finetune: str

    def replace(self, **changes: Any) -> Any: ...


Config = TypeVar("Config", bound=_Config)


def apply_model_defaults(config: Config, explicit: Collection[str] = ()) -> Config:
    """``config`` with its model's defaults in every field not named in ``explicit``."""
    defaults = defaults_for(config.model)
    return config.replace(**{name: value for name, value in defaults.items()
                             if name not in explicit})


def full_finetune_for_random_weights(
    config: Config, explicit: Collection[str] = ()
) -> tuple[Config, str | None]:
    """Switch 'last_layer' to 'full' when the network starts from random weights.

    Returns:
        The config, and a sentence saying what was switched and why (None when nothing was).
        An explicit 'last_layer' is kept: ``random_frozen_backbone_problem`` names it.
    """
    if config.weights != "none" or config.finetune != "last_layer" or "finetune" in explicit:
        return config, None
    whole = describe("finetune").choice_label("full")
    return config.replace(finetune="full"), (
        f"Fine-tune set to \u201c{whole}\u201d: with no pretrained weights the network starts "
        "random, and training only the last layer on a random frozen network learns next to "
        "nothing.")


def recipe_for_weights(config: Config, explicit: Collection[str] = ()
                       ) -> tuple[Config, str | None]:
    """An ImageNet model's optimiser recipe follows its starting weights: with weights 'none'
    every layer trains from random values, which SGD at lr 0.001 (ResNet's fine-tuning recipe,
    made to nudge pretrained features) does slowly, so the families the recipe sweep measured
    a better recipe for (``model_catalog.scratch_recipe``) take it; with ImageNet weights or a
    file the family's fine-tuning recipe comes back.

    Returns:
        The config, and a sentence saying what was set and why (None when nothing was).
        Nothing changes for small_cnn, or when any recipe field is in ``explicit``.
    """
    if config.model not in TORCHVISION_MODELS or any(f in explicit for f in RECIPE_FIELDS):
        return config, None
    scratch = config.weights == "none"
    from_scratch = scratch_recipe(config.model) if scratch else None
    wanted = default_recipe(config.model, config.weights)
    changes = {name: value for name, value in wanted.items() if getattr(config, name) != value}
    if not changes:
        return config, None
    recipe = recipe_words(wanted)
    recipe = recipe[0].upper() + recipe[1:]
    if from_scratch:
        why = ("the recipe for training every layer from random weights, measured against "
               f"{config.model}'s fine-tuning recipe in the recipe sweep")
    elif scratch:
        why = f"{config.model}'s own recipe, which trains it from random weights too"
    else:
        why = f"{config.model}'s fine-tuning recipe for pretrained weights"
    return config.replace(**changes), f"{recipe}: {why}."


def settings_for_weights(config: Config, explicit: Collection[str] = ()
                         ) -> tuple[Config, list[str]]:
    """What the starting weights decide and the user left: 'full' fine-tuning for random
    weights (``full_finetune_for_random_weights``) and the recipe (``recipe_for_weights``).
    Returns the config and a sentence for each change."""
    config, finetune_note = full_finetune_for_random_weights(config, explicit)
    config, recipe_note = recipe_for_weights(config, explicit)
    return config, [note for note in (finetune_note, recipe_note) if note]


def random_frozen_backbone_problem(config: _Config) -> str | None:
    """A problem sentence for weights 'none' with 'last_layer', else None."""
    if config.weights == "none" and config.finetune == "last_layer":
        return RANDOM_FROZEN_BACKBONE + "; choose finetune 'full' or other weights"
    return None


def default_recipe(model: str, weights: str) -> dict[str, Any]:
    """The optimiser recipe ``model`` trains with from ``weights`` when the user sets none:
    small_cnn's own, a torchvision family's recipe for random weights (weights 'none', where
    the family has one), else its fine-tuning recipe. The one source of the recipe the form
    sets (``recipe_for_weights``) and the model line says (``model_summary``)."""
    if model not in TORCHVISION_MODELS:
        defaults = defaults_for(model)
        return {name: defaults[name] for name in RECIPE_FIELDS if name in defaults}
    scratch = scratch_recipe(model) if weights == "none" else None
    return scratch or family_recipe(model)


def recipe_words(recipe: Mapping[str, Any], with_lr: bool = True) -> str:
    """A recipe as the settings' labels say it: "AdamW at learning rate 0.001, warm-up, then
    cosine schedule"; "SGD with momentum at learning rate 0.001, step schedule: x0.1 every
    7 epochs"; without ``with_lr``: "AdamW, warm-up, then cosine schedule". Reads
    ``optimizer``, ``lr``, ``scheduler`` and the step's size and gamma."""
    optimizer = describe("optimizer").choice_label(str(recipe["optimizer"]))
    schedule = describe("scheduler").choice_label(str(recipe["scheduler"]))
    schedule = schedule.split(" (", 1)[0].lower() + " schedule"
    if recipe["scheduler"] == "step" and "lr_step_size" in recipe:
        schedule += f": x{recipe.get('lr_gamma', 0.1):g} every {recipe['lr_step_size']} epochs"
    rate = f" at learning rate {recipe['lr']:g}" if with_lr else ""
    return f"{optimizer}{rate}, {schedule}"


def model_summary(model: str, weights: str = "imagenet") -> str:
    """One line about ``model`` for the picker and the form: its ImageNet figures from
    torchvision, the crop, and the recipe it trains with from ``weights`` when the user sets
    none (``default_recipe``). Imports torchvision (seconds, once)."""
    defaults = defaults_for(model)
    recipe = recipe_words(default_recipe(model, weights))
    if model not in TORCHVISION_MODELS:
        return (f"Trained from scratch (no ImageNet weights); by default on "
                f"{defaults['crop_size']} px crops with {recipe}.")
    facts = model_facts(model)
    how = ("by default trains every layer from random weights with" if weights == "none"
           else "by default fine-tunes with")
    return (f"ImageNet acc@1 {facts.acc1:.1f}%, {facts.params / 1e6:.1f} M parameters, "
            f"{facts.gflops:.2f} GFLOPS, {facts.file_mib:.0f} MiB download; crop "
            f"{facts.crop_size} of {facts.resize_size} ({facts.interpolation}); {how} "
            f"{recipe}.")
