"""Throughput drops set against NVML's clock-throttle reasons, over recorded sample series."""

from __future__ import annotations

from workbench.core.devices.throttle_detector import (
    NOT_JUDGED,
    ThrottleWatch,
    ThroughputSample,
    diagnose_throttling,
)

POWER_CAP, THERMAL, HW_THERMAL = 0x4, 0x20, 0x40


def _series(phases):
    """[(count, images/s, reasons, watts, °C, on battery)] -> one sample a second."""
    samples, t = [], 0.0
    for count, speed, reasons, watts, celsius, battery in phases:
        for _ in range(count):
            samples.append(ThroughputSample(t, speed, reasons, watts, celsius, battery))
            t += 1.0
    return samples


def test_a_laptop_that_heats_up_and_slows_down_is_said_to_throttle():
    # A GTX 1650 laptop: 300 img/s cool; at 87 °C NVML reports thermal slowdown, 210 img/s.
    samples = _series([(23, 300.0, 0x0, 48.0, 70.0, False),
                       (12, 210.0, THERMAL | HW_THERMAL, 35.0, 87.0, False)])
    verdict = diagnose_throttling(samples)
    assert verdict.throttled
    assert verdict.causes == ("hardware thermal slowdown", "thermal slowdown")
    assert "from 300 to 210 images/s (30% slower)" in verdict.sentence
    assert "87 \u00b0C" in verdict.sentence


def test_running_on_battery_is_a_cause_with_its_own_advice():
    samples = _series([(15, 400.0, 0x0, 60.0, 65.0, False),
                       (12, 250.0, POWER_CAP, 25.0, 66.0, True)])
    verdict = diagnose_throttling(samples)
    assert verdict.throttled
    assert "running on battery" in verdict.causes and "power cap" in verdict.causes
    assert "plug the laptop in" in verdict.sentence


def test_a_power_cap_present_from_the_start_at_full_speed_is_no_slowdown():
    samples = _series([(13, 3400.0, POWER_CAP, 350.0, 70.0, None),
                       (12, 3350.0, POWER_CAP, 350.0, 72.0, None)])
    assert not diagnose_throttling(samples).throttled


def test_a_drop_without_throttle_reasons_is_not_blamed_on_the_gpu():
    # The input pipeline starved the GPU: slower, but the clocks were never held down.
    samples = _series([(13, 300.0, POWER_CAP, 48.0, 70.0, False),
                       (12, 120.0, POWER_CAP, 20.0, 60.0, False)])
    verdict = diagnose_throttling(samples)
    assert not verdict.throttled and "not because of the GPU" in verdict.sentence


def test_too_few_samples_are_not_judged():
    samples = _series([(15, 300.0, THERMAL, 48.0, 90.0, False)])
    assert diagnose_throttling(samples) is NOT_JUDGED


def test_the_watch_reports_only_when_throttling_starts_and_ends():
    watch = ThrottleWatch(interval_s=1.0)
    series = _series([(23, 300.0, 0x0, 48.0, 70.0, False),
                      (12, 200.0, THERMAL, 35.0, 88.0, False),
                      (25, 300.0, 0x0, 48.0, 70.0, False)])
    changes = []
    for sample in series:
        verdict = watch.add(sample)
        # A second sample within the same second is not kept.
        assert watch.add(ThroughputSample(sample.time_s + 0.5, 1.0)) is None
        if verdict is not None:
            changes.append((sample.time_s, verdict.throttled))
    assert [throttled for _, throttled in changes] == [True, False]
    assert 23 < changes[0][0] < 35 < changes[1][0]
