"""Atomic writes: durable down to the folder entry, and files that follow the user's umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from workbench.core.runs.atomic_io import atomic_torch_save, atomic_write_bytes, atomic_write_text

posix_only = pytest.mark.skipif(os.name != "posix", reason="umask and folder fsync are POSIX")


@pytest.fixture
def umask_027():
    previous = os.umask(0o027)
    yield 0o027
    os.umask(previous)


@posix_only
def test_the_folder_is_fsynced_after_the_replace(tmp_path, monkeypatch):
    synced: list[tuple[str, bool]] = []  # (what, is a folder) in call order
    real_fsync, real_replace = os.fsync, os.replace

    def recording_fsync(fd: int) -> None:
        synced.append(("fsync", stat.S_ISDIR(os.fstat(fd).st_mode)))
        real_fsync(fd)

    def recording_replace(src, dst) -> None:
        synced.append(("replace", False))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    atomic_write_text(tmp_path / "config.json", "{}")

    # The data reaches the disk before the rename, and the rename itself (an entry in the
    # folder) after it: otherwise a power cut can leave the old file or an empty one.
    assert synced == [("fsync", False), ("replace", False), ("fsync", True)]
    assert (tmp_path / "config.json").read_text() == "{}"


@posix_only
def test_written_files_follow_the_umask_like_any_new_file(tmp_path, umask_027):
    reference = tmp_path / "made_by_open.txt"
    reference.write_text("x")
    atomic_write_bytes(tmp_path / "a.bin", b"data")
    atomic_torch_save({"x": 1}, tmp_path / "b.pt")
    atomic_write_text(tmp_path / "a.bin", "replaced")  # a replaced file too

    expected = stat.S_IMODE(reference.stat().st_mode)
    assert expected == 0o640
    for name in ("a.bin", "b.pt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == expected, name


@posix_only
def test_a_stricter_umask_is_followed_too(tmp_path):
    previous = os.umask(0o077)
    try:
        atomic_write_text(Path(tmp_path) / "private.txt", "secret")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "private.txt").stat().st_mode) == 0o600
