"""The image cache bench: what it times is the cache's own write and read of the decoded array,
and its table groups files by the ratio of their bytes to the array's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from workbench.bench.loading.image_cache_benchmark import Timing, measure, table
from workbench.core.data.image_cache import _read_cached, cache_path
from workbench.core.data.image_decoding import decode_file


def test_a_file_is_timed_and_its_cached_array_is_the_decoded_one(tmp_path: Path) -> None:
    path = tmp_path / "noise.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (40, 60, 3), np.uint8)).save(path)
    timing = measure("generated", path, 20, tmp_path / "cache", repeats=2)

    assert timing is not None
    assert timing.file_bytes == path.stat().st_size
    assert timing.array_bytes == 3 * 20 * 30  # shorter side 20, aspect kept
    assert timing.ratio == timing.file_bytes / timing.array_bytes
    assert min(timing.decode_ms, timing.write_ms, timing.read_ms) > 0
    cached = _read_cached(cache_path(str(path), 20, False, tmp_path / "cache"), 20, False)
    assert np.array_equal(cached, decode_file(str(path), 20))


def test_an_undecodable_file_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "broken.png"
    path.write_bytes(b"not an image")
    assert measure("generated", path, 20, tmp_path / "cache") is None


def test_the_table_has_a_row_a_ratio_band_with_the_medians() -> None:
    def timing(ratio: float, decode: float) -> Timing:
        return Timing("kind", Path("x.png"), 32, int(ratio * 1000), 1000, decode, 2.0, 0.1)

    rows = table([timing(0.2, 0.2), timing(0.3, 0.4), timing(0.25, 0.9), timing(10, 5.0)])
    lines = rows.splitlines()
    assert len(lines) == 4  # header, rule, two bands
    assert lines[2] == "| 0 to 0.5 | 3 | 0.400 | 2.000 | 0.100 | 4.0x | kind |"  # medians
    assert lines[3].startswith("| 8 to 16 | 1 | 5.000 |")
