"""Choosing a catalogue model sets what its ImageNet weights were made with and its family's
fine-tuning recipe; resnet18's written-out defaults are those its weights and recipe give."""

from __future__ import annotations

import pytest
import torchvision

from workbench.core.data.transforms import IMAGENET_MEAN, IMAGENET_STD
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_catalog import TORCHVISION_MODELS, catalogue_defaults, model_facts
from workbench.core.runs.model_defaults import MODEL_DEFAULTS, apply_model_defaults

TRANSFORMER_ERA = ("convnext_tiny", "swin_t", "vit_b_16")


@pytest.mark.parametrize("name", TORCHVISION_MODELS)
def test_choosing_a_model_sets_its_weights_preprocessing_and_family_recipe(name: str) -> None:
    weights = torchvision.models.get_model_weights(name).DEFAULT
    preprocessing = weights.transforms()

    config = apply_model_defaults(TrainConfig(model=name))

    assert (config.resize_size, config.crop_size) == (preprocessing.resize_size[0],
                                                      preprocessing.crop_size[0])
    assert config.weights == "imagenet" and config.finetune == "last_layer"
    if name in TRANSFORMER_ERA:
        assert (config.optimizer, config.lr, config.scheduler) == ("adamw", 1e-4,
                                                                   "warmup_cosine")
    else:
        assert (config.optimizer, config.lr, config.momentum) == ("sgd", 0.001, 0.9)
    facts = model_facts(name)
    # Every model is normalised with ImageNet's statistics (transforms.normalization_for).
    assert (facts.mean, facts.std) == (IMAGENET_MEAN, IMAGENET_STD)
    assert facts.acc1 == weights.meta["_metrics"]["ImageNet-1K"]["acc@1"]
    assert facts.params == sum(p.numel() for p in
                               torchvision.models.get_model(name, weights=None).parameters())


def test_resnet18s_written_out_defaults_are_what_its_weights_and_recipe_give() -> None:
    assert catalogue_defaults("resnet18") == MODEL_DEFAULTS["resnet18"]


def test_a_crop_smaller_than_the_model_takes_is_a_problem() -> None:
    config = TrainConfig(model="vit_b_16", data_root=".", resize_size=64, crop_size=56)
    assert ("Crop size (crop_size): 56 is smaller than vit_b_16 takes; its crops must be at "
            "least 224 px") in config.validate(check_paths=False)
    assert not [p for p in config.replace(model="resnet50").validate(check_paths=False)
                if "crop_size" in p]
