"""Known answers of the batch size search: the batches tried, the largest batch under a simulated
memory limit, the recommendation and the paragraph a user reads, for a card whose step needs
a known number of bytes a sample."""

from __future__ import annotations

import pytest
import torch

from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning.batch_size_finder import (
    DEFAULT_MAX_BATCH,
    MARGIN,
    BatchSizeResult,
    TrainingStepProbe,
    _SavedTensorMeter,
    find_batch_size,
    peak_memory_text,
)

# A search that never ends (a doubling or bisection that stops moving) fails in half a minute
# instead of holding the run: each test here takes a second or less.
pytestmark = pytest.mark.timeout(30, method="signal")

MIB = 2**20


def cnn_config(**changes: object) -> TrainConfig:
    return TrainConfig(
        model="small_cnn", weights="none", finetune="full", crop_mode="standard",
        resize_size=20, crop_size=16, device="cpu", amp=False, seed=0,
    ).replace(**changes)


class SimulatedCard:
    """A step that needs 100 MiB plus 10 MiB a sample, on a card with ``free`` bytes."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.released = 0

    def __call__(self, batch: int) -> int:
        need = 100 * MIB + 10 * MIB * batch
        if need > self.free:
            raise torch.OutOfMemoryError(f"Tried to allocate {need} bytes")
        return need

    def release(self) -> None:
        self.released += 1


def test_the_largest_batch_under_a_limit_and_the_paragraph_about_it():
    card = SimulatedCard(free=400 * MIB)  # 30 samples fit exactly, 31 do not
    tries: list[tuple[int, bool, int | None]] = []
    result = find_batch_size(cnn_config(), max_batch=64, step_runner=card,
                             on_try=lambda *one: tries.append(one))
    assert result.tried == (1, 2, 4, 8, 16, 32, 24, 28, 30, 31)
    assert (result.largest_fitting, result.first_failing, result.batch_size) == (30, 31, 27)
    assert tries[5] == (32, False, None) and tries[8] == (30, True, 400 * MIB)
    assert result.peak_memory == {1: 110 * MIB, 2: 120 * MIB, 4: 140 * MIB, 8: 180 * MIB,
                                  16: 260 * MIB, 24: 340 * MIB, 28: 380 * MIB, 30: 400 * MIB}
    assert card.released == 2  # after each failed try: 32 and 31
    assert result.describe() == (
        "Largest batch that fits on cpu, float32: 30 samples, 400.0 MiB kept for backward; 31 "
        "did not. Recommended batch_size 27 (90% of it, headroom for a long run).")
    assert (result.max_batch, result.margin, result.cancelled, result.no_memory_limit) == (
        64, MARGIN, False, False)


def test_without_max_batch_the_cpu_search_stops_at_64():
    assert DEFAULT_MAX_BATCH == {"cuda": 1024, "cpu": 64}
    result = find_batch_size(cnn_config(), step_runner=SimulatedCard(free=10**15))
    assert result.tried == (1, 2, 4, 8, 16, 32, 64) and result.max_batch == 64
    assert (result.largest_fitting, result.first_failing, result.batch_size) == (64, None, 57)
    assert result.describe().endswith(
        "; the search stopped at max_batch 64. Recommended batch_size 57 (90% of it, headroom "
        "for a long run).")


def test_the_margin_edges_and_a_batch_of_one():
    card = SimulatedCard(free=115 * MIB)  # 1 sample fits, 2 do not
    result = find_batch_size(cnn_config(), max_batch=8, margin=1.0, step_runner=card)
    assert (result.tried, result.largest_fitting, result.batch_size) == ((1, 2), 1, 1)
    # 90% of 1 sample rounds down to 0: a batch of 1 is still recommended.
    assert find_batch_size(cnn_config(), max_batch=8, step_runner=card).batch_size == 1
    assert find_batch_size(cnn_config(), max_batch=1, step_runner=card).tried == (1,)
    assert find_batch_size(cnn_config(), max_batch=64, margin=0.5,
                           step_runner=SimulatedCard(400 * MIB)).batch_size == 15
    with pytest.raises(ValueError, match=r"max_batch must be at least 1 \(got 0\)"):
        find_batch_size(cnn_config(), max_batch=0, step_runner=card)
    with pytest.raises(ValueError, match=r"margin must be in \(0, 1\] \(got 0.0\)"):
        find_batch_size(cnn_config(), margin=0.0, step_runner=card)


def test_the_cpu_answer_keeps_the_settings_it_was_asked_for():
    result = find_batch_size(cnn_config(crop_mode="five_crop"), max_batch=32, margin=0.8)
    assert result == BatchSizeResult(0, 0, None, device="cpu", precision="float32",
                                     crops_per_sample=5, max_batch=32, margin=0.8,
                                     no_memory_limit=True)


def test_peak_texts_switch_to_gib_at_one_gib_and_name_what_they_count():
    assert peak_memory_text(2**30, "cuda:0") == "peak 1.00 GiB"
    assert peak_memory_text(2**30 - 2**20, "cuda:0") == "peak 1023.0 MiB"
    assert peak_memory_text(3 * MIB // 2, "cpu") == "1.5 MiB kept for backward"


def test_a_paragraph_without_a_peak_and_with_five_crops():
    result = BatchSizeResult(9, 10, 11, peak_memory={10: None}, device="cuda:0",
                             precision="float16 (mixed)", crops_per_sample=5)
    assert result.describe() == (
        "Largest batch that fits on cuda:0, float16 (mixed): 10 samples (5 crops each); 11 did "
        "not. Recommended batch_size 9 (90% of it, headroom for a long run).")
    nothing = BatchSizeResult(0, 0, 1, device="cuda:0", precision="float32", crops_per_sample=5)
    assert nothing.describe() == (
        "Even a batch of 1 sample (5 crops each) does not fit on cuda:0, float32; lower "
        "crop_size, turn on amp or choose finetune last_layer.")


def test_a_step_that_keeps_exactly_the_limit_fits_and_one_byte_less_does_not():
    config = cnn_config()
    kept = TrainingStepProbe(config, 4, "cpu")(3)
    assert kept > 0
    assert TrainingStepProbe(config, 4, "cpu", memory_limit_bytes=kept)(3) == kept
    with pytest.raises(torch.OutOfMemoryError, match=f"over the {kept - 1:,}-byte limit"):
        TrainingStepProbe(config, 4, "cpu", memory_limit_bytes=kept - 1)(3)


def test_the_bytes_kept_do_not_count_the_weights_and_grow_with_the_batch():
    config = cnn_config()
    probe = TrainingStepProbe(config, 4, "cpu")
    one, two = probe(1), probe(2)
    weights = sum(p.numel() * p.element_size() for p in probe.model.parameters())
    # Input pixels alone: 1 x 16 x 16 float32 a sample; the kept tensors grow per sample.
    assert 16 * 16 * 4 < one < weights
    assert two - one == probe(3) - two > 16 * 16 * 4
    assert TrainingStepProbe(config, 4, "cpu", count_saved=False)(2) == 0


def test_a_synthetic_batch_has_the_runs_shape():
    probe = TrainingStepProbe(cnn_config(crop_mode="five_crop"), 3, "cpu", count_saved=False)
    images, labels = probe.synthetic_batch(6)
    assert (images.shape, images.dtype) == ((6, 5, 1, 16, 16), torch.uint8)  # small_cnn: grey
    assert labels.shape == (6,) and 0 <= int(labels.min()) and int(labels.max()) < 3
    images, _ = TrainingStepProbe(cnn_config(), 3, "cpu").synthetic_batch(2)
    assert images.shape == (2, 1, 16, 16)


def test_the_cpu_paragraph_says_why_nothing_was_searched():
    result = find_batch_size(cnn_config(), max_batch=32)
    assert result.describe() == (
        "There is no memory limit to find on the CPU (cpu): it shares its memory with the "
        "rest of the system and swaps before it runs out, so a search would only find its own "
        "cap. Batch size left unchanged; choose it for speed, or search on a CUDA GPU.")


def test_the_margin_asked_for_is_the_one_the_paragraph_names():
    result = find_batch_size(cnn_config(), max_batch=64, margin=0.5,
                             step_runner=SimulatedCard(400 * MIB))
    assert result.margin == 0.5 and result.describe().endswith(
        "Recommended batch_size 15 (50% of it, headroom for a long run).")


def test_a_runner_without_release_still_searches():
    def card(batch: int) -> int:  # a plain function: nothing to release after a failure
        if batch > 5:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return batch * MIB

    result = find_batch_size(cnn_config(), max_batch=16, step_runner=card)
    assert (result.largest_fitting, result.first_failing, result.tried) == (
        5, 6, (1, 2, 4, 8, 6, 5))


def test_mixed_precision_asked_for_on_the_cpu_is_float32():
    config = cnn_config(amp=True)
    assert TrainingStepProbe(config, 3, "cpu").precision.label == "float32"
    result = find_batch_size(config, max_batch=2, step_runner=SimulatedCard(10**12))
    assert result.precision == "float32"
    assert find_batch_size(config, max_batch=2).precision == "float32"


def test_the_default_head_has_ten_classes():
    config = cnn_config()
    result = find_batch_size(config, max_batch=1, memory_limit_bytes=10**12)
    assert result.peak_memory[1] == TrainingStepProbe(config, 10, "cpu")(1)
    assert result.peak_memory[1] != TrainingStepProbe(config, 11, "cpu")(1)


def test_a_probe_on_the_cpu_keeps_the_default_layout_and_random_weights(tmp_path):
    # As a CPU run: channels_last is not applied there. Weights do not change memory: a
    # weights file that is not there is never read.
    config = cnn_config(channels_last=True, weights="file",
                        weights_file=str(tmp_path / "missing.pt"))
    probe = TrainingStepProbe(config, 3, "cpu")
    assert all(p.is_contiguous() for p in probe.model.parameters())
    inputs, _ = probe.preparer(*probe.synthetic_batch(2))
    assert inputs.is_contiguous()
    assert probe(2) > 0


def test_release_drops_the_gradients():
    probe = TrainingStepProbe(cnn_config(), 3, "cpu")
    probe(2)
    assert all(p.grad is not None for p in probe.model.parameters())
    probe.release()
    assert all(p.grad is None for p in probe.model.parameters())


def test_the_meter_counts_each_storage_once_and_never_a_parameter():
    weight = torch.nn.Parameter(torch.zeros(100))
    meter = _SavedTensorMeter(None, [weight])
    assert meter.bytes == 0  # nothing counted yet
    data = torch.zeros(10)  # 40 bytes
    assert meter.add(data) is data and meter.bytes == 40
    meter.add(data[2:])  # a view of the same storage
    meter.add(weight)
    assert meter.bytes == 40
    meter.add(torch.zeros(3, dtype=torch.float64))
    assert meter.bytes == 64
    meter.reset()
    assert meter.bytes == 0
    meter.add(data)
    assert meter.bytes == 40  # counted again after a reset
    limited = _SavedTensorMeter(50, [])
    limited.add(data)
    with pytest.raises(torch.OutOfMemoryError, match=(
            r"^simulated: a step would keep 80 bytes, over the 50-byte limit$")):
        limited.add(torch.zeros(10))


def test_a_stop_during_the_bisection_keeps_what_was_found():
    tries: list[int] = []
    result = find_batch_size(cnn_config(), max_batch=64, step_runner=SimulatedCard(400 * MIB),
                             should_stop=lambda: len(tries) >= 7,
                             on_try=lambda batch, *_: tries.append(batch))
    # Doubling to 32 (which fails), then 24: stopped before 28.
    assert result.cancelled is True and result.tried == (1, 2, 4, 8, 16, 32, 24)
    assert (result.largest_fitting, result.first_failing) == (24, 32)
    assert result.describe() == "The batch size search was stopped."
