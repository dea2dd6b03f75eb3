"""The runs index's figures on run folders written by hand: the best accuracy is the best
epoch's, wherever it lies, and the config differences name every field a run lacks."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.runs.events import EpochEnd, RunEnd, event_to_dict
from workbench.core.runs.run_index import (
    best_epoch_events,
    config_differences,
    list_runs,
    run_table_rows,
)

# The peak is in the middle: neither the first nor the last epoch is the best.
VAL_ACCURACY = [0.61, 0.83, 0.79]
VAL_LOSS = [0.95, 0.52, 0.58]


def _epoch(number: int, val_accuracy: float, val_loss: float, best_epoch: int) -> EpochEnd:
    return EpochEnd(epoch=number, epochs=3, train_loss=1.0 / number, train_accuracy=0.5,
                    val_loss=val_loss, val_accuracy=val_accuracy, per_class_accuracy=(0.5, 0.5),
                    confusion=((1, 1), (1, 1)), lr=0.01, epoch_seconds=2.0,
                    images_per_second=100.0, is_best=number == best_epoch,
                    best_epoch=best_epoch, best_val_accuracy=0.0, checkpoint_path="")


def _write_run(folder: Path, val_accuracy: list[float], best_epochs: list[int]) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(
        {"config": {"model": "small_cnn", "epochs": 3, "data_root": "/data/shapes"},
         "created": "2026-03-04T05:06:07"}))
    events = [_epoch(n, accuracy, loss, best)
              for n, (accuracy, loss, best)
              in enumerate(zip(val_accuracy, VAL_LOSS, best_epochs, strict=True), start=1)]
    events.append(RunEnd("completed", 3, max(best_epochs), 0.0, str(folder), "", "", 6.0))
    lines = [json.dumps(event_to_dict(event)).replace("NaN", "null") for event in events]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_the_best_accuracy_is_the_best_epochs_not_the_last(tmp_path) -> None:
    _write_run(tmp_path / "middle", VAL_ACCURACY, best_epochs=[1, 2, 2])
    [run] = list_runs(tmp_path)
    assert run.best_val_accuracy == 0.83
    assert run_table_rows([run])[0][4] == "83.0%"
    _, best, _ = best_epoch_events(run.run_dir)
    assert (best.epoch, best.val_accuracy, best.val_loss) == (2, 0.83, 0.52)


def test_an_epoch_without_a_validation_accuracy_does_not_hide_the_best(tmp_path) -> None:
    # An epoch whose validation gave no accuracy (NaN, written as null) comes first.
    _write_run(tmp_path / "gap", [math.nan, 0.83, 0.79], best_epochs=[0, 2, 2])
    [run] = list_runs(tmp_path)
    assert run.best_val_accuracy == 0.83
    assert run_table_rows([run])[0][4] == "83.0%"


def test_config_differences_name_fields_only_one_run_has() -> None:
    first = {"model": "resnet18", "lr": 0.01, "seed": 1, "resume": "/runs/a/last.pt"}
    second = {"model": "resnet18", "lr": 0.01, "seed": 2, "mixup_alpha": 0.2}
    third = {"model": "resnet18", "lr": 0.02, "seed": 3}
    assert config_differences([first, second, third]) == {
        "lr": [0.01, 0.01, 0.02],
        "mixup_alpha": [None, 0.2, None],  # None: the run has no such field
        "resume": ["/runs/a/last.pt", None, None],
        "seed": [1, 2, 3],
    }
    assert config_differences([second, dict(second)]) == {}
    assert config_differences([third, second]) == {
        "lr": [0.02, 0.01], "mixup_alpha": [None, 0.2], "seed": [3, 2]}



_CONFIGS = st.lists(st.dictionaries(st.sampled_from(["lr", "seed", "model", "mixup_alpha"]),
                                    st.sampled_from([0, 1, 0.5, "a", None]), max_size=4),
                    min_size=1, max_size=4)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(configs=_CONFIGS)
def test_the_differing_fields_are_those_not_equal_in_every_config(configs) -> None:
    differences = config_differences(configs)
    for key in {key for config in configs for key in config}:
        values = [config.get(key) for config in configs]
        if len({repr(value) for value in values}) > 1:
            assert differences[key] == values
        else:
            assert key not in differences


def _run_with_split(folder: Path, fingerprint: str | None) -> None:
    folder.mkdir()
    dataset = {} if fingerprint is None else {"split_fingerprint": fingerprint}
    (folder / "config.json").write_text(json.dumps(
        {"config": {"model": "small_cnn", "seed": 0}, "created": "2026-12-06T10:00:00",
         "dataset": dataset}))


def test_runs_validated_on_different_images_are_said_to_be(tmp_path: Path) -> None:
    from workbench.core.runs.run_index import read_run_summary, split_differences

    for name, fingerprint in (("one", "aaaaaaaaaaaa"), ("same", "aaaaaaaaaaaa"),
                              ("other", "bbbbbbbbbbbb"), ("old", None)):
        _run_with_split(tmp_path / name, fingerprint)
    one, same, other, old = (read_run_summary(tmp_path / n)
                             for n in ("one", "same", "other", "old"))
    assert (one.split_fingerprint, old.split_fingerprint) == ("aaaaaaaaaaaa", "")
    assert split_differences([one, same]) == ""
    assert split_differences([one, old]) == ""  # an old run does not say: nothing claimed
    sentence = split_differences([one, other])
    assert sentence.startswith("These runs validated on different images (split one: "
                               "aaaaaaaaaaaa, other: bbbbbbbbbbbb)")
    assert "not measured on the same test" in sentence
