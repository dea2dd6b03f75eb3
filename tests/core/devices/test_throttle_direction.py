"""The throttle detector on scripted sample series: the sample at which throttling is first
reported, worked out by hand; the mirror series (speed rising, or the reasons going away) never
reported; and each threshold tried one step either side."""

from __future__ import annotations

import pytest

from workbench.core.devices.throttle_detector import (
    ThrottleWatch,
    ThroughputSample,
    diagnose_throttling,
)

POWER_CAP, THERMAL = 0x4, 0x20


def _samples(speeds: list[float], reasons: list[int]) -> list[ThroughputSample]:
    """One sample a second."""
    return [ThroughputSample(float(second), speed, reason, 40.0, 80.0, False)
            for second, (speed, reason) in enumerate(zip(speeds, reasons, strict=True))]


def _first_report(samples: list[ThroughputSample]) -> int | None:
    """The index of the sample at which the watch first says the GPU throttles."""
    watch = ThrottleWatch(interval_s=1.0)
    for index, sample in enumerate(samples):
        verdict = watch.add(sample)
        if verdict is not None and verdict.throttled:
            return index
    return None


def test_clocks_held_down_as_speed_falls_are_reported_at_a_known_sample() -> None:
    # 23 samples at 300 images/s, then 200 images/s with thermal slowdown from sample 23.
    # The first 3 are warm-up; a verdict needs 20 more (sample 22 on). The latest 10 are
    # compared with the first stretch of 10 (samples 3-12, 300). At sample 26 the latest 10
    # hold 4 slow ones: median 300, no drop. At sample 27 they hold 5: median (200 + 300) / 2
    # = 250 < 0.85 * 300 = 255, and thermal slowdown is in 5 of 10 (>= half), in none of the
    # fast stretch (0.5 more common >= 0.25): throttled, at sample 27.
    samples = _samples([300.0] * 23 + [200.0] * 12, [0] * 23 + [THERMAL] * 12)
    assert _first_report(samples) == 27
    verdict = diagnose_throttling(samples)
    assert verdict.throttled and verdict.causes == ("thermal slowdown",)
    assert (verdict.fast_images_per_second, verdict.recent_images_per_second) == (300, 200)


@pytest.mark.parametrize(("speeds", "reasons"), [
    # The same series backwards: slow and throttled first, then fast and free.
    ([200.0] * 23 + [300.0] * 12, [THERMAL] * 23 + [0] * 12),
    # Speed rising just as the power cap appears.
    ([200.0] * 23 + [300.0] * 12, [0] * 23 + [POWER_CAP] * 12),
    # Speed falling just as the thermal slowdown goes away.
    ([300.0] * 23 + [200.0] * 12, [THERMAL] * 23 + [0] * 12),
    # Flat speed, throttled all along.
    ([300.0] * 35, [THERMAL] * 35),
], ids=["reversed", "faster-while-capped", "slower-after-cooling", "flat-throttled"])
def test_mirror_series_are_never_reported(speeds, reasons) -> None:
    samples = _samples(speeds, reasons)
    assert _first_report(samples) is None
    assert not diagnose_throttling(samples).throttled


def _three_stretches(recent_speed: float, recent_reasons: list[int],
                     fast_reasons: list[int] | None = None) -> list[ThroughputSample]:
    """3 warm-up samples, a fast stretch of 10 at 300 images/s and the latest 10."""
    fast_reasons = fast_reasons or [0] * 10
    return _samples([300.0] * 13 + [recent_speed] * 10, [0] * 3 + fast_reasons + recent_reasons)


@pytest.mark.parametrize(("recent_speed", "throttled"), [(254.0, True), (256.0, False)])
def test_a_drop_counts_from_15_percent(recent_speed, throttled) -> None:
    # 0.85 * 300 = 255 images/s.
    verdict = diagnose_throttling(_three_stretches(recent_speed, [THERMAL] * 10))
    assert verdict.throttled is throttled
    assert verdict.sentence.startswith("Throughput fell from 300 to 254" if throttled
                                       else "no slowdown")


@pytest.mark.parametrize(("throttled_samples", "throttled"), [(5, True), (4, False)])
def test_a_reason_counts_when_it_holds_in_half_of_the_latest_samples(throttled_samples,
                                                                      throttled) -> None:
    reasons = [THERMAL] * throttled_samples + [0] * (10 - throttled_samples)
    verdict = diagnose_throttling(_three_stretches(200.0, reasons))
    assert verdict.throttled is throttled
    if not throttled:
        assert verdict.sentence == "slower, but not because of the GPU's clocks"


@pytest.mark.parametrize(("in_fast_stretch", "throttled"), [(2, True), (3, False)])
def test_a_reason_counts_when_it_became_a_quarter_more_common(in_fast_stretch,
                                                              throttled) -> None:
    # In 5 of the latest 10; in 2 (0.3 more common) or 3 (0.2 more) of the fast stretch.
    fast = [POWER_CAP] * in_fast_stretch + [0] * (10 - in_fast_stretch)
    recent = [POWER_CAP] * 5 + [0] * 5
    verdict = diagnose_throttling(_three_stretches(200.0, recent, fast))
    assert verdict.throttled is throttled
    assert verdict.causes == (("power cap",) if throttled else ())


def test_the_fastest_earlier_stretch_is_the_reference() -> None:
    # A run that sped up (the page cache warmed) before it throttled: 250, then 300, then 240
    # with thermal slowdown. 240 is 20% below the fastest stretch (300), only 4% below the
    # first one (250).
    samples = _samples([300.0] * 3 + [250.0] * 10 + [300.0] * 10 + [240.0] * 10,
                       [0] * 23 + [THERMAL] * 10)
    verdict = diagnose_throttling(samples)
    assert verdict.throttled
    assert verdict.sentence.startswith(
        "Throughput fell from 300 to 240 images/s (20% slower) because the GPU is throttled: "
        "thermal slowdown at 80 \u00b0C, 40 W;")
