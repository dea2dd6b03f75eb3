"""A real out-of-memory error on a GPU capped to 4 GiB (a GTX 1650's memory): the halving
retry recovers with the window up, and the batch finder's answer fits under the same cap."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
import torch

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.training.tuning.batch_size_finder import TrainingStepProbe, find_batch_size

CAP_BYTES = 4 * 2**30
RUN_TIMEOUT_MS = 300_000


@pytest.fixture
def capped_gpu() -> Iterator[int]:
    """This process may use at most 4 GiB of cuda:0 (the caching allocator enforces it)."""
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(0)
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, CAP_BYTES / total), 0)
    yield CAP_BYTES
    torch.cuda.set_per_process_memory_fraction(1.0, 0)
    torch.cuda.empty_cache()


def _big_batch_config(data_root: str, output_dir: str, batch_size: int) -> TrainConfig:
    # ResNet18 at 224 px in float32 keeps about 30 MiB of activations per image for
    # backward: a batch of 512 needs far more than 4 GiB, 64 fits.
    return TrainConfig(
        data_root=data_root, model="resnet18", weights="none", finetune="full",
        crop_mode="standard", resize_size=224, crop_size=224, batch_size=batch_size,
        epochs=1, max_steps_per_epoch=2, workers=0, output_dir=output_dir, device="cuda:0",
        amp=False, channels_last=True, cache_images=False, images_on_device=False,
        oom_retry_smaller_batch=True,
    )


def test_an_out_of_memory_step_is_retried_at_half_the_batch_with_the_window_up(
        qtbot, tmp_path, capped_gpu, window_settings):
    from workbench.gui.window.main_window import MainWindow

    data = write_shape_dataset(tmp_path / "data", per_class=130, size=(32, 32),
                               layout="train_val", val_per_class=2)
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    window.config_form.set_config(_big_batch_config(str(data), str(tmp_path / "runs"), 512))
    # The memory line runs a dry step at the chosen batch before Start: it says so first.
    measurements = window.device_panel.measurements
    qtbot.waitUntil(lambda: "512" in measurements.memory_text(), timeout=RUN_TIMEOUT_MS)
    assert measurements.memory_text().startswith("\u26a0 Batch 512 does not fit on cuda:0")
    qtbot.waitUntil(lambda: not measurements.is_busy(), timeout=RUN_TIMEOUT_MS)
    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        assert window.start_training()
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=RUN_TIMEOUT_MS)
    end = ended.args[0]
    log = window.log_panel.toPlainText()
    assert "ran out of memory at batch size 512" in log
    assert end.status == "completed", end.error
    assert window.isVisible()
    assert torch.cuda.max_memory_reserved(0) <= capped_gpu
    # The smaller batch is a new setting: the memory line measures it in the pool. That dry
    # step must end here, not allocate on the GPU during the next test.
    qtbot.waitUntil(lambda: not measurements.is_busy(), timeout=RUN_TIMEOUT_MS)
    from PySide6.QtCore import QThreadPool

    assert QThreadPool.globalInstance().waitForDone(RUN_TIMEOUT_MS)


def test_the_batch_finders_answer_fits_under_the_cap(tmp_path, capped_gpu):
    # Nothing of an earlier test may hold memory: the search and the check below must see
    # the same free memory.
    assert torch.cuda.memory_allocated(0) < 2**26, torch.cuda.memory_summary(0, abbreviated=True)
    config = _big_batch_config("", str(tmp_path), 32)
    result = find_batch_size(config, num_classes=4, max_batch=1024)
    assert result.largest_fitting >= 1 and result.first_failing is not None
    assert result.peak_memory[result.largest_fitting] <= capped_gpu
    assert torch.cuda.memory_allocated(0) < 2**26, "the search left memory allocated"
    torch.cuda.reset_peak_memory_stats(0)
    peak = TrainingStepProbe(config, 4, "cuda:0")(result.batch_size)  # raises if it does not fit
    assert peak <= capped_gpu
