"""Time to accuracy: when the defaults first reach the reference's best, over the reference's
own time to it."""

from __future__ import annotations

import math

import pytest

from workbench.bench.time_to_accuracy import compare_seed, set_rows

# (seconds since the start, val accuracy) at each epoch's end; the reference peaks mid-run.
REFERENCE = [(10.0, 0.50), (20.0, 0.80), (30.0, 0.70)]


def test_the_ratio_is_our_first_epoch_at_the_references_best_over_its_time_to_its_best():
    ours = [(3.0, 0.60), (6.0, 0.85), (9.0, 0.90)]
    seed = compare_seed(REFERENCE, ours)
    assert seed["reference_best"] == 0.80 and seed["reference_seconds"] == 20.0
    assert seed["workbench_seconds_to_it"] == 6.0 and seed["reached"]
    assert seed["ratio"] == pytest.approx(0.3) and seed["workbench_best"] == 0.90


def test_a_seed_that_never_reaches_it_fails_the_target_and_the_rows_say_so():
    never = compare_seed(REFERENCE, [(5.0, 0.70), (12.0, 0.79)])
    assert not never["reached"] and never["ratio"] == math.inf
    reached = compare_seed(REFERENCE, [(4.0, 0.80), (8.0, 0.81)])
    time_row, accuracy_row = set_rows("digits", [never, reached])
    assert time_row.workbench == math.inf and time_row.met is False
    assert time_row.details["mean_ratio_where_reached"] == pytest.approx(0.2)
    assert "reached in 1/2 seeds" in time_row.what
    both = set_rows("digits", [reached, compare_seed(REFERENCE, [(12.0, 0.8)])])[0]
    assert both.workbench == pytest.approx((0.2 + 0.6) / 2) and both.met
    assert set_rows("digits", [reached, compare_seed(REFERENCE, [(18.0, 0.8)])])[0].met \
        is False  # (0.2 + 0.9) / 2 > 0.5
    assert accuracy_row.ratio == pytest.approx(((0.79 + 0.81) / 2) / 0.80)


def test_a_candidate_default_is_measured_on_top_of_the_defaults(tmp_path):
    import argparse

    from workbench.bench.time_to_accuracy import parse_override, run, workbench_defaults_config
    from workbench.core.runs.model_defaults import MODEL_DEFAULTS

    assert parse_override("epochs=6") == ("epochs", 6)
    assert parse_override("scheduler=cosine") == ("scheduler", "cosine")
    with pytest.raises(argparse.ArgumentTypeError, match="FIELD=VALUE"):
        parse_override("epochs")
    plain = workbench_defaults_config(tmp_path, tmp_path, 0, "cpu")
    assert plain.epochs == MODEL_DEFAULTS["small_cnn"]["epochs"]
    candidate = workbench_defaults_config(tmp_path, tmp_path, 0, "cpu", {"epochs": 6})
    assert candidate.epochs == 6 and candidate.lr == plain.lr
    with pytest.raises(ValueError, match="unknown set.*textures"):
        run(names=("textures", "nope"))
