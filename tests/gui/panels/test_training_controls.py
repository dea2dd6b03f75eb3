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


def test_while_checking_start_waits_and_notes_show_when_nothing_stops_it(qtbot):
    controls = TrainingControls()
    qtbot.addWidget(controls)
    notes = ["Batch size (batch_size): 64 is more than the 16 training images: each step will "
             "use all 16", "Starting weights (weights): a long sentence naming a folder"]

    controls.set_state(running=False, paused=False, stopping=False, problems=[], checking=True,
                       notes=notes)
    assert not controls.start_button.isEnabled()
    assert controls.problem_label.text() == "Checking the data folder and settings\u2026"

    controls.set_state(running=False, paused=False, stopping=False, problems=[], notes=notes,
                       short_texts={notes[1]: "weights not here yet"})
    assert controls.start_button.isEnabled()
    assert controls.problem_label.text() == f"Note: {notes[0]} (and 1 more note)"
    assert controls.problem_label.toolTip() == "\n".join(notes)

    controls.set_state(running=False, paused=False, stopping=False, problems=[],
                       notes=notes[1:], short_texts={notes[1]: "weights not here yet"})
    assert controls.problem_label.text() == "Note: weights not here yet"
    assert controls.problem_label.toolTip() == notes[1]  # the whole sentence, on hover

    controls.set_state(running=True, paused=False, stopping=False, problems=[], notes=notes)
    assert controls.problem_label.text() == ""  # a run is going: nothing to say about Start
