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


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_checkpoint_written_onto_a_full_disk_says_so_and_keeps_the_old_file(
        tmp_path, monkeypatch):
    """A full disk (/dev/full fails every write with ENOSPC) raises the OSError whose errno
    names the reason, and leaves the previous file and folder as they were."""
    import errno
    import tempfile

    import torch

    from workbench.core.runs import atomic_io

    target = tmp_path / "last.pt"
    atomic_torch_save({"epoch": 1}, target)
    before = target.read_bytes()
    real_mkstemp = tempfile.mkstemp

    def mkstemp_on_a_full_disk(**kwargs):
        fd, name = real_mkstemp(**kwargs)  # the temp file's name, in the target's folder
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    monkeypatch.setattr(atomic_io.tempfile, "mkstemp", mkstemp_on_a_full_disk)
    with pytest.raises(OSError) as raised:
        atomic_torch_save({"epoch": 2, "weights": torch.zeros(1 << 20)}, target)
    assert raised.value.errno == errno.ENOSPC
    assert "the disk is full" in atomic_io.describe_os_error(raised.value)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt"]  # no temp file left


def test_a_write_that_fails_inside_torchs_writer_is_reported_as_the_os_error(
        tmp_path, monkeypatch):
    """torch's writer turns a failed write of its file into a RuntimeError ("unexpected pos");
    when the disk had room again by the time the file closed, only the OSError under that
    error says why the save failed: it is what is raised."""
    import errno
    import io

    import torch

    from workbench.core.runs import atomic_io

    class FillsOnceAfterOneMegabyte(io.FileIO):
        failed = False

        def write(self, data):
            if not FillsOnceAfterOneMegabyte.failed and self.tell() + len(data) > 1 << 20:
                FillsOnceAfterOneMegabyte.failed = True
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return super().write(data)

    monkeypatch.setattr(atomic_io.os, "fdopen", lambda fd, mode: io.BufferedWriter(
        FillsOnceAfterOneMegabyte(fd, "wb")))
    target = tmp_path / "last.pt"
    with pytest.raises(OSError) as raised:
        atomic_torch_save({"weights": torch.zeros(1 << 20)}, target)
    assert raised.value.errno == errno.ENOSPC and FillsOnceAfterOneMegabyte.failed
    assert list(tmp_path.iterdir()) == []  # no temp file, no half-written target
