"""The model picker in the settings form: every catalogue model is offered, and picking one
fills its own defaults in the fields not edited and shows its ImageNet figures under it."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QLabel

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.config_form import ConfigForm


def test_picking_a_model_fills_its_defaults_and_shows_its_figures(qtbot, tmp_path: Path):
    form = ConfigForm(TrainConfig(data_root=str(tmp_path), output_dir=str(tmp_path / "runs")))
    qtbot.addWidget(form)
    form.show()
    combo = form.field_widget("model")
    labels = [combo.itemText(index) for index in range(combo.count())]
    assert len(labels) == 15
    assert {"ConvNeXt-Tiny (colour photos)", "ViT-B/16 (colour photos)",
            "MobileNetV3 small (colour photos)"} <= set(labels)
    form.field_widget("epochs").setValue(3)  # edited by the user: kept

    combo.setCurrentIndex(combo.findText("ConvNeXt-Tiny (colour photos)"))

    assert form.field_widget("optimizer").currentData() == "adamw"
    assert form.field_widget("scheduler").currentData() == "warmup_cosine"
    assert form.field_widget("lr").value() == pytest.approx(1e-4)
    assert form.field_widget("weight_decay").value() == pytest.approx(0.05)
    assert (form.field_widget("resize_size").value(),
            form.field_widget("crop_size").value()) == (236, 224)
    assert form.config().epochs == 3 and form.config().model == "convnext_tiny"
    assert "convnext_tiny defaults applied" in form.defaults_note_text()
    facts = form.findChild(QLabel, "modelFacts")
    assert facts.isVisible()
    assert "ImageNet acc@1 82.5%, 28.6 M parameters, 4.46 GFLOPS" in facts.text()
    assert "fine-tunes with AdamW at learning rate 0.0001, warm-up, then cosine schedule" in \
        facts.text()
    assert form.problems() == []

    combo.setCurrentIndex(combo.findText("EfficientNet-B1 (colour photos)"))

    assert form.field_widget("optimizer").currentData() == "sgd"
    assert form.field_widget("lr").value() == pytest.approx(0.001)
    assert (form.field_widget("resize_size").value(),
            form.field_widget("crop_size").value()) == (255, 240)
    assert "ImageNet acc@1 79.8%" in facts.text() and "crop 240 of 255" in facts.text()
