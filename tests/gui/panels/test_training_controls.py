"""TrainingControls: why Start is disabled, in words that count problems, not model names."""

from __future__ import annotations

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.training_controls import TrainingControls


def test_the_reason_start_is_disabled_counts_the_other_problems(qtbot, tmp_path):
    controls = TrainingControls()
    qtbot.addWidget(controls)
    problems = TrainConfig(data_root="", model="small_cnn", epochs=0).validate()
    assert len(problems) == 3

    controls.set_state(running=False, paused=False, stopping=False, problems=problems)
    assert not controls.start_button.isEnabled()
    assert controls.problem_label.text() == f"Cannot start: {problems[0]} (and 2 more problems)"
    assert controls.problem_label.toolTip() == "\n".join(problems)

    controls.set_state(running=False, paused=False, stopping=False, problems=problems[:2])
    assert controls.problem_label.text().endswith(" (and 1 more problem)")
    controls.set_state(running=False, paused=False, stopping=False, problems=problems[:1])
    assert controls.problem_label.text() == f"Cannot start: {problems[0]}"
