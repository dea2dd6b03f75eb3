"""Known answers of the speed probe: its figures from a stand-in clock, the rows a CUDA result
turns into (table, sentence, config changes, built by hand) and a simulated out-of-memory row."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
import torch

from workbench.core.data.data_pipeline import build_data_pipeline
from workbench.core.data.dataset_scan import scan_dataset
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.training.precision import BFLOAT16, FLOAT16, FLOAT32
from workbench.core.training.tuning import speed_probe
from workbench.core.training.tuning.speed_probe import (
    TIMED_STEPS,
    WARMUP_STEPS,
    ProbeRow,
    SpeedProbeResult,
    default_batch_sizes,
    probe_layouts,
    probe_precisions,
    probe_speed,
)

MIB = 2**20


@pytest.fixture
def config(tmp_path) -> TrainConfig:
    data = write_shape_dataset(tmp_path / "data", per_class=3, size=(32, 32),
                               layout="train_val", val_per_class=1)
    return TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=28, crop_size=28, batch_size=3, epochs=1,
        workers=0, output_dir=str(tmp_path / "runs"), device="cpu", amp=False,
        channels_last=False, cache_images=False, seed=0,
    )


def _counting_models(monkeypatch) -> list[list[int]]:
    """Each model the probe builds records the batch of every forward pass."""
    built: list[list[int]] = []
    real = speed_probe.build_model

    def build(config: TrainConfig, num_classes: int) -> torch.nn.Module:
        model = real(config, num_classes)
        batches: list[int] = []
        built.append(batches)
        model.register_forward_pre_hook(lambda _m, args: batches.append(args[0].shape[0]))
        return model

    monkeypatch.setattr(speed_probe, "build_model", build)
    return built


def test_images_per_second_come_from_the_timed_steps_on_a_stand_in_clock(config, monkeypatch):
    # The clock moves 0.5 s a reading: the timed steps of each row take 0.5 s. Two timed steps
    # of batch 3 -> 12 images/s, of batch 6 -> 24. One untimed warm-up step before them.
    ticks = itertools.count()
    monkeypatch.setattr(speed_probe, "time",
                        SimpleNamespace(perf_counter=lambda: 10.0 + 0.5 * next(ticks)))
    built = _counting_models(monkeypatch)

    result = probe_speed(config)

    assert (WARMUP_STEPS, TIMED_STEPS) == ({"cuda": 2, "cpu": 1}, {"cuda": 5, "cpu": 2})
    assert [(row.batch_size, row.images_per_second) for row in result.rows] == [(3, 12.0),
                                                                                (6, 24.0)]
    assert built == [[3, 3, 3], [6, 6, 6]]  # a fresh model a row: 1 warm-up + 2 timed steps
    assert result.fastest is result.rows[1] and not result.cancelled and result.device == "cpu"
    assert result.describe() == (
        "Fastest on cpu: float32, batch 6 (24.0 images/s). A CPU run keeps the default memory "
        "layout, so channels_last was not measured.")
    assert result.apply_to(config).batch_size == 6


def test_steps_asked_for_are_the_steps_timed_and_batches_are_sorted_once(config, monkeypatch):
    ticks = itertools.count()
    monkeypatch.setattr(speed_probe, "time",
                        SimpleNamespace(perf_counter=lambda: 2.0 * next(ticks)))
    built = _counting_models(monkeypatch)
    # 9 training images: the batch of 10 repeats the first.
    result = probe_speed(config, batch_sizes=(10, 2, 10), steps=4)
    assert [(row.batch_size, row.images_per_second) for row in result.rows] == [(2, 4.0),
                                                                                (10, 20.0)]
    assert built == [[2] * 5, [10] * 5]


def test_a_row_that_runs_out_of_memory_says_so_and_the_next_row_still_runs(config, monkeypatch):
    real = speed_probe.build_model

    def small_card(config: TrainConfig, num_classes: int) -> torch.nn.Module:
        model = real(config, num_classes)

        def allocate(_module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
            if args[0].shape[0] > 4:  # a card that holds four images
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

        model.register_forward_pre_hook(allocate)
        return model

    monkeypatch.setattr(speed_probe, "build_model", small_card)
    result = probe_speed(config, batch_sizes=(8, 2), steps=1)
    assert [(row.batch_size, row.error, row.images_per_second is None) for row in result.rows] \
        == [(2, "", False), (8, "out of memory", True)]
    assert result.fastest is result.rows[0]
    assert result.rows[1] == ProbeRow(FLOAT32, False, 8, error="out of memory")

    everything_fails = probe_speed(config, batch_sizes=(8, 16), steps=1)
    assert everything_fails.fastest is None and everything_fails.config_changes() == {}
    assert everything_fails.describe() == "No combination trained on cpu: out of memory."


def test_the_probe_trains_random_weights_whatever_the_config_starts_from(config, tmp_path):
    # Weights do not change speed: a weights file that is not there is never read.
    result = probe_speed(config.replace(weights="file", weights_file=str(tmp_path / "no.pt")),
                         batch_sizes=(2,), steps=1)
    assert [row.batch_size for row in result.rows] == [2] and result.rows[0].error == ""


def test_a_stopped_probe_keeps_its_device_and_the_rows_measured(config):
    asked = itertools.count()
    result = probe_speed(config, batch_sizes=(2, 4), steps=1,
                         should_stop=lambda: next(asked) >= 1)
    assert result.cancelled and result.device == "cpu" and len(result.rows) == 1
    assert result.config_changes() == {"amp": False, "batch_size": 2}


def test_the_samples_are_the_runs_training_split_repeated(tmp_path):
    data = write_shape_dataset(tmp_path / "flat", per_class=5, size=(32, 32))
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                         crop_mode="standard", resize_size=32, crop_size=32, workers=0,
                         device="cpu", val_fraction=0.4, seed=7, cache_images=False,
                         output_dir=str(tmp_path / "runs"), train_hflip=False,
                         crop_scale_min=1.0, crop_ratio_min=1.0, crop_ratio_max=1.0)
    # No flip and the whole image: each sample is its image, the same at every read.
    scan = scan_dataset(str(data), 0.4, 7)
    assert len(scan.train) == 12  # 3 of each class's 5
    assert scan.train != scan_dataset(str(data), 0.4, 0).train  # the seed picks them
    assert scan.train != scan_dataset(str(data), 0.2, 7).train
    dataset = build_data_pipeline(config, scan, "cpu").train_loader.dataset
    images, labels, classes, (mean, std) = speed_probe._sample_batch(config, "cpu", 14)
    assert classes == 4 and images.dtype == torch.uint8 and len(mean) == len(std) == 1
    order = [*range(12), 0, 1]  # the 12 training images, then again from the first
    assert labels.tolist() == [scan.train[i][1] for i in order]
    assert 0 in labels.tolist()
    assert all(torch.equal(images[k], dataset[i][0]) for k, i in enumerate(order))


@pytest.mark.parametrize(("capability", "name", "mixed"), [
    ((8, 6), "NVIDIA GeForce RTX 3060", BFLOAT16),  # bfloat16 in hardware
    ((7, 5), "Tesla T4", FLOAT16),  # tensor cores for float16
    ((7, 5), "NVIDIA GeForce GTX 1650", FLOAT16),  # no tensor cores: measured all the same
])
def test_a_card_is_tried_in_float32_and_its_mixed_precision(monkeypatch, capability, name,
                                                            mixed):
    # torch's answer about the card, as CUDA would give it (no card on this machine).
    asked: list[torch.device] = []

    def properties(device: torch.device) -> SimpleNamespace:
        asked.append(device)
        return SimpleNamespace(major=capability[0], minor=capability[1], name=name)

    monkeypatch.setattr(torch.cuda, "get_device_properties", properties)
    assert probe_precisions("cuda:1") == (FLOAT32, mixed)
    assert asked == [torch.device("cuda:1")]


def test_what_is_tried_on_the_cpu_and_on_a_card():
    assert probe_precisions("cpu") == (FLOAT32,)
    assert probe_layouts("cpu") == (False,) and probe_layouts("cuda:0") == (False, True)
    assert default_batch_sizes(TrainConfig(batch_size=48)) == (48, 96)


CUDA_ROWS = (
    ProbeRow(FLOAT32, False, 64, 812.34, 3 * 1024 * MIB),
    ProbeRow(FLOAT32, True, 64, 1500.0, 1536 * MIB),
    ProbeRow(FLOAT16, False, 64, 2345.678, 2 * 1024 * MIB),
    ProbeRow(FLOAT16, True, 128, error="out of memory"),
)


def test_a_card_result_as_a_table_a_sentence_and_config_changes():
    result = SpeedProbeResult("cuda:0", CUDA_ROWS)
    assert result.fastest is CUDA_ROWS[2]
    assert result.table().splitlines() == [
        "precision                        channels_last batch   images/s  peak memory",
        "float32                          off              64      812.3    3,072 MiB",
        "float32                          on               64    1,500.0    1,536 MiB",
        "mixed float16 with loss scaling  off              64    2,345.7    2,048 MiB  <- fastest",
        "mixed float16 with loss scaling  on              128 out of memory            \u2014",
    ]
    assert result.describe() == ("Fastest on cuda:0: mixed float16 with loss scaling, "
                                 "channels_last off, batch 64 (2,345.7 images/s).")
    assert result.config_changes() == {"amp": True, "amp_dtype": "float16",
                                       "channels_last": False, "batch_size": 64}
    applied = result.apply_to(TrainConfig(amp=False, channels_last=True, batch_size=8))
    assert (applied.amp, applied.amp_dtype, applied.channels_last, applied.batch_size) == (
        True, "float16", False, 64)


def test_row_config_changes_name_the_mixed_dtype_only_when_mixed():
    assert ProbeRow(FLOAT32, True, 16).config_changes == {"amp": False, "channels_last": True,
                                                          "batch_size": 16}
    assert ProbeRow(BFLOAT16, False, 32).config_changes == {
        "amp": True, "channels_last": False, "batch_size": 32, "amp_dtype": "bfloat16"}


def test_equal_speeds_keep_the_first_row_and_failures_are_listed_once_sorted():
    tie = SpeedProbeResult("cuda:0", (ProbeRow(FLOAT32, False, 8, 100.0, MIB),
                                      ProbeRow(FLOAT32, True, 8, 100.0, MIB)))
    assert tie.fastest is tie.rows[0]
    assert "channels_last on" in SpeedProbeResult("cuda:1", CUDA_ROWS[1:2]).describe()
    failed = SpeedProbeResult("cuda:0", (ProbeRow(FLOAT32, False, 8, error="out of memory"),
                                         ProbeRow(FLOAT16, False, 8, error="cuDNN error"),
                                         ProbeRow(FLOAT16, True, 8, error="out of memory")))
    assert failed.describe() == "No combination trained on cuda:0: cuDNN error, out of memory."
    assert SpeedProbeResult("cpu", ()).describe() == ("No combination trained on cpu: nothing "
                                                      "was tried.")
    assert SpeedProbeResult("cuda:0", CUDA_ROWS, cancelled=True).describe() == (
        "The speed probe was stopped.")
