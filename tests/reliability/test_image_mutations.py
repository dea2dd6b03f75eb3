"""Bit flips and truncations of valid JPEG, PNG and WebP files never crash or hang a door."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from workbench.bench.image_fuzz import fuzz_images, mutate


@pytest.mark.filterwarnings("ignore::UserWarning")  # Pillow's "Corrupt EXIF data" and the like
def test_mutated_images_are_decoded_or_reported_never_crash(tmp_path: Path) -> None:
    report = fuzz_images(seed=0, count=300, folder=tmp_path)

    assert report.tried == 300
    assert report.crashes == []
    assert report.unreported == []
    assert report.accepted + report.rejected == report.tried
    # Both outcomes occur, so the loop really exercises the decoders' error paths.
    assert report.accepted > 20 and report.rejected > 20
    assert report.slowest_seconds < 3.0, report.slowest_case  # a hang guard, not a speed test


def test_mutations_change_the_file_and_repeat_with_the_seed() -> None:
    data = bytes(range(256)) * 8
    first = [mutate(data, random.Random(5)) for _ in range(3)]
    again = [mutate(data, random.Random(5)) for _ in range(3)]
    assert first == again
    assert all(mutant != data for _, mutant in first)
