"""Writes that never leave a half-written file: temp file in the same folder, fsync, os.replace."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path | str, data: bytes, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` in one step; readers see the old or the new file, never half.

    ``durable=False`` skips the fsync: for caches, where losing the newest file in a power cut
    only costs recomputing it, and the fsync would dominate the write.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: Path | str, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_torch_save(obj: Any, path: Path | str) -> None:
    """torch.save through a memory buffer, then an atomic replace of the target."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())
