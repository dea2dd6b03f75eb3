"""The cache folder: where it is, what it holds, clearing only its own files, and its reserve."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
import torch

from workbench.core.data import cache_folder
from workbench.core.data.cache_folder import (
    CacheUsage,
    cache_messages,
    cache_usage,
    clear_cache,
    default_cache_dir,
    free_bytes,
)
from workbench.core.data.generated.synthetic_images import draw_shape_image
from workbench.core.data.image_cache import load_image_uint8
from workbench.core.units import byte_amount


def _photo(path: Path, size: tuple[int, int], seed: int = 0) -> Path:
    draw_shape_image("circle", size, random.Random(seed)).save(path)
    return path


def test_default_cache_dir_honours_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("WORKBENCH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.name != "nt":
        assert default_cache_dir() == tmp_path / "xdg" / "workbench" / "images"


def test_cache_usage_and_clear_count_only_the_caches_own_files(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for index in range(3):
        load_image_uint8(str(_photo(tmp_path / f"{index}.png", (40, 30), seed=index)), 24,
                         cache_dir=str(cache))
    stored = sorted(cache.glob("*/*.npy"))
    assert len(stored) == 3
    total = sum(path.stat().st_size for path in stored)
    unfinished = stored[0].parent / f".{stored[0].name}.x1y2.tmp"  # a write cut short
    unfinished.write_bytes(b"partial")
    notes = cache / "notes.txt"
    notes.write_text("mine")
    foreign = cache / "ab" / "keep.npy"
    foreign.parent.mkdir(exist_ok=True)
    foreign.write_bytes(b"not a cache name")

    assert cache_usage(cache) == CacheUsage(4, total + len(b"partial"))
    assert clear_cache(cache) == CacheUsage(4, total + len(b"partial"))
    assert cache_usage(cache) == CacheUsage(0, 0)
    assert notes.read_text() == "mine" and foreign.is_file()
    assert sorted(p.name for p in cache.iterdir()) == ["ab", "notes.txt"]  # emptied ones gone
    assert clear_cache(tmp_path / "missing") == CacheUsage(0, 0)


def test_the_cache_leaves_its_reserve_free(tmp_path: Path, monkeypatch) -> None:
    path = _photo(tmp_path / "a.png", (64, 48))
    cache = tmp_path / "cache"
    # A reserve larger than the free space: any write would eat into it.
    monkeypatch.setattr(cache_folder, "FREE_SPACE_RESERVE", free_bytes(tmp_path) + 1)
    first = load_image_uint8(str(path), 32, cache_dir=str(cache))
    assert cache_usage(cache).files == 0
    monkeypatch.setattr(cache_folder, "FREE_SPACE_RESERVE", 0)
    assert torch.equal(load_image_uint8(str(path), 32, cache_dir=str(cache)), first)
    assert cache_usage(cache).files == 1


def test_cache_messages_say_where_and_warn_when_the_dataset_will_not_fit(
    tmp_path: Path, monkeypatch
) -> None:
    cache = str(tmp_path / "cache")  # not created yet: its parent's disk counts
    messages = cache_messages(cache, uncached_images=10, resize_size=64, channels=3)
    assert [level for level, _ in messages] == ["info"]
    assert f"Resized images are cached in {cache}" in messages[0][1]
    assert "`workbench cache`" in messages[0][1]

    monkeypatch.setattr(cache_folder, "FREE_SPACE_RESERVE", free_bytes(tmp_path) - 2**20)
    messages = cache_messages(cache, uncached_images=10_000, resize_size=512, channels=3)
    assert [level for level, _ in messages] == ["info", "warning"]
    warning = messages[1][1]
    assert warning.startswith("cache_dir: the 10,000 images of this dataset not cached yet "
                              "take about 9.8 GiB resized")
    assert f"but {cache} has room for 1.0 MiB" in warning
    assert "decoded again every epoch" in warning


@pytest.mark.parametrize(("nbytes", "text"), [
    (0, "0 KiB"), (1536, "2 KiB"), (5 * 2**20, "5.0 MiB"), (3 * 2**30 // 2, "1.5 GiB"),
    (2048 * 2**30, "2,048.0 GiB"),
])
def test_byte_amounts(nbytes: int, text: str) -> None:
    assert byte_amount(nbytes) == text


def test_the_uncached_share_is_judged_from_images_spread_over_the_dataset(tmp_path: Path):
    from workbench.core.runs.config import TrainConfig
    from workbench.core.training.session_setup import uncached_share

    cache = tmp_path / "cache"
    paths = [_photo(tmp_path / f"{index}.png", (40, 30), seed=index) for index in range(10)]
    samples = [(str(path), 0) for path in paths]
    config = TrainConfig(resize_size=24)
    for path in paths[::2]:  # every other image cached
        load_image_uint8(str(path), 24, cache_dir=str(cache))
    assert uncached_share(samples, config, str(cache)) == 0.5
    assert uncached_share(samples, config, str(cache), probes=5) == 0.0  # probes 0, 2, 4, 6, 8
    assert uncached_share(samples[1::2], config, str(cache)) == 1.0
    assert uncached_share([], config, str(cache)) == 0.0
    paths[1].unlink()  # gone since the scan: counted as not cached
    assert uncached_share(samples[1:2], config, str(cache)) == 1.0
