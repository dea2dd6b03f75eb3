"""The speed probe times real steps of the configured model on the user's own images."""

from __future__ import annotations

import pytest

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.training.precision import FLOAT32
from workbench.core.training.tuning.speed_probe import ProbeRow, SpeedProbeResult, probe_speed


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> TrainConfig:
    root = tmp_path_factory.mktemp("probe")
    data = write_shape_dataset(root / "data", per_class=6, size=(40, 32),
                               layout="train_val", val_per_class=2)
    return TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=4, epochs=1,
        workers=0, output_dir=str(root / "runs"), device="cpu", amp=True,
        channels_last=False, cache_images=False,
    )


def test_the_cpu_rows_are_float32_in_the_default_layout_at_each_batch(config):
    seen: list[ProbeRow] = []
    # 16 training images: the batch of 24 repeats the first eight.
    result = probe_speed(config, batch_sizes=(24, 4), steps=1, on_row=seen.append)
    combos = [(row.precision, row.channels_last, row.batch_size) for row in result.rows]
    # A CPU run keeps the default layout: the probe times only that, never channels_last.
    assert combos == [(FLOAT32, False, 4), (FLOAT32, False, 24)]
    assert list(result.rows) == seen
    assert all(row.images_per_second > 0 and row.peak_memory is None and not row.error
               for row in result.rows)
    fastest = result.fastest
    assert fastest.images_per_second == max(row.images_per_second for row in result.rows)
    assert "<- fastest" in result.table().splitlines()[1 + result.rows.index(fastest)]
    assert result.describe().startswith(f"Fastest on cpu: float32, batch {fastest.batch_size}")
    assert "channels_last was not measured" in result.describe()
    applied = result.apply_to(config.replace(channels_last=True))
    # A CPU run does not use channels_last: the setting is left as it was.
    assert (applied.amp, applied.channels_last, applied.batch_size) == \
        (False, True, fastest.batch_size)
    assert applied.validate(check_paths=False) == []


def test_a_probe_without_rows_applies_nothing():
    result = SpeedProbeResult("cpu", (), cancelled=True)
    assert result.fastest is None and result.describe() == "The speed probe was stopped."
    config = TrainConfig()
    assert result.apply_to(config) is config


def test_stopping_before_the_second_row(config):
    asked = []

    def stop() -> bool:
        asked.append(True)
        return len(asked) > 1

    result = probe_speed(config, batch_sizes=(4, 8), steps=1, should_stop=stop)
    assert result.cancelled and len(result.rows) == 1
