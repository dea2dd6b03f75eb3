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


def test_on_a_card_the_check_asks_that_card_and_counts_the_allocators_reserve(monkeypatch):
    """The CUDA branch without a card: what the card would answer (the device torch resolves,
    NVML's free memory, the allocator's reserve) is given, as tests/core/devices/ gives NVML's
    answers; everything Workbench does with the answers runs."""
    from workbench.core.runs.config import TrainConfig
    from workbench.core.training.tuning import memory_fit

    gib = 2**30
    asked: list[tuple[str, object]] = []
    monkeypatch.setattr(memory_fit, "resolve_device", lambda device: "cuda:1")
    monkeypatch.setattr(memory_fit.torch, "zeros",
                        lambda *size, device=None: asked.append(("context", device)))
    monkeypatch.setattr(memory_fit.torch.cuda, "memory_reserved",
                        lambda device: asked.append(("reserved", device)) or 3 * gib // 2)
    monkeypatch.setattr(memory_fit.torch.cuda, "memory_allocated",
                        lambda device: asked.append(("allocated", device)) or gib // 2)
    monkeypatch.setattr(memory_fit, "nvml_free_memory",
                        lambda device: asked.append(("nvml", device)) or 6 * gib)
    dry_steps: list[tuple[int, int, str]] = []
    monkeypatch.setattr(memory_fit, "_dry_step_peak",
                        lambda config, classes, device:
                        dry_steps.append((config.batch_size, classes, device)) or 8 * gib)
    config = TrainConfig(device="cuda", model="small_cnn", batch_size=64)

    # A peak already measured at the config's batch: no dry step; 5 GiB of 6 + 1.5 - 0.5 free.
    fit = memory_fit.check_memory_fit(config, 10, measured_peak=5 * gib)
    assert fit == memory_fit.MemoryFit(
        "cuda:1", 64, True, True, "Batch 64 fits on cuda:1: peak 5.00 GiB of 7.00 GiB free.",
        5 * gib, 7 * gib)
    assert dry_steps == []
    assert sorted(asked) == sorted([("context", "cuda:1"), ("reserved", "cuda:1"),
                                    ("allocated", "cuda:1"), ("nvml", "cuda:1")])
    # No figure given: the dry step at the config's batch decides, 8 GiB of 7 will not fit.
    fit = memory_fit.check_memory_fit(config, 10)
    assert dry_steps == [(64, 10, "cuda:1")]  # the config's batch, its classes, the card
    assert (fit.fits, fit.peak_bytes, fit.free_bytes) == (False, 8 * gib, 7 * gib)
    assert fit.sentence == ("Batch 64 will not fit on cuda:1: peak 8.00 GiB of 7.00 GiB free. "
                            "Lower batch_size or close what else uses the GPU.")
    # Without NVML's figure the margin is unknown, whatever the allocator holds.
    monkeypatch.setattr(memory_fit, "nvml_free_memory", lambda device: None)
    assert memory_fit.check_memory_fit(config, 10, measured_peak=gib).free_bytes is None
