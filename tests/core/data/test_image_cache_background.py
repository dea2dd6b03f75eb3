"""Cache files written by a background thread: the decoded image comes back before its cache
file is written, the file is the one a direct write gives, a run's end finds every file in
place, and past the waiting budget a write is done at once."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from workbench.core.data import image_cache
from workbench.core.data.generated.synthetic_images import draw_shape_image, write_shape_dataset
from workbench.core.data.image_cache import cache_path, load_image_uint8, wait_for_cache_writes
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train


def _photo(path: Path) -> Path:
    draw_shape_image("circle", (64, 48), random.Random(0)).save(path)
    return path


@pytest.fixture
def held_writes(monkeypatch: pytest.MonkeyPatch):
    """Cache writes wait until ``release`` is set (the real write follows)."""
    release = threading.Event()
    real = image_cache._store

    def store_when_released(cache_file: Path, data: bytes) -> None:
        assert release.wait(10), "the write was never released"
        real(cache_file, data)

    monkeypatch.setattr(image_cache, "_store", store_when_released)
    yield release
    release.set()
    wait_for_cache_writes()


def test_the_image_comes_back_before_its_cache_file_is_written(tmp_path, held_writes) -> None:
    path = _photo(tmp_path / "a.png")
    cache = tmp_path / "cache"
    image = load_image_uint8(str(path), 32, cache_dir=str(cache), write_in_background=True)
    stored = cache_path(str(path), 32, False, cache)
    assert not stored.exists()  # the write is held, the caller already has the pixels

    held_writes.set()
    wait_for_cache_writes()
    assert np.array_equal(np.load(stored), image.numpy())
    assert image_cache._BACKGROUND.waiting == 0
    direct = tmp_path / "direct"
    load_image_uint8(str(path), 32, cache_dir=str(direct))
    assert cache_path(str(path), 32, False, direct).read_bytes() == stored.read_bytes()


def test_past_the_waiting_budget_a_write_is_done_at_once(tmp_path, held_writes,
                                                           monkeypatch) -> None:
    monkeypatch.setattr(image_cache, "BACKGROUND_WRITES_BYTES", 0)
    path = _photo(tmp_path / "a.png")
    cache = tmp_path / "cache"
    writer = threading.Thread(target=load_image_uint8, args=(str(path), 32),
                              kwargs={"cache_dir": str(cache), "write_in_background": True})
    writer.start()
    writer.join(0.5)
    assert writer.is_alive()  # the caller itself is held: it writes, nothing is queued
    held_writes.set()
    writer.join(10)
    assert cache_path(str(path), 32, False, cache).is_file()


def test_a_run_with_its_images_on_the_device_ends_with_every_image_cached(
        tmp_path, monkeypatch) -> None:
    real = image_cache._store

    def slow_store(cache_file: Path, data: bytes) -> None:
        time.sleep(0.1)  # 3.2 s for the 32 images: longer than the run itself
        real(cache_file, data)

    monkeypatch.setattr(image_cache, "_store", slow_store)
    data = write_shape_dataset(tmp_path / "data", per_class=6, size=(24, 24),
                               layout="train_val", val_per_class=2, image_format="PNG")
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                         finetune="full", resize_size=24, crop_size=20, batch_size=8, epochs=1,
                         workers=1, output_dir=str(tmp_path / "runs"),
                         cache_dir=str(tmp_path / "cache"))
    end = train(config, Callback())
    assert end.status == "completed", end.error
    images = sorted(data.rglob("*.png"))
    cached = {p.name for p in (tmp_path / "cache").rglob("*.npy")}
    # Training images are cached at most at their own size (never enlarged), validation
    # images at the resize: each file's own key, every one of them written by the run's end.
    assert len(cached) == len(images) == 32


class _CancelAtFirstStep(Callback):
    def __init__(self, control: RunControl) -> None:
        self.control = control

    def on_step(self, event) -> None:
        self.control.request_cancel()


def test_a_stopped_run_ends_without_waiting_for_the_cache_writes(tmp_path, held_writes) -> None:
    data = write_shape_dataset(tmp_path / "data", per_class=6, size=(24, 24),
                               layout="train_val", val_per_class=2, image_format="PNG")
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none",
                         finetune="full", resize_size=24, crop_size=20, batch_size=8, epochs=3,
                         workers=1, output_dir=str(tmp_path / "runs"),
                         cache_dir=str(tmp_path / "cache"))
    control = RunControl()
    ends = []
    run = threading.Thread(target=lambda: ends.append(train(config, _CancelAtFirstStep(control),
                                                            control)))
    run.start()
    run.join(30)
    # Every write is held, yet Stop is not: the run ends and its cache files come after.
    assert not run.is_alive() and ends[0].status == "cancelled", ends
    assert not list((tmp_path / "cache").rglob("*.npy"))
    held_writes.set()
    wait_for_cache_writes()
    assert len(list((tmp_path / "cache").rglob("*.npy"))) == 32
