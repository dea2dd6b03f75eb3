"""Known answers of the learning-rate range test: a hand-set loss a step (the model's output
times 0 plus the value, so the step still trains), whose smoothed curve, divergence stop and
schedule can be worked out by hand, and the sentences a user reads."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.training.tuning.lr_finder import (
    DEFAULT_END_LR,
    DEFAULT_START_LR,
    DEFAULT_STEPS,
    DIVERGENCE_FACTOR,
    SMOOTHING,
    LrFinderResult,
    find_lr_for_config,
    lr_range_test,
    suggest_lr,
)


def _scripted(values: list[float]):
    """A loss function that returns ``values`` in turn (the output times 0 keeps the graph)."""
    calls = iter(values)

    def loss(outputs: torch.Tensor, _labels: torch.Tensor) -> torch.Tensor:
        return (outputs * 0.0).sum() + next(calls)

    return loss


def _sweep(values: list[float], steps: int | None = None, **arguments):
    torch.manual_seed(0)
    model = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    batches = [(torch.ones(1, 2), torch.tensor([0]))]
    return lr_range_test(model, optimizer, batches, _scripted(values),
                         steps=steps or len(values), **arguments)


def test_the_constants_a_user_gets_by_default():
    assert (DEFAULT_START_LR, DEFAULT_END_LR, DEFAULT_STEPS) == (1e-7, 10.0, 100)
    assert (DIVERGENCE_FACTOR, SMOOTHING) == (4.0, 0.98)


def test_the_lr_grows_by_the_same_factor_a_step_from_start_to_end():
    result = _sweep([1.0] * 5, start_lr=1e-3, end_lr=10.0)
    assert result.lrs == pytest.approx([1e-3, 1e-2, 1e-1, 1.0, 10.0], rel=1e-12)
    assert result.stopped_early is False


def test_the_smoothed_loss_is_the_bias_corrected_running_average():
    # Step 0: 0.02 x 1 / 0.02 = 1. Step 1: (0.98 x 0.02 x 1 + 0.02 x 3) / (1 - 0.98^2)
    # = 0.0796 / 0.0396. A constant loss stays itself at every step.
    result = _sweep([1.0, 3.0], start_lr=1e-3, end_lr=1e-2)
    assert result.losses == pytest.approx([1.0, 0.0796 / 0.0396], rel=1e-12)
    assert _sweep([2.0] * 6, start_lr=1e-3, end_lr=1e-2).losses == pytest.approx([2.0] * 6,
                                                                               rel=1e-12)


def test_the_test_stops_once_the_smoothed_loss_passes_four_times_its_lowest():
    # Five steps at 1.0, then X: the smoothed loss is (0.98 - 0.98^6 + 0.02 X) / (1 - 0.98^6),
    # above 4 from X = 18.12 on. 19 stops there (six steps run); 18 does not.
    diverging = _sweep([1.0] * 5 + [19.0] + [1.0] * 4, start_lr=1e-3, end_lr=1.0)
    assert len(diverging.lrs) == len(diverging.losses) == 6 and diverging.stopped_early is True
    assert diverging.losses[-1] == pytest.approx(
        (0.98 - 0.98**6 + 0.02 * 19) / (1 - 0.98**6), rel=1e-12)
    staying = _sweep([1.0] * 5 + [18.0] + [1.0] * 4, start_lr=1e-3, end_lr=1.0)
    assert len(staying.lrs) == 10 and staying.stopped_early is False


def test_a_loss_of_zero_is_no_divergence_and_a_non_finite_loss_stops_the_test():
    flat = _sweep([0.0] * 4, start_lr=1e-3, end_lr=1.0)
    assert flat.losses == [0.0] * 4 and flat.stopped_early is False
    for bad in (math.nan, math.inf):
        stopped = _sweep([1.0, 1.0, bad, 1.0, 1.0], start_lr=1e-3, end_lr=1.0)
        assert len(stopped.lrs) == 3 and stopped.stopped_early is True
        assert not math.isfinite(stopped.losses[-1])


def test_a_cancel_ends_the_test_after_the_step_it_came_in_and_the_state_comes_back():
    control = RunControl()
    torch.manual_seed(0)
    model = nn.Linear(2, 2)
    weights = {name: value.clone() for name, value in model.state_dict().items()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    seen: list[tuple[int, float, float]] = []

    def on_step(step: int, lr: float, loss: float) -> None:
        seen.append((step, lr, loss))
        if step == 1:
            control.request_cancel()

    result = lr_range_test(model, optimizer, [(torch.ones(1, 2), torch.tensor([0]))],
                           _scripted([1.0] * 6), start_lr=1e-3, end_lr=1e2, steps=6,
                           control=control, on_step=on_step)

    assert result.stopped_early is True
    assert result.lrs == pytest.approx([1e-3, 1e-2], rel=1e-12)
    assert seen == [(0, result.lrs[0], 1.0), (1, result.lrs[1], pytest.approx(1.0))]
    assert all(torch.equal(model.state_dict()[name], value) for name, value in weights.items())
    assert optimizer.param_groups[0]["lr"] == 0.5 and model.training


def test_each_group_keeps_its_share_of_the_largest_groups_lr():
    head, backbone = nn.Linear(2, 2), nn.Linear(2, 2)
    optimizer = torch.optim.SGD([{"params": head.parameters(), "lr": 0.2},
                                 {"params": backbone.parameters(), "lr": 0.05}])
    model = nn.Sequential(backbone, head)
    group_lrs: list[list[float]] = []
    lr_range_test(model, optimizer, [(torch.ones(1, 2), torch.tensor([0]))],
                  _scripted([1.0] * 3), start_lr=1e-2, end_lr=1.0, steps=3,
                  on_step=lambda *_: group_lrs.append([g["lr"] for g in optimizer.param_groups]))
    assert group_lrs == [pytest.approx([1e-2, 2.5e-3]), pytest.approx([1e-1, 2.5e-2]),
                         pytest.approx([1.0, 0.25])]
    assert [g["lr"] for g in optimizer.param_groups] == [0.2, 0.05]
    # Every group at lr 0: each gets the swept lr itself.
    zero = torch.optim.SGD([{"params": head.parameters(), "lr": 0.0},
                            {"params": backbone.parameters(), "lr": 0.0}])
    group_lrs.clear()
    lr_range_test(model, zero, [(torch.ones(1, 2), torch.tensor([0]))], _scripted([1.0] * 2),
                  start_lr=1e-2, end_lr=1.0, steps=2,
                  on_step=lambda *_: group_lrs.append([g["lr"] for g in zero.param_groups]))
    assert group_lrs == [pytest.approx([1e-2, 1e-2]), pytest.approx([1.0, 1.0])]


def test_the_batches_are_cycled_in_order_and_none_is_refused():
    used: list[float] = []
    batches = [(torch.full((1, 2), float(i)), torch.tensor([0])) for i in range(3)]

    def loss(outputs: torch.Tensor, _labels: torch.Tensor) -> torch.Tensor:
        return (outputs * 0.0).sum() + 1.0

    model = nn.Linear(2, 2)
    real_forward = model.forward
    model.forward = lambda inputs: (used.append(float(inputs[0, 0])), real_forward(inputs))[1]
    lr_range_test(model, torch.optim.SGD(model.parameters(), lr=0.1), batches, loss,
                  start_lr=1e-3, end_lr=1.0, steps=7)
    assert used == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 0.0]


# A loop that kept asking an empty loader for more would never end: it fails here instead.
@pytest.mark.timeout(20, method="signal")
def test_no_batches_are_refused():
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="^lr range: no batches to train on$"):
        lr_range_test(model, torch.optim.SGD(model.parameters(), lr=0.1), [],
                      _scripted([1.0] * 3), start_lr=1e-3, end_lr=1.0, steps=3)


def test_the_steps_really_train_with_the_swept_lr():
    # One weight, loss = w: SGD moves it by -lr a step; the model seen at step 2 has
    # w = 1 - 0.1 - 1.0, so the loss read there is 1 - 1.1 = -0.1 (its smoothed value known).
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    raw: list[float] = []

    def loss(outputs: torch.Tensor, _labels: torch.Tensor) -> torch.Tensor:
        raw.append(float(outputs.detach().sum()))
        return outputs.sum()

    lr_range_test(model, torch.optim.SGD(model.parameters(), lr=1.0),
                  [(torch.ones(1, 1), torch.tensor([0]))], loss, start_lr=0.1, end_lr=10.0,
                  steps=3)
    assert raw == pytest.approx([1.0, 0.9, -0.1])
    assert float(model.weight.detach()) == 1.0  # put back


def test_bad_ranges_are_refused_with_the_figures():
    model = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.ones(1, 2), torch.tensor([0]))]
    for start, end in ((1e-3, 1e-3), (0.0, 1.0), (1.0, 1e-3)):
        with pytest.raises(ValueError, match=(r"^lr range: need 0 < start < end "
                                              rf"\(got {start} to {end}\)$")):
            lr_range_test(model, optimizer, batches, _scripted([1.0] * 3), start_lr=start,
                          end_lr=end, steps=3)
    with pytest.raises(ValueError, match=r"^lr range: need at least 2 steps \(got 1\)$"):
        lr_range_test(model, optimizer, batches, _scripted([1.0]), start_lr=1e-3, end_lr=1.0,
                      steps=1)
    two = lr_range_test(model, optimizer, batches, _scripted([1.0] * 2), start_lr=1e-3,
                        end_lr=1.0, steps=2)
    assert two.lrs == pytest.approx([1e-3, 1.0])


def test_the_sentences_a_user_reads():
    lrs = [10 ** (-5 + step) for step in range(5)]
    assert LrFinderResult(lrs, [1.0] * 5, 3.14159e-3, False).describe() == (
        "suggested lr 3.14e-03 (steepest fall of the loss over 5 steps from 1.0e-05 to "
        "1.0e-01)")
    assert LrFinderResult(lrs, [1.0] * 5, None, True).describe() == (
        "no lr suggested: the loss did not fall over 5 steps from 1.0e-05 to 1.0e-01")
    assert LrFinderResult([], [], None, True).describe() == "no lr suggested: no step ran"


# 21 lrs, ten a decade from 1e-3 to 1e-1.
LRS = [10 ** (-3 + 0.1 * step) for step in range(21)]


def _falling(count: int, falls: dict[int, float]) -> list[float]:
    """A loss that falls 0.01 a step, and ``falls[step]`` from point step - 1 to step."""
    losses = [10.0]
    for step in range(1, count):
        losses.append(losses[-1] - falls.get(step, 0.01))
    return losses


def test_the_first_five_and_last_three_points_are_left_out():
    # Of 21 points 5-17 are kept (one point either side for a slope). The fall of 5.0 into
    # point 5 is skipped; the fall of 0.3 into point 6 is the steepest kept: point 6.
    start = _falling(21, {5: 5.0, 6: 0.3})
    assert suggest_lr(LRS, start) == pytest.approx(LRS[6], rel=1e-9)
    # The fall of 5.0 into point 18 is skipped; the 0.3 into point 17 (the last kept, where
    # no slope is taken) makes point 16 the steepest.
    end = _falling(21, {17: 0.3, 18: 5.0})
    assert suggest_lr(LRS, end) == pytest.approx(LRS[16], rel=1e-9)
    # With exactly eight points nothing is skipped: the fall into point 1 is the steepest.
    assert suggest_lr(LRS[:8], _falling(8, {1: 1.0, 2: 0.5})) == pytest.approx(LRS[1],
                                                                               rel=1e-9)
    with pytest.raises(ValueError):  # every loss needs its lr
        suggest_lr(LRS[:9], _falling(8, {}))


def test_the_slope_window_is_a_tenth_of_the_points_either_side():
    # 21 points, 13 kept: a window of one point either side. A lone drop of 1.0 into point 8
    # (a slope of -5.05 at points 7 and 8) beats a long fall of 0.3 a step from point 11 on
    # (-3); over two points either side the drop would give -2.6 and the long fall win.
    losses = _falling(21, {8: 1.0, **{step: 0.3 for step in range(11, 21)}})
    assert LRS[7] * 0.999 < suggest_lr(LRS, losses) < LRS[8] * 1.001
    # 48 points, 40 kept: a window of four either side. Three falls of 0.6 into points 12-14
    # give at most -(1.8 + 0.05) / 0.8 = -2.31, a long fall of 0.27 a step from point 25 on
    # -2.7: the long fall wins (over three points either side the three would give -3.05).
    lrs = [10 ** (-6 + 0.1 * step) for step in range(48)]
    losses = _falling(48, {12: 0.6, 13: 0.6, 14: 0.6, **{s: 0.27 for s in range(25, 48)}})
    assert lrs[28] * 0.999 < suggest_lr(lrs, losses) < lrs[43] * 1.001


def test_a_window_cut_short_at_the_end_is_a_slope_over_its_own_width():
    # 29 points, 21 kept: two points either side. A drop of 1.0 into the last kept point
    # (25): point 24's window is cut to three steps, -(1.0 + 0.02) / 0.3 = -3.4; point 23's
    # spans four, -(1.0 + 0.03) / 0.4 = -2.575.
    lrs = [10 ** (-5 + 0.1 * step) for step in range(29)]
    assert suggest_lr(lrs, _falling(29, {25: 1.0})) == pytest.approx(lrs[24], rel=1e-9)


def test_the_suggestion_is_looked_for_up_to_the_lowest_point_only():
    # A slow fall, a rise at point 14, a drop of 1.5 into the lowest point 15, then a rise.
    # Kept points 8-11 (of the 21: 13-16) are 3.0, 3.5, 2.0, 2.05: the steepest slope up to
    # the lowest is at point 14, (2.0 - 3.0) / 0.2; one point past the lowest would give
    # (2.05 - 3.5) / 0.2 at point 15, steeper.
    losses = [5.0 - 0.1 * step for step in range(21)]
    losses[13:17] = [3.0, 3.5, 2.0, 2.05]
    for step in range(17, 21):
        losses[step] = 2.05 + 0.5 * (step - 16)
    assert min(range(21), key=losses.__getitem__) == 15
    assert suggest_lr(LRS, losses) == pytest.approx(LRS[14], rel=1e-9)


def test_find_lr_for_config_sweeps_the_lrs_asked_for_and_repeats_itself(tmp_path):
    data = write_shape_dataset(tmp_path / "shapes", per_class=4, size=(32, 32),
                               layout="train_val", val_per_class=1)
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                         finetune="full", crop_mode="standard", resize_size=28, crop_size=28,
                         batch_size=4, workers=0, device="cpu", seed=3,
                         cache_dir=str(tmp_path / "cache"), output_dir=str(tmp_path / "runs"))
    seen: list[int] = []
    first = find_lr_for_config(config, steps=3, start_lr=1e-4, end_lr=1e-2,
                               on_step=lambda step, *_: seen.append(step))
    again = find_lr_for_config(config, steps=3, start_lr=1e-4, end_lr=1e-2)
    assert first.lrs == pytest.approx([1e-4, 1e-3, 1e-2], rel=1e-12) and seen == [0, 1, 2]
    assert first.losses == again.losses  # the config's seed: the same batches and weights
    assert all(math.isfinite(loss) and loss > 0 for loss in first.losses)
    control = RunControl()
    control.request_cancel()
    cancelled = find_lr_for_config(config, steps=3, control=control)
    assert cancelled.lrs == [] and cancelled.stopped_early is True


def test_find_lr_for_config_weighs_the_loss_as_the_run_does(tmp_path):
    data = write_shape_dataset(tmp_path / "shapes", per_class=[6, 2, 2, 2], size=(32, 32),
                               layout="train_val", val_per_class=1)
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                         finetune="full", crop_mode="standard", resize_size=28, crop_size=28,
                         batch_size=12, workers=0, device="cpu", seed=3,
                         cache_dir=str(tmp_path / "cache"), output_dir=str(tmp_path / "runs"))
    plain = find_lr_for_config(config, steps=2, start_lr=1e-4, end_lr=1e-3)
    weighted = find_lr_for_config(config.replace(imbalance="weighted_loss"), steps=2,
                                  start_lr=1e-4, end_lr=1e-3)
    # The same twelve images and weights: only the class weights change the first loss.
    assert weighted.losses[0] != pytest.approx(plain.losses[0], rel=1e-3)
