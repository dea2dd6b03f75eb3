"""A model measured on the GPU: the figures the CPU leaves out (peak memory, fits, the largest
batch) are there and consistent with each other."""

from __future__ import annotations

from workbench.core.training.tuning.model_measurement import measure_model, measurement_settings


def test_a_gpu_measurement_has_memory_fit_and_the_largest_batch():
    small = measure_model(measurement_settings("resnet18", batch_size=8, crop_size=64,
                                               amp=True, finetune="full", device="cuda:0"),
                          warmup_steps=1, timed_steps=3, latency_runs=3)
    large = measure_model(measurement_settings("resnet18", batch_size=64, crop_size=64,
                                               amp=True, finetune="full", device="cuda:0"),
                          warmup_steps=1, timed_steps=3, latency_runs=3, find_largest=False)

    assert small.on_gpu and small.error == ""
    assert small.train_images_per_second > 0 and small.latency_ms > 0
    assert small.fits is True and small.largest_batch >= 8
    assert 0 < small.peak_memory_bytes < large.peak_memory_bytes
    assert large.largest_batch is None  # not searched
    assert small.device_name.strip() and "float16" in small.precision  # bfloat16 too
