"""ConfigForm: the head-first fine-tuning fields appear only with that mode, and choosing a
model shows its own resize interpolation."""

from __future__ import annotations

import pytest

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.config_form import ConfigForm

STAGE_FIELDS = ("head_epochs", "backbone_lr_factor")


def _choose(form: ConfigForm, field: str, value: str) -> None:
    combo = form.field_widget(field)
    combo.setCurrentIndex(combo.findData(value))


def test_stage_fields_show_only_with_head_then_full(qtbot, form):
    for field in STAGE_FIELDS:
        assert not form.field_widget(field).isVisible() and not form.field_shown(field)

    _choose(form, "finetune", "head_then_full")
    assert form.config().finetune == "head_then_full"
    for field in STAGE_FIELDS:
        assert form.field_widget(field).isVisible() and form.field_widget(field).isEnabled()
    form.field_widget("epochs").setValue(3)
    form.field_widget("head_epochs").setValue(3)
    assert form.config().head_epochs == 3
    assert form.field_problem_text("head_epochs").startswith(
        "Head-only epochs (head_epochs): must be at least 1 and fewer than epochs (3)")
    form.field_widget("backbone_lr_factor").setValue(0.25)
    assert form.config().backbone_lr_factor == 0.25

    _choose(form, "finetune", "full")
    for field in STAGE_FIELDS:
        assert not form.field_widget(field).isVisible()
    assert form.problems() == []  # the other modes ignore the stage fields


@pytest.mark.parametrize("model, interpolation", [("efficientnet_b0", "bicubic"),
                                                  ("swin_t", "bicubic"),
                                                  ("convnext_tiny", "bilinear")])
def test_choosing_a_model_shows_its_own_interpolation(qtbot, form, model, interpolation):
    _choose(form, "model", "efficientnet_b0" if model != "efficientnet_b0" else "swin_t")
    _choose(form, "model", model)
    combo = form.field_widget("interpolation")
    assert combo.currentData() == interpolation and form.config().interpolation == interpolation
    assert combo.currentText() == interpolation.capitalize()


def test_the_lr_finder_says_it_sweeps_the_whole_network_of_the_second_stage(qtbot, tmp_path):
    from workbench.gui.panels.lr_finder_dialog import LrFinderDialog

    dialog = LrFinderDialog()
    qtbot.addWidget(dialog)
    config = TrainConfig(data_root=str(tmp_path / "missing"), finetune="head_then_full",
                         backbone_lr_factor=0.25, weights="none", device="cpu")
    with qtbot.waitSignal(dialog.running_changed, check_params_cb=lambda running: not running,
                          timeout=30000):
        dialog.start(config, steps=10)  # the missing folder ends the test at once
    text = dialog.settings_label.text()
    assert "sweeps the whole network as it trains after the head-only epochs" in text
    assert "the backbone at 0.25 times the lr shown" in text

    with qtbot.waitSignal(dialog.running_changed, check_params_cb=lambda running: not running,
                          timeout=30000):
        dialog.start(config.replace(finetune="full"), steps=10)
    assert "head-only" not in dialog.settings_label.text()
