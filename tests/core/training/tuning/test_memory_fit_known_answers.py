"""Known answers of the memory fit verdict: the exact sentence beside Start and the figures kept
for each case, at the edges of 'fits', 'tight' and 'does not fit'."""

from __future__ import annotations

from workbench.core.training.tuning.memory_fit import (
    HEADROOM,
    MemoryFit,
    free_for_run,
    judge_memory_fit,
)

GIB = 2**30


def test_the_cpu_verdict_is_the_whole_sentence_and_keeps_no_figures():
    assert judge_memory_fit("cpu", 64, 5 * GIB, 1 * GIB) == MemoryFit(
        "cpu", 64, False, True,
        "Memory is not limited on the CPU (it swaps before it runs out), so the fit of the "
        "batch is not checked.")


def test_a_dry_step_out_of_memory_says_what_to_change_and_keeps_the_free_memory():
    fit = judge_memory_fit("cuda:0", 256, None, 3 * GIB)
    assert fit == MemoryFit(
        "cuda:0", 256, True, False,
        "Batch 256 does not fit on cuda:0: a dry step ran out of memory. Lower batch_size "
        "(Find largest batch), turn on amp or choose finetune last_layer.", None, 3 * GIB)
    assert fit.warn and not fit.tight


def test_without_nvml_the_peak_is_kept_and_nothing_is_warned():
    fit = judge_memory_fit("cuda:0", 32, GIB, None)
    assert fit == MemoryFit(
        "cuda:0", 32, True, None,
        "Batch 32 ran in a dry step (peak 1.00 GiB); NVML does not report the free memory, so "
        "the margin is unknown.", GIB, None)
    assert not fit.warn


def test_a_peak_over_the_free_memory_is_the_whole_sentence():
    fit = judge_memory_fit("cuda:1", 128, 3 * GIB, 2 * GIB)
    assert fit == MemoryFit(
        "cuda:1", 128, True, False,
        "Batch 128 will not fit on cuda:1: peak 3.00 GiB of 2.00 GiB free. Lower batch_size or "
        "close what else uses the GPU.", 3 * GIB, 2 * GIB)


def test_a_peak_equal_to_the_free_memory_fits_but_tight():
    fit = judge_memory_fit("cuda:0", 96, 2 * GIB, 2 * GIB)
    assert fit == MemoryFit(
        "cuda:0", 96, True, True,
        "Batch 96 fits on cuda:0, but tight: peak 2.00 GiB of 2.00 GiB free; a long run may "
        "still run out. A smaller batch is safer.", 2 * GIB, 2 * GIB, tight=True)
    assert fit.warn


def test_a_peak_of_exactly_the_headroom_share_fits_without_a_warning():
    assert HEADROOM == 0.9
    # 0.9 x 1000 is 900.0 exactly: the edge itself is not tight, one byte more is.
    edge = judge_memory_fit("cuda:0", 8, 900, 1000)
    assert (edge.fits, edge.tight, edge.warn) == (True, False, False)
    assert edge == MemoryFit("cuda:0", 8, True, True,
                             "Batch 8 fits on cuda:0: peak 0.0 MiB of 0.00 GiB free.", 900, 1000)
    over = judge_memory_fit("cuda:0", 8, 901, 1000)
    assert (over.fits, over.tight, over.warn) == (True, True, True)
    # A headroom given by the caller is the one used.
    assert judge_memory_fit("cuda:0", 8, 901, 1000, headroom=0.95).tight is False


def test_the_dry_step_peak_is_the_probes_own_figure_for_the_configs_batch():
    from workbench.core.runs.config import TrainConfig
    from workbench.core.training.tuning.batch_size_finder import TrainingStepProbe
    from workbench.core.training.tuning.memory_fit import _dry_step_peak

    config = TrainConfig(model="small_cnn", weights="none", finetune="full",
                         crop_mode="standard", resize_size=20, crop_size=16, device="cpu",
                         amp=False, batch_size=3)
    # On the CPU the probe's figure is what two steps keep for backward: the same each time.
    expected = TrainingStepProbe(config, 4, "cpu")(3)
    assert expected > 0
    assert _dry_step_peak(config, 4, "cpu") == expected
    assert _dry_step_peak(config.replace(batch_size=6), 4, "cpu") > expected


def test_on_the_cpu_the_verdict_names_the_configs_batch():
    from workbench.core.runs.config import TrainConfig
    from workbench.core.training.tuning.memory_fit import check_memory_fit

    fit = check_memory_fit(TrainConfig(device="cpu", model="small_cnn", batch_size=4096), 10)
    assert (fit.device, fit.batch_size, fit.limited, fit.fits) == ("cpu", 4096, False, True)


def test_the_free_memory_of_a_run_adds_what_the_allocator_holds_unused():
    # 6 GiB free on the card, and this process's allocator reserved 1.5 GiB of which it uses
    # 0.5 GiB: the run can use 7 GiB. Without NVML's figure nothing is known.
    gib = 2**30
    assert free_for_run(6 * gib, 3 * gib // 2, gib // 2) == 7 * gib
    assert free_for_run(0, 0, 0) == 0
    assert free_for_run(None, 3 * gib // 2, gib // 2) is None
