"""The recipe the form shows is the recipe the run uses: with weights none the note under the
settings and the model line under the model both name the from-scratch recipe, in the
settings' own words (no internal names such as 'full' or warmup_cosine)."""

from __future__ import annotations

from pathlib import Path

import torchvision.models  # noqa: F401 - the model line is then filled at once
from PySide6.QtWidgets import QLabel

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.config_form import ConfigForm

# ResNet's recipe for every layer from random weights (model_catalog), as the labels of the
# optimizer and schedule fields say it.
FROM_SCRATCH = "AdamW at learning rate 0.001, warm-up, then cosine schedule"
FINE_TUNING = "SGD with momentum at learning rate 0.001, step schedule: x0.1 every 7 epochs"
INTERNAL_NAMES = ("warmup_cosine", "'full'", "adamw", "sgd ", "last_layer")


def test_with_weights_none_the_note_and_the_model_line_name_the_same_recipe(qtbot,
                                                                           tmp_path: Path):
    form = ConfigForm(TrainConfig(data_root=str(tmp_path), output_dir=str(tmp_path / "runs")))
    qtbot.addWidget(form)
    form.show()
    facts = form.findChild(QLabel, "modelFacts")
    assert f"fine-tunes with {FINE_TUNING}." in facts.text()  # ImageNet weights at first

    form.edit_field("weights", "none")

    config = form.config()
    assert (config.optimizer, config.lr, config.scheduler) == ("adamw", 0.001, "warmup_cosine")
    note = form.defaults_note_text()
    assert FROM_SCRATCH in note, note
    assert "Fine-tune set to \u201cWhole network (full fine-tuning)\u201d" in note, note
    assert f"trains every layer from random weights with {FROM_SCRATCH}." in facts.text(), \
        facts.text()
    for shown in (note, facts.text()):
        assert not any(name in shown for name in INTERNAL_NAMES), shown
        assert "SGD" not in shown and "step schedule" not in shown, shown

    form.edit_field("weights", "imagenet")  # back to the fine-tuning recipe, in both
    assert f"fine-tunes with {FINE_TUNING}." in facts.text()
    assert FINE_TUNING in form.defaults_note_text()
