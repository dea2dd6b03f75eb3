"""Finding the largest batch that fits, on the CPU with a simulated or injected memory limit."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.training.engine import train
from workbench.core.training.tuning.batch_size_finder import (
    STEPS_PER_TRY,
    TrainingStepProbe,
    find_batch_size,
)

# A search that never ends (a doubling or bisection that stops moving) fails in half a minute
# instead of holding the run: each test here takes a second or less.
pytestmark = pytest.mark.timeout(30, method="signal")


def cnn_config(**changes: object) -> TrainConfig:
    return TrainConfig(
        model="small_cnn", weights="none", finetune="full", crop_mode="standard",
        resize_size=20, crop_size=16, device="cpu", amp=False, seed=0,
    ).replace(**changes)


def test_a_simulated_memory_limit_gives_the_largest_batch_under_it():
    config = cnn_config()
    probe = TrainingStepProbe(config, 4, "cpu")
    per_sample = probe(2) - probe(1)  # what one more sample keeps for backward
    limit = probe(1) + 10 * per_sample + per_sample // 2  # room for 11 samples, not 12

    tries: list[tuple[int, bool]] = []
    result = find_batch_size(config, num_classes=4, max_batch=64, memory_limit_bytes=limit,
                             on_try=lambda batch, fitted, peak: tries.append((batch, fitted)))

    assert result.largest_fitting == 11 and result.first_failing == 12
    assert result.batch_size == 9  # int(0.9 * 11)
    assert result.peak_memory[11] <= limit
    assert all(peak <= limit for peak in result.peak_memory.values())
    assert [b for b, _ in tries] == list(result.tried) == [1, 2, 4, 8, 16, 12, 10, 11]
    assert dict(tries) == {1: True, 2: True, 4: True, 8: True, 16: False, 12: False,
                           10: True, 11: True}
    assert "Largest batch that fits on cpu, float32: 11 samples" in result.describe()
    assert "Recommended batch_size 9" in result.describe()


def test_a_real_out_of_memory_error_from_the_model_caps_the_batch_and_training_goes_on(
        tmp_path: Path):
    config = cnn_config(crop_mode="five_crop")
    probe = TrainingStepProbe(config, 4, "cpu")
    seen: list[int] = []

    def allocate(module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        seen.append(args[0].shape[0])
        if args[0].shape[0] > 5 * 13:  # a GPU that holds 13 samples of five crops
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    probe.model.features[3].register_forward_pre_hook(allocate)  # fails mid-forward
    result = find_batch_size(config, max_batch=64, step_runner=probe)

    assert result.largest_fitting == 13 and result.first_failing == 14
    assert result.batch_size == 11 and result.crops_per_sample == 5
    assert max(seen) == 5 * 16 and 5 * 13 in seen  # five images per sample reached the model
    assert "(5 crops each)" in result.describe()
    # The failed steps left nothing behind: the same probe and a whole run still train.
    assert probe(result.batch_size) > 0 and all(p.grad is not None
                                                for p in probe.model.parameters())
    data = write_shape_dataset(tmp_path / "data", per_class=4, size=(32, 32),
                               layout="train_val", val_per_class=2)
    end = train(config.replace(data_root=str(data), batch_size=result.batch_size, epochs=1,
                               workers=0, output_dir=str(tmp_path / "runs"),
                               cache_images=False))
    assert end.status == "completed", end.error


def test_max_batch_caps_the_search_when_everything_fits():
    result = find_batch_size(cnn_config(), num_classes=3, max_batch=12,
                             memory_limit_bytes=10**12)
    assert result.tried == (1, 2, 4, 8, 12)
    assert result.largest_fitting == 12 and result.first_failing is None
    assert result.batch_size == 10
    assert "the search stopped at max_batch 12" in result.describe()


def test_nothing_fits_says_what_to_change():
    result = find_batch_size(cnn_config(), max_batch=8, memory_limit_bytes=1000)
    assert (result.largest_fitting, result.first_failing, result.batch_size) == (0, 1, 0)
    assert result.describe().startswith("Even a batch of 1 sample does not fit on cpu")


def test_a_stop_request_ends_the_search_between_tries():
    tried: list[int] = []
    result = find_batch_size(cnn_config(), max_batch=64, memory_limit_bytes=10**12,
                             should_stop=lambda: len(tried) >= 2,
                             on_try=lambda batch, fitted, peak: tried.append(batch))
    assert result.cancelled and result.tried == (1, 2)
    assert result.describe() == "The batch size search was stopped."


def test_each_try_is_a_real_training_step_with_the_run_settings():
    config = cnn_config(finetune="last_layer")
    probe = TrainingStepProbe(config, 4, "cpu")
    head_before = probe.model.fc.weight.detach().clone()
    frozen_before = probe.model.features[0].weight.detach().clone()
    probe(4)
    assert not torch.equal(head_before, probe.model.fc.weight)  # the optimiser stepped
    assert torch.equal(frozen_before, probe.model.features[0].weight)  # frozen stays frozen
    assert STEPS_PER_TRY == 2 and probe.optimizer.state  # momentum held like a run holds it


def test_the_cpu_has_no_limit_to_find_and_nothing_is_tried():
    tried: list[int] = []
    result = find_batch_size(cnn_config(), max_batch=64,
                             on_try=lambda batch, fitted, peak: tried.append(batch))
    assert result.no_memory_limit and tried == [] and result.tried == ()
    assert result.batch_size == 0 and result.largest_fitting == 0
    assert result.describe().startswith("There is no memory limit to find on the CPU (cpu)")
    assert "Batch size left unchanged" in result.describe()


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="max_batch"):
        find_batch_size(cnn_config(), max_batch=-1)
    with pytest.raises(ValueError, match="margin"):
        find_batch_size(cnn_config(), margin=1.5)
