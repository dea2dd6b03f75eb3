"""Known answers of a measurement's decisions that read only the device's name and the
largest-batch search's result: the steps and runs timed, whether the largest batch is searched,
and the figures a card's measurement shows (fits, largest batch, at the cap), each from the
batch-size finder's own result type, built by hand (no card needed)."""

from __future__ import annotations

from workbench.core.training.tuning.batch_size_finder import BatchSizeResult
from workbench.core.training.tuning.model_measurement import (
    memory_figures,
    searches_largest,
    step_counts,
)

OUT_OF_MEMORY = "out of memory at batch 512"


def searched(largest: int, failing: int | None, max_batch: int = 1024) -> BatchSizeResult:
    """A finished search on the card: doubling from 1, as the finder tries."""
    tried = tuple(2**k for k in range(11) if 2**k <= max(largest, 1)) + (
        (failing,) if failing is not None else ())
    return BatchSizeResult(batch_size=max(1, int(largest * 0.9)) if largest else 0,
                           largest_fitting=largest, first_failing=failing, tried=tried,
                           device="cuda:0", precision="float16 (mixed)", max_batch=max_batch)


def test_a_card_warms_up_three_steps_times_ten_and_takes_twenty_latency_runs():
    assert step_counts("cuda:0") == (3, 10, 20)
    assert step_counts("cuda") == (3, 10, 20)
    assert step_counts("cpu") == (1, 2, 5)


def test_counts_given_are_the_counts_measured_zero_included():
    assert step_counts("cuda:1", 0, 4, 1) == (0, 4, 1)
    assert step_counts("cuda:0", None, 6) == (3, 6, 20)
    assert step_counts("cuda:0", runs=7) == (3, 10, 7)
    assert step_counts("cpu", 2, 0, 0) == (2, 0, 0)


def test_only_a_card_searches_the_largest_batch_and_only_when_asked():
    assert searches_largest("cuda:0", True)
    assert searches_largest("cuda", True)
    assert not searches_largest("cuda:0", False)
    assert not searches_largest("cpu", True)
    assert not searches_largest("cpu", False)


def test_a_card_measurement_that_trained_shows_the_largest_batch_found():
    # 96 fitted, 112 did not: the largest is 96, not the search's cap.
    assert memory_figures("cuda:0", "", searched(96, 112)) == (True, 96, False)
    assert memory_figures("cuda:0", "", searched(1, 2)) == (True, 1, False)


def test_a_search_that_reached_its_cap_with_the_batch_still_fitting_says_at_least():
    assert memory_figures("cuda:0", "", searched(1024, None)) == (True, 1024, True)
    assert memory_figures("cuda:1", "", searched(1, None, max_batch=1)) == (True, 1, True)


def test_a_card_batch_that_ran_out_of_memory_does_not_fit():
    assert memory_figures("cuda:0", OUT_OF_MEMORY, searched(256, 320)) == (False, 256, False)
    # Not even a batch of 1 fits: no largest batch, and no cap reached.
    assert memory_figures("cuda:0", OUT_OF_MEMORY, searched(0, 1)) == (False, 0, False)
    # A search that tried nothing found no batch, so none is at the cap.
    nothing = BatchSizeResult(batch_size=0, largest_fitting=0, first_failing=None,
                              device="cuda:0", max_batch=1024)
    assert memory_figures("cuda:0", "", nothing) == (True, 0, False)


def test_without_a_search_a_card_shows_only_whether_the_batch_fitted():
    assert memory_figures("cuda:0", "", None) == (True, None, False)
    assert memory_figures("cuda", OUT_OF_MEMORY, None) == (False, None, False)


def test_the_cpu_shows_no_memory_figures_whatever_it_is_given():
    assert memory_figures("cpu", "", None) == (None, None, False)
    assert memory_figures("cpu", OUT_OF_MEMORY, None) == (None, None, False)
    assert memory_figures("cpu", "", searched(1024, None)) == (None, None, False)
