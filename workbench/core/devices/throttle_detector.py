"""Whether a run's throughput dropped because the GPU holds its clocks down.

A laptop GPU that heats up, hits its power limit or runs on battery slows down minutes into a
run, and the user sees only fewer images per second. NVML says why the clocks are held down (its
"clock throttle reasons", a bit mask); :func:`diagnose_throttling` sets those reasons, the power,
the temperature and the battery against images/s. It is a pure function of recorded samples, so
the same series gives the same verdict in the engine's log, the status panel and the tests.

A reason counts only when it became more common since the fast stretch of the run: a desktop
card may sit at its power cap from the first step at full speed, and that is no slowdown.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

# NVML's nvmlClocksThrottleReason* bits that slow a card down, in words.
SLOWDOWN_REASONS = {
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x20: "thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "power brake (power supply)",
}
BATTERY = "running on battery"
DROP = 0.15
"""Throughput this far (15%) below the fast stretch counts as a drop."""
WINDOW = 10
"""Samples per stretch compared (the engine records one a second: ten seconds)."""
WARMUP = 3
"""First samples left out: cuDNN's autotuning and the allocator's growth."""
NEWLY_COMMON = 0.25
"""How much more often a reason must appear in the slow stretch than in the fast one."""


@dataclass(frozen=True)
class ThroughputSample:
    """Images/s with the GPU's state at the same moment (None where not reported)."""

    time_s: float
    images_per_second: float
    throttle_reasons: int | None = None
    power_w: float | None = None
    temperature: float | None = None
    on_battery: bool | None = None

    def causes(self) -> set[str]:
        """The slowdown reasons of this sample, battery included."""
        found = {name for bit, name in SLOWDOWN_REASONS.items()
                 if self.throttle_reasons is not None and self.throttle_reasons & bit}
        if self.on_battery:
            found.add(BATTERY)
        return found


@dataclass(frozen=True)
class ThrottleVerdict:
    """``throttled``: throughput fell while the card was newly held down; ``sentence`` says so."""

    throttled: bool
    sentence: str
    causes: tuple[str, ...] = ()
    fast_images_per_second: float = 0.0
    recent_images_per_second: float = 0.0


NOT_JUDGED = ThrottleVerdict(False, "not judged yet (needs about 20 s of training)")


def _share(samples: Sequence[ThroughputSample], cause: str) -> float:
    return sum(cause in s.causes() for s in samples) / len(samples)


def _median(samples: Sequence[ThroughputSample]) -> float:
    return statistics.median(s.images_per_second for s in samples)


def diagnose_throttling(samples: Sequence[ThroughputSample], window: int = WINDOW,
                        drop: float = DROP, warmup: int = WARMUP) -> ThrottleVerdict:
    """Compare the latest ``window`` samples with the fastest earlier stretch of as many.

    Returns:
        ``NOT_JUDGED`` with fewer than ``warmup + 2 * window`` samples; otherwise throttled
        when the latest median images/s is more than ``drop`` below the fastest stretch's and
        some slowdown reason (or the battery) became more common meanwhile.
    """
    usable = list(samples)[warmup:]
    if len(usable) < 2 * window:
        return NOT_JUDGED
    recent = usable[-window:]
    earlier = usable[:-window]
    stretches = [earlier[i:i + window] for i in range(0, len(earlier) - window + 1, window)]
    fast = max(stretches, key=_median)
    fast_speed, recent_speed = _median(fast), _median(recent)
    if fast_speed <= 0 or recent_speed >= (1 - drop) * fast_speed:
        return ThrottleVerdict(False, "no slowdown", (), fast_speed, recent_speed)
    causes = tuple(sorted(
        cause for cause in {c for s in recent for c in s.causes()}
        if _share(recent, cause) >= 0.5 and _share(recent, cause) - _share(fast, cause)
        >= NEWLY_COMMON))
    if not causes:
        return ThrottleVerdict(False, "slower, but not because of the GPU's clocks", (),
                               fast_speed, recent_speed)
    return ThrottleVerdict(True, _sentence(causes, fast_speed, recent_speed, recent), causes,
                           fast_speed, recent_speed)


def _sentence(causes: tuple[str, ...], fast: float, recent: float,
              samples: Sequence[ThroughputSample]) -> str:
    state = []
    temperatures = [s.temperature for s in samples if s.temperature is not None]
    powers = [s.power_w for s in samples if s.power_w is not None]
    if temperatures:
        state.append(f"{max(temperatures):.0f} \u00b0C")
    if powers:
        state.append(f"{statistics.median(powers):.0f} W")
    at = f" at {', '.join(state)}" if state else ""
    advice = ("plug the laptop in" if BATTERY in causes
              else "cool the machine (airflow, a laptop stand) or check its power settings")
    return (f"Throughput fell from {_speed(fast)} to {_speed(recent)} images/s "
            f"({100 * (1 - recent / fast):.0f}% slower) because the GPU is throttled: "
            f"{', '.join(causes)}{at}; {advice}.")


def _speed(images_per_second: float) -> str:
    """A speed as a sentence shows it: whole numbers from 10 up, two digits below (a large
    model on a small card: "from 1 to 0.5", never "from 1 to 0")."""
    if images_per_second >= 10:
        return f"{images_per_second:,.0f}"
    return f"{images_per_second:.2g}"


class ThrottleWatch:
    """Collects one sample per ``interval_s`` during a run and says when the verdict changes.

    Args:
        interval_s: the least time between two kept samples (NVML is read once a second).
        max_samples: the history kept; the fastest stretch is looked for within it.
    """

    def __init__(self, interval_s: float = 1.0, max_samples: int = 600) -> None:
        self.interval_s = interval_s
        self.samples: deque[ThroughputSample] = deque(maxlen=max_samples)
        self.verdict = NOT_JUDGED

    def add(self, sample: ThroughputSample) -> ThrottleVerdict | None:
        """Keep ``sample`` if its interval has passed; the new verdict when throttling starts
        or ends, else None."""
        if self.samples and sample.time_s - self.samples[-1].time_s < self.interval_s:
            return None
        self.samples.append(sample)
        verdict = diagnose_throttling(self.samples)
        changed = verdict.throttled != self.verdict.throttled
        self.verdict = verdict
        return verdict if changed else None

    def clear(self) -> None:
        self.samples.clear()
        self.verdict = NOT_JUDGED
