"""The model catalogue's answers known from torchvision's documentation and from the recipes as
written: the weights 'imagenet' loads, the model lists the command line takes, the messages
naming an unknown model, and each family's from-scratch recipe."""

from __future__ import annotations

import pytest

from workbench.core.runs.model_catalog import (
    MODEL_NAMES,
    family_recipe,
    imagenet_weights_entry,
    model_names_from_list,
    scratch_recipe,
    scratch_recipe_values,
    unknown_model_message,
)


def test_imagenet_loads_the_default_weights_of_the_named_model() -> None:
    # torchvision's documentation: resnet18's DEFAULT is IMAGENET1K_V1 (resnet18-f37072fd.pth),
    # efficientnet_b1's is IMAGENET1K_V2 (evaluated at a 255 px resize and a 240 px crop).
    resnet = imagenet_weights_entry("resnet18")
    assert (resnet.name, resnet.url.rsplit("/", 1)[-1]) == ("IMAGENET1K_V1",
                                                          "resnet18-f37072fd.pth")
    efficientnet = imagenet_weights_entry("efficientnet_b1")
    assert efficientnet.name == "IMAGENET1K_V2"
    assert efficientnet.transforms().crop_size == [240]
    for name in ("small_cnn", "resnet19"):
        with pytest.raises(ValueError) as raised:
            imagenet_weights_entry(name)
        assert str(raised.value) == unknown_model_message(name)


def test_an_unknown_model_is_named_with_every_choice() -> None:
    message = unknown_model_message("resnet19")
    assert message.startswith("unknown model 'resnet19'; choose one of resnet18, resnet34, ")
    assert message.endswith(", vit_b_16, small_cnn")
    assert message.count(", ") == len(MODEL_NAMES) - 1


def test_a_comma_separated_list_names_the_models() -> None:
    assert model_names_from_list(" resnet18, vit_b_16,,small_cnn ,") == [
        "resnet18", "vit_b_16", "small_cnn"]
    assert model_names_from_list("") == []
    with pytest.raises(ValueError, match=r"^unknown model 'resnet 18'; choose one of resnet18"):
        model_names_from_list("vit_b_16, resnet 18")


def test_each_family_has_its_recipe_from_random_weights() -> None:
    # Written out from the recipe sweep's from-scratch stage.
    assert scratch_recipe("resnet50") == {"optimizer": "adamw", "lr": 1e-3,
                                          "weight_decay": 1e-4, "scheduler": "warmup_cosine"}
    assert scratch_recipe("mobilenet_v3_small")["lr"] == 2e-3
    assert scratch_recipe("shufflenet_v2_x1_0") == {
        "optimizer": "sgd", "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4,
        "scheduler": "cosine"}
    # ConvNeXt and EfficientNet keep their fine-tuning recipe; small_cnn has no family.
    assert scratch_recipe("convnext_tiny") is None
    assert scratch_recipe("efficientnet_b0") is None
    assert scratch_recipe("small_cnn") is None
    assert scratch_recipe_values("momentum") == {"ShuffleNet": 0.9}
    assert scratch_recipe_values("lr") == {"ResNet": 1e-3, "MobileNet": 2e-3, "RegNet": 2e-3,
                                           "ShuffleNet": 0.01}


def test_the_fine_tuning_recipe_is_the_familys() -> None:
    assert family_recipe("regnet_y_400mf")["optimizer"] == "sgd"
    assert family_recipe("swin_t") == {"optimizer": "adamw", "lr": 1e-4, "weight_decay": 0.05,
                                       "scheduler": "warmup_cosine"}
