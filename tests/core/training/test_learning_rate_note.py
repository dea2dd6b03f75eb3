"""A run says which learning rate it trains at and where it comes from: the model's default
(for small_cnn, measured against the LR finder's suggestion), the from-scratch recipe of an
ImageNet model started from random weights, or the user's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.model_defaults import apply_model_defaults, settings_for_weights
from workbench.core.training.engine import train


class Messages(Callback):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_message(self, event) -> None:
        self.texts.append(event.text)


@pytest.mark.parametrize(("given", "said"), [
    ({}, "Learning rate 0.002 (AdamW, warm-up, then cosine schedule): small_cnn's default, "
         "which beat the LR finder's suggestion on small real folders in the recipe sweep. "
         "Find learning rate… (or `workbench lr-find`) suggests one for this folder."),
    ({"lr": 0.01}, "Learning rate 0.01 (AdamW, warm-up, then cosine schedule): as set; "
                   "small_cnn's default is 0.002."),
    # resnet18 from random weights: the from-scratch recipe, not resnet18's fine-tuning one.
    ({"model": "resnet18", "weights": "none", "resize_size": 32, "crop_size": 32},
     "Learning rate 0.001 (AdamW, warm-up, then cosine schedule): the from-scratch recipe's for "
     "every layer of resnet18 from random weights, measured in the recipe sweep. Find learning "
     "rate… (or `workbench lr-find`) suggests one for this folder."),
    ({"model": "resnet18", "weights": "none", "resize_size": 32, "crop_size": 32, "lr": 0.01},
     "Learning rate 0.01 (SGD with momentum, step schedule: x0.1 every 7 epochs): as set; the "
     "from-scratch recipe's is 0.001."),
], ids=["default", "set", "scratch", "scratch-set"])
def test_the_log_says_which_learning_rate_and_why(tmp_path: Path, given: dict,
                                                  said: str) -> None:
    data = write_shape_dataset(tmp_path / "data", per_class=5, size=(28, 28))
    given = {"model": "small_cnn", **given, "data_root": str(data), "device": "cpu",
             "output_dir": str(tmp_path / "runs"), "epochs": 1, "workers": 0}
    config = apply_model_defaults(TrainConfig(**given), explicit=given)
    config, _notes = settings_for_weights(config, explicit=given)
    messages = Messages()

    end = train(config, messages)

    assert end.status == "completed", end.error
    assert [text for text in messages.texts if text.startswith("Learning rate")] == [said]
