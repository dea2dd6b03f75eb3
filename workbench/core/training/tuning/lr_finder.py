"""Learning-rate range test (Smith 2015, as fastai's ``lr_find`` and Lightning's
``Tuner.lr_find``): a few steps with the lr growing exponentially, the loss at each, and a
suggested lr where the loss falls fastest.

The model's weights and the optimiser's state (momentum buffers, lr) are saved before and put
back after, so the test changes nothing a later run starts from. The steps run in the run's
own train mode (``set_train_mode``): with last-layer fine-tuning the frozen backbone's
BatchNorm keeps its running statistics, as in training, so the sweep tries the network the
run will train. With 'head_then_full' the sweep tries the network as it trains after the head
epochs: every layer learning, the backbone at ``backbone_lr_factor`` times the swept lr.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from workbench.core.models.building import set_train_mode
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl

Batch = tuple[torch.Tensor, torch.Tensor]
LossFunction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

DEFAULT_START_LR = 1e-7
DEFAULT_END_LR = 10.0
DEFAULT_STEPS = 100
# The test stops once the smoothed loss exceeds this many times its best value.
DIVERGENCE_FACTOR = 4.0
SMOOTHING = 0.98


@dataclass(frozen=True)
class LrFinderResult:
    """The lr of each step, its smoothed loss, and the suggested lr (None without a fall)."""

    lrs: list[float]
    losses: list[float]
    suggestion: float | None
    stopped_early: bool

    def describe(self) -> str:
        """One sentence for a terminal or a status line."""
        if self.suggestion is None:
            return (f"no lr suggested: the loss did not fall over {len(self.lrs)} steps "
                    f"from {self.lrs[0]:.1e} to {self.lrs[-1]:.1e}" if self.lrs else
                    "no lr suggested: no step ran")
        return (f"suggested lr {self.suggestion:.2e} (steepest fall of the loss over "
                f"{len(self.lrs)} steps from {self.lrs[0]:.1e} to {self.lrs[-1]:.1e})")


def lr_range_test(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batches: Iterable[Batch],
    loss_function: LossFunction,
    start_lr: float = DEFAULT_START_LR,
    end_lr: float = DEFAULT_END_LR,
    steps: int = DEFAULT_STEPS,
    control: RunControl | None = None,
    on_step: Callable[[int, float, float], None] | None = None,
    finetune: str = "full",
) -> LrFinderResult:
    """Train ``steps`` batches with the lr growing from ``start_lr`` to ``end_lr``.

    Args:
        model: the model, on the device the batches are on.
        optimizer: its optimiser; every parameter group gets the step's lr times its own
            share of the largest group's lr (1 for one group; the backbone's factor with
            'head_then_full'), and the swept lr is the largest group's.
        batches: ``(inputs, labels)`` ready for the model; cycled when shorter than ``steps``.
        loss_function: ``(outputs, labels) -> scalar loss``.
        start_lr, end_lr, steps: the exponential schedule.
        control: its cancel request ends the test early (the state is still restored).
        on_step: called with (step, lr, smoothed loss) after each step.
        finetune: the run's fine-tune mode, which decides the train mode of each layer.

    Returns:
        The lrs and smoothed losses up to the divergence, and the suggestion.
    """
    if not 0 < start_lr < end_lr:
        raise ValueError(f"lr range: need 0 < start < end (got {start_lr} to {end_lr})")
    if steps < 2:
        raise ValueError(f"lr range: need at least 2 steps (got {steps})")
    saved_model = copy.deepcopy(model.state_dict())
    saved_optimizer = copy.deepcopy(optimizer.state_dict())
    was_training = model.training
    top = max(group["lr"] for group in optimizer.param_groups)
    shares = [group["lr"] / top if top > 0 else 1.0 for group in optimizer.param_groups]
    lrs: list[float] = []
    losses: list[float] = []
    stopped_early = False
    try:
        set_train_mode(model, finetune)
        average, best = 0.0, math.inf
        source = _cycled(batches)
        for step in range(steps):
            if control is not None and control.cancel_requested:
                stopped_early = True
                break
            lr = start_lr * (end_lr / start_lr) ** (step / (steps - 1))
            for group, share in zip(optimizer.param_groups, shares, strict=True):
                group["lr"] = lr * share
            inputs, labels = next(source)
            loss = loss_function(model(inputs), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            value = float(loss.detach())
            average = SMOOTHING * average + (1 - SMOOTHING) * value
            smoothed = average / (1 - SMOOTHING ** (step + 1))
            lrs.append(lr)
            losses.append(smoothed)
            if on_step is not None:
                on_step(step, lr, smoothed)
            best = min(best, smoothed)
            if not math.isfinite(smoothed) or smoothed > DIVERGENCE_FACTOR * best:
                stopped_early = True
                break
    finally:
        model.load_state_dict(saved_model)
        optimizer.load_state_dict(saved_optimizer)
        model.train(was_training)
    return LrFinderResult(lrs, losses, suggest_lr(lrs, losses), stopped_early)


def suggest_lr(lrs: list[float], losses: list[float], skip_start: int = 5,
               skip_end: int = 3) -> float | None:
    """The lr where the smoothed loss falls fastest per decade of lr (Lightning's rule), looked
    for only before the loss's lowest point; None when it never falls.

    The slope at each point is taken across a window of a tenth of the points on either side,
    not between neighbours: at the low end a tiny, noisy fall between two steps would otherwise
    win (seen on a 64-image folder, which suggested 3e-7). The first and last few points are
    ignored, as Lightning does.
    """
    points = [(math.log10(lr), loss) for lr, loss in zip(lrs, losses, strict=True)
              if math.isfinite(loss)]
    points = points[skip_start:len(points) - skip_end] if len(points) > skip_start + skip_end \
        else points
    if len(points) < 3:
        return None
    lowest = min(range(len(points)), key=lambda index: points[index][1])
    falling = points[:lowest + 1]
    if len(falling) < 3:
        return None
    width = max(1, len(points) // 10)
    slopes: list[tuple[float, int]] = []
    for index in range(1, len(falling) - 1):
        before, after = max(0, index - width), min(len(falling) - 1, index + width)
        slope = (falling[after][1] - falling[before][1]) / (falling[after][0] - falling[before][0])
        slopes.append((slope, index))
    steepest, index = min(slopes)
    if steepest >= 0:
        return None
    return 10 ** falling[index][0]


def find_lr_for_config(
    config: TrainConfig,
    steps: int = DEFAULT_STEPS,
    start_lr: float = DEFAULT_START_LR,
    end_lr: float = DEFAULT_END_LR,
    control: RunControl | None = None,
    on_step: Callable[[int, float, float], None] | None = None,
) -> LrFinderResult:
    """The range test on ``config``'s data, model and optimiser, as a run would build them.

    Raises:
        DatasetError, WeightsError, DeviceError: as a training run would.
    """
    from workbench.core.data.batch_preparation import BatchPreparer
    from workbench.core.data.data_pipeline import build_data_pipeline
    from workbench.core.data.multicrop import multicrop_loss
    from workbench.core.devices.selection import resolve_device
    from workbench.core.models.building import build_model
    from workbench.core.training.optimisers import build_optimizer, optimiser_params
    from workbench.core.training.session_setup import scan_for_training, seed_everything

    device = resolve_device(config.device)
    seed_everything(config.seed, config.deterministic, device)
    scan = scan_for_training(config)
    pipeline = build_data_pipeline(config.replace(workers=0), scan, device)
    model = build_model(config, len(scan.class_names)).to(device)
    optimizer = build_optimizer(config, optimiser_params(model, config))
    preparer = BatchPreparer(pipeline.mean, pipeline.std, device, channels_last=False)
    crops = pipeline.crops_per_sample

    def prepared() -> Iterator[Batch]:
        for images, labels in pipeline.train_loader:
            yield preparer(images, labels)

    def loss_function(outputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return multicrop_loss(outputs, labels, crops, config.crop_strategy,
                              pipeline.class_weights)[0]

    return lr_range_test(model, optimizer, _Restartable(prepared), loss_function, start_lr,
                         end_lr, steps, control, on_step, config.finetune)


class _Restartable:
    """An iterable that calls ``make`` for each pass (a loader's epoch)."""

    def __init__(self, make: Callable[[], Iterator[Any]]) -> None:
        self._make = make

    def __iter__(self) -> Iterator[Any]:
        return self._make()


def _cycled(batches: Iterable[Batch]) -> Iterator[Batch]:
    while True:
        empty = True
        for batch in batches:
            empty = False
            yield batch
        if empty:
            raise ValueError("lr range: no batches to train on")
