"""The memory fit check: a run's peak against the free memory NVML reports, before Start."""

from __future__ import annotations

from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning.memory_fit import check_memory_fit, judge_memory_fit

GIB = 2**30


def test_on_the_cpu_memory_is_not_limited_and_nothing_runs():
    fit = check_memory_fit(TrainConfig(device="cpu", model="resnet18", batch_size=4096), 10)
    assert (fit.device, fit.limited, fit.fits, fit.warn) == ("cpu", False, True, False)
    assert fit.sentence.startswith("Memory is not limited on the CPU")
    assert fit.peak_bytes is None


def test_a_peak_well_under_the_free_memory_fits():
    # ResNet18, batch 64, AMP on a GTX 1650 (4 GiB, 3.6 GiB free with a desktop running).
    fit = judge_memory_fit("cuda:0", 64, int(2.1 * GIB), int(3.6 * GIB))
    assert fit.fits and not fit.warn
    assert fit.sentence == "Batch 64 fits on cuda:0: peak 2.10 GiB of 3.60 GiB free."


def test_a_peak_near_the_free_memory_is_tight_and_warned_about():
    fit = judge_memory_fit("cuda:0", 96, int(3.4 * GIB), int(3.6 * GIB))
    assert fit.fits and fit.tight and fit.warn
    assert "tight" in fit.sentence and "peak 3.40 GiB of 3.60 GiB free" in fit.sentence


def test_a_peak_over_the_free_memory_does_not_fit():
    # The probe measured 3.2 GiB alone, but a browser holds 1.5 GiB of the card.
    fit = judge_memory_fit("cuda:1", 128, int(3.2 * GIB), int(2.1 * GIB))
    assert fit.fits is False and fit.warn
    assert fit.sentence.startswith("Batch 128 will not fit on cuda:1: peak 3.20 GiB of 2.10")


def test_a_dry_step_out_of_memory_does_not_fit_and_without_nvml_the_margin_is_unknown():
    failed = judge_memory_fit("cuda:0", 256, None, int(3.6 * GIB))
    assert failed.fits is False and "a dry step ran out of memory" in failed.sentence
    unknown = judge_memory_fit("cuda:0", 32, int(1.0 * GIB), None)
    assert unknown.fits is None and not unknown.warn and "margin is unknown" in unknown.sentence
