"""Known answers of the throttling diagnosis: which stretch of the run counts as the fast one,
the thresholds at their edges, every field of each verdict and the whole sentence a user reads."""

from __future__ import annotations

from workbench.core.devices.throttle_detector import (
    NOT_JUDGED,
    ThrottleVerdict,
    ThrottleWatch,
    ThroughputSample,
    diagnose_throttling,
)

POWER_CAP, THERMAL, HW_THERMAL = 0x4, 0x20, 0x40
WARMUP = [ThroughputSample(t, 50.0) for t in range(3)]  # the three samples left out


def _samples(speeds, reasons=None, watts=None, celsius=None, battery=None):
    """One sample a second after the warm-up; ``reasons`` per sample (0 where not given)."""
    reasons = reasons or [0] * len(speeds)
    return WARMUP + [ThroughputSample(3.0 + i, speed, reason, watts, celsius, battery)
                     for i, (speed, reason) in enumerate(zip(speeds, reasons, strict=True))]


def test_the_fast_stretch_is_a_whole_window_counted_from_the_warm_ups_end():
    # stretches of ten: [100 x5, 500 x5] and [500 x5, 100 x5], each median 300; the five
    # 500s across their border are no stretch
    speeds = [100.0] * 5 + [500.0] * 10 + [100.0] * 5 + [200.0] * 10
    assert diagnose_throttling(_samples(speeds)) == ThrottleVerdict(
        False, "slower, but not because of the GPU's clocks", (), 300.0, 200.0)


def test_a_later_stretch_is_found_whole_and_a_partial_one_is_not_a_stretch():
    rising = [400.0 + 10 * i for i in range(10)]  # median 445
    speeds = [200.0] * 10 + rising + [300.0] * 10
    assert diagnose_throttling(_samples(speeds)).fast_images_per_second == 445.0
    # 19 earlier samples: one stretch of ten; the nine fast ones after it are too few
    speeds = [300.0] * 10 + [900.0] * 9 + [280.0] * 10
    assert diagnose_throttling(_samples(speeds)) == ThrottleVerdict(
        False, "no slowdown", (), 300.0, 280.0)


def test_exactly_fifteen_percent_slower_is_no_slowdown():
    speeds = [200.0] * 10 + [170.0] * 10  # 0.85 x 200 = 170.0 exactly
    reasons = [0] * 10 + [POWER_CAP] * 10
    assert diagnose_throttling(_samples(speeds, reasons)) == ThrottleVerdict(
        False, "no slowdown", (), 200.0, 170.0)


def test_a_card_of_one_image_a_second_can_be_throttled():
    speeds = [1.0] * 10 + [0.5] * 10
    reasons = [0] * 10 + [THERMAL] * 10
    verdict = diagnose_throttling(_samples(speeds, reasons))
    assert verdict.throttled and verdict.causes == ("thermal slowdown",)
    assert (verdict.fast_images_per_second, verdict.recent_images_per_second) == (1.0, 0.5)
    assert verdict.sentence.startswith("Throughput fell from 1 to 0.5 images/s (50% slower) ")


def test_a_reason_a_quarter_more_common_exactly_counts():
    # windows of four: the power cap in 2 of 4 fast samples and in 3 of 4 recent ones
    speeds = [400.0] * 4 + [300.0] * 4
    reasons = [POWER_CAP, POWER_CAP, 0, 0, POWER_CAP, POWER_CAP, POWER_CAP, 0]
    verdict = diagnose_throttling(_samples(speeds, reasons), window=4)
    assert verdict.throttled and verdict.causes == ("power cap",)


def test_the_whole_sentence_with_two_causes_and_no_power_or_temperature():
    speeds = [1600.0] * 10 + [400.0] * 10
    reasons = [0] * 10 + [THERMAL | HW_THERMAL] * 10
    verdict = diagnose_throttling(_samples(speeds, reasons))
    assert verdict.sentence == (
        "Throughput fell from 1,600 to 400 images/s (75% slower) because the GPU is "
        "throttled: hardware thermal slowdown, thermal slowdown; cool the machine (airflow, a "
        "laptop stand) or check its power settings.")


def test_the_battery_sentence_with_power_and_temperature():
    samples = _samples([400.0] * 10) + [
        ThroughputSample(13.0 + i, 250.0, POWER_CAP, 20.0 + i, 60.0 + i, True)
        for i in range(10)]
    verdict = diagnose_throttling(samples)
    assert verdict.sentence == (
        "Throughput fell from 400 to 250 images/s (38% slower) because the GPU is throttled: "
        "power cap, running on battery at 69 \u00b0C, 24 W; plug the laptop in.")


def test_the_watch_keeps_one_sample_a_second_and_the_last_600_by_default():
    watch = ThrottleWatch()
    for t in range(601):
        watch.add(ThroughputSample(float(t), 300.0))
    assert len(watch.samples) == 600 and watch.samples[0].time_s == 1.0
    assert watch.verdict == ThrottleVerdict(False, "no slowdown", (), 300.0, 300.0)
    watch.clear()
    assert len(watch.samples) == 0 and watch.verdict is NOT_JUDGED
    assert watch.add(ThroughputSample(700.0, 300.0)) is None
