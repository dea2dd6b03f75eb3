"""Plain-data events the engine reports through, and the callback protocol that receives them.

Events are frozen dataclasses of numbers and strings; tensors never cross into them, so they can
be handed to another thread (the GUI) or written as JSON lines (the run folder) as they are.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunStart:
    """The run is about to train: what it trains on and where."""

    run_dir: str
    device: str
    device_name: str
    memory_total: int | None
    amp: bool
    class_names: tuple[str, ...]
    train_samples: int
    val_samples: int
    epochs: int
    start_epoch: int
    steps_per_epoch: int
    crops_per_sample: int
    feature_cache: bool
    dataset_summary: str
    precision: str = "float32"  # e.g. 'mixed bfloat16'; see workbench.core.training.precision
    images_on_device: bool = False  # the images stay on the device; no loader processes


@dataclass(frozen=True)
class StepStats:
    """One optimisation step. Memory figures are bytes; None where the device has no such figure."""

    epoch: int
    step: int
    steps_in_epoch: int
    global_step: int
    loss: float
    loss_smoothed: float
    accuracy: float
    accuracy_smoothed: float
    lr: float
    images_per_second: float
    data_wait_s: float
    compute_s: float
    memory_allocated: int | None
    memory_reserved: int | None
    memory_peak: int | None
    memory_total: int | None
    process_rss: int | None
    gpu_utilization: float | None = None
    gpu_temperature: float | None = None
    gpu_power_w: float | None = None
    # NVML's clock-throttle reason bits; whether a laptop runs on its battery.
    gpu_throttle_reasons: int | None = None
    on_battery: bool | None = None
    # Images in this step's batch (0 in logs written before it was recorded).
    images: int = 0

    @property
    def data_wait_fraction(self) -> float:
        total = self.data_wait_s + self.compute_s
        return self.data_wait_s / total if total > 0 else 0.0


@dataclass(frozen=True)
class EpochEnd:
    """Epoch averages over the whole epoch (not smoothed), validation results and the checkpoint."""

    epoch: int
    epochs: int
    train_loss: float
    train_accuracy: float
    val_loss: float
    val_accuracy: float
    per_class_accuracy: tuple[float, ...]
    confusion: tuple[tuple[int, ...], ...]
    lr: float
    epoch_seconds: float
    images_per_second: float
    is_best: bool
    best_epoch: int
    best_val_accuracy: float
    checkpoint_path: str


@dataclass(frozen=True)
class Message:
    """Something the user should read: level is 'info', 'warning' or 'error'."""

    level: str
    text: str


@dataclass(frozen=True)
class RunEnd:
    """The run is over: status is 'completed', 'cancelled' or 'failed'."""

    status: str
    epochs_completed: int
    best_epoch: int
    best_val_accuracy: float
    run_dir: str
    best_model_path: str
    last_checkpoint_path: str
    seconds: float
    error: str = ""
    # After running out of device memory: a batch size that may fit (half), 0 otherwise.
    retry_batch_size: int = 0


@dataclass(frozen=True)
class Progress:
    """Slow work before the first step (downloading weights): ``done`` of ``total`` bytes.

    Reported when the whole percent changes; not written to metrics.jsonl.
    """

    task: str
    done: int
    total: int | None  # None when the size is not known

    @property
    def fraction(self) -> float | None:
        """Share done in [0, 1]; None when the total is unknown."""
        if not self.total:
            return None
        return min(1.0, self.done / self.total)

    def describe(self) -> str:
        """'Downloading ImageNet weights: 12.3 of 44.7 MB (27%)'."""
        done = f"{self.done / 1e6:.1f}"
        if self.fraction is None:
            return f"{self.task}: {done} MB"
        return f"{self.task}: {done} of {self.total / 1e6:.1f} MB ({100 * self.fraction:.0f}%)"


def event_to_dict(event: Any) -> dict[str, Any]:
    """A JSON-ready dict with the event's kind under 'event'."""
    data = dataclasses.asdict(event)
    data["event"] = type(event).__name__
    return data


Event = RunStart | StepStats | EpochEnd | Message | RunEnd
EVENT_TYPES: dict[str, type] = {kind.__name__: kind for kind in Event.__args__}


def event_from_dict(data: dict[str, Any]) -> Event:
    """The event ``event_to_dict`` made ``data`` from, after a JSON round trip.

    JSON turns tuples into lists and the run folder writes NaN as null; both are undone here.
    Fields this version does not know are ignored, so newer run folders still read.

    Raises:
        ValueError: ``data`` is not an event: unknown kind, a missing field or a wrong type
            (the message names the field).
    """
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    kind = EVENT_TYPES.get(str(data.get("event")))
    if kind is None:
        raise ValueError(f"unknown event kind {data.get('event')!r}")
    values = {}
    for field in dataclasses.fields(kind):
        if field.name not in data:
            if field.default is dataclasses.MISSING:
                raise ValueError(f"{kind.__name__}: field '{field.name}' is missing")
            continue
        values[field.name] = _field_value(kind.__name__, field.name, str(field.type),
                                          data[field.name])
    return kind(**values)


def _field_value(kind: str, name: str, annotation: str, value: Any) -> Any:
    """``value`` as the field's annotation (the module's annotations are strings)."""
    optional = annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    if value is None and (optional or base == "float"):
        return None if optional else math.nan
    try:
        return _as_type(base, value)
    except (TypeError, ValueError):
        raise ValueError(f"{kind}: field '{name}' should be {base}, got {value!r}") from None


def _as_type(annotation: str, value: Any) -> Any:
    if annotation.startswith("tuple["):
        inner = annotation[len("tuple["):-len(", ...]")]
        if not isinstance(value, list):
            raise TypeError(annotation)
        if inner == "float":
            return tuple(math.nan if item is None else _as_type(inner, item) for item in value)
        return tuple(_as_type(inner, item) for item in value)
    scalar = {"float": (int, float), "int": (int,), "str": (str,), "bool": (bool,)}[annotation]
    if not isinstance(value, scalar) or (isinstance(value, bool) and annotation != "bool"):
        raise TypeError(annotation)
    return float(value) if annotation == "float" else value


class Callback:
    """Receives engine events. Every hook is a no-op; override the ones you need."""

    def on_run_start(self, event: RunStart) -> None:
        """Called once, after data and model are ready, before the first step."""

    def on_step(self, event: StepStats) -> None:
        """Called after every optimisation step."""

    def on_epoch_end(self, event: EpochEnd) -> None:
        """Called after validation and the checkpoint of each epoch."""

    def on_message(self, event: Message) -> None:
        """Called for information, warnings and errors meant for the user."""

    def on_progress(self, event: Progress) -> None:
        """Called during slow work before the first step, e.g. a weights download."""

    def on_run_end(self, event: RunEnd) -> None:
        """Called exactly once when the run ends, however it ends."""


class CallbackList(Callback):
    """Dispatches every hook to several callbacks, in order."""

    def __init__(self, callbacks: list[Callback] | None = None) -> None:
        self.callbacks: list[Callback] = [c for c in (callbacks or []) if c is not None]

    def on_run_start(self, event: RunStart) -> None:
        for c in self.callbacks:
            c.on_run_start(event)

    def on_step(self, event: StepStats) -> None:
        for c in self.callbacks:
            c.on_step(event)

    def on_epoch_end(self, event: EpochEnd) -> None:
        for c in self.callbacks:
            c.on_epoch_end(event)

    def on_message(self, event: Message) -> None:
        for c in self.callbacks:
            c.on_message(event)

    def on_progress(self, event: Progress) -> None:
        for c in self.callbacks:
            c.on_progress(event)

    def on_run_end(self, event: RunEnd) -> None:
        for c in self.callbacks:
            c.on_run_end(event)
