"""The recipe sweep: how a stage's winner is chosen, and its quick mode end to end."""

from __future__ import annotations

import json

from workbench.bench.recipe_sweep import TIE, RecipeScore, main, pick_winner
from workbench.core.runs.model_defaults import defaults_for


def _score(accuracy: float, seconds: float, lr: float) -> RecipeScore:
    return RecipeScore("lr", {"lr": lr}, accuracy, accuracy, seconds, {})


def test_the_most_accurate_recipe_wins_unless_a_faster_one_is_within_the_tie():
    slow_best = _score(0.90, 10.0, 0.1)
    fast_close = _score(0.90 - TIE / 2, 4.0, 0.2)
    fastest_poor = _score(0.80, 1.0, 0.3)
    assert pick_winner([fastest_poor, slow_best, fast_close]) is fast_close
    # Just outside the tie, accuracy decides.
    beaten = _score(0.90 - 2 * TIE, 4.0, 0.2)
    assert pick_winner([fastest_poor, beaten, slow_best]) is slow_best


def test_quick_sweep_runs_real_training_and_reports_which_lr_each_recipe_used(tmp_path, capsys):
    output = tmp_path / "sweep.json"
    assert main(["--quick", "-o", str(output)]) == 0
    result = json.loads(output.read_text())

    assert result["cells"] == ["digits@10"] and result["command"].endswith(f"-o {output}")
    stages = [row["stage"] for row in result["rows"]]
    assert stages == ["lr", "lr", "lr finder", "lr finder"]
    first_winner = next(row["recipe"] for row in result["rows"][:2] if row["chosen"])
    # The second stage starts from the first stage's winner, and one row a stage is chosen.
    assert result["rows"][2]["recipe"] == first_winner
    assert [row["chosen"] for row in result["rows"]].count(True) == 2
    assert result["winner"] == next(row["recipe"] for row in result["rows"][2:] if row["chosen"])
    for row in result["rows"]:
        assert 0.0 <= row["accuracy"] <= 1.0 and row["seconds"] > 0
    fixed, found = result["rows"][2], result["rows"][3]
    assert fixed["lrs_used"] == [first_winner["lr"]]
    assert found["recipe"]["lr_from_finder"] and found["lrs_used"] != fixed["lrs_used"]
    assert "winner:" in capsys.readouterr().out


def test_model_sweeps_that_models_defaults_in_place_of_small_cnns(tmp_path):
    output = tmp_path / "sweep.json"
    start = '{"weights": "none", "finetune": "full", "resize_size": 16, "crop_size": 16}'
    assert main(["--quick", "--model", "resnet18", "--stages", "lr finder",
                 "--start-from", start, "-o", str(output)]) == 0
    result = json.loads(output.read_text())

    assert result["base"]["model"] == "resnet18"
    fixed = result["rows"][0]
    assert fixed["recipe"] == json.loads(start)
    # The run trained at resnet18's own lr (small_cnn's is 0.002).
    assert fixed["lrs_used"] == [defaults_for("resnet18")["lr"]] == [0.001]
