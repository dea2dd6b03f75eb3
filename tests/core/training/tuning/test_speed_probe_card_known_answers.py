"""Known answers of the speed probe's step counts, which read only the device's name: how many
steps a row warms up and times on a card and on the CPU (no card needed to ask). A row's
images a second are its batch times the timed steps over their seconds."""

from __future__ import annotations

from workbench.core.training.tuning.speed_probe import step_counts


def test_a_card_row_warms_up_twice_and_times_five_steps():
    assert step_counts("cuda:0") == (2, 5)
    assert step_counts("cuda") == (2, 5)
    assert step_counts("cuda:1", 3) == (2, 3)


def test_a_cpu_row_warms_up_once_and_times_two_steps_unless_told():
    assert step_counts("cpu") == (1, 2)
    assert step_counts("cpu", 7) == (1, 7)
    assert step_counts("cpu", 0) == (1, 2)  # 0 asks for the device's own count
