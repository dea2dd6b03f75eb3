"""The one way workbench reads a ``.pt`` file: tensors and plain data only, nothing executed.

Every file goes through ``torch.load(weights_only=True)``, whose unpickler refuses any class
or function outside a small allow-list, so a file from the internet cannot run code by being
opened. TorchScript archives are refused before torch sees them: they are programs, loaded only
when a user asks to predict or verify with a file they chose (see ``workbench.core.models.export``).
"""

from __future__ import annotations

import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch

# How torch's weights_only unpickler names a global it refused to import (old and new wording).
_REFUSED_GLOBAL = re.compile(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)")


class UnsafeOrUnreadableFile(Exception):
    """The file was not loaded; the message is the reason in words (the caller names the file)."""


def load_tensors_file(path: str | Path) -> Any:
    """Load a PyTorch file on the CPU with ``weights_only=True``; never a fallback.

    Raises:
        UnsafeOrUnreadableFile: Missing, a folder, empty, TorchScript, holding objects that
            could run code, truncated, corrupt or not a PyTorch file.
    """
    path = Path(path)
    if _is_torchscript_archive(path):
        raise UnsafeOrUnreadableFile(
            "it is a TorchScript program (an exported model), not weights or a checkpoint; "
            "programs are never run to read weights (use it with 'workbench predict' if you "
            "trust where it came from)")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch.load raises many types; each becomes words below
        raise UnsafeOrUnreadableFile(load_failure_reason(exc, path)) from exc


def load_failure_reason(exc: BaseException, path: Path | None = None) -> str:
    """Why ``torch.load(..., weights_only=True)`` failed, in words a user can act on."""
    if isinstance(exc, FileNotFoundError):
        return "the file does not exist"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder, not a file"
    unsafe = _REFUSED_GLOBAL.search(str(exc)) if isinstance(exc, pickle.UnpicklingError) else None
    if unsafe:
        return (f"it holds Python objects ({unsafe.group(1)}) besides tensors and plain data; "
                "loading them could run code, so it was refused (workbench loads files with "
                "weights_only=True only)")
    if path is not None and _neither_zip_nor_pickle(path):
        return "it is corrupt or not a PyTorch file (neither a zip archive nor a pickle)"
    if isinstance(exc, pickle.UnpicklingError) and "Weights only load failed" in str(exc):
        detail = _last_detail(str(exc))
        return (f"it holds data that safe loading (weights_only=True) cannot read ({detail}); "
                "it was refused and nothing in it was run")
    if isinstance(exc, EOFError):
        return "the file is empty or ends early (truncated)"
    if path is not None and zipfile.is_zipfile(path) and not _has_torch_record(path):
        return "it is a zip archive, but not a PyTorch file"
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    detail = f"{type(exc).__name__}: {first_line}" if first_line else type(exc).__name__
    return f"it is truncated, corrupt or not a PyTorch file ({detail})"


def _last_detail(text: str) -> str:
    # torch's message starts with advice on unsafe loading; the actual cause comes after it.
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if "unsupported" in line.lower() or "error" in line.lower()]
    return (causes[-1] if causes else lines[-1])[:200]


def _neither_zip_nor_pickle(path: Path) -> bool:
    # torch.save writes a zip archive; its legacy format and plain pickles start with PROTO.
    try:
        with open(path, "rb") as handle:
            head = handle.read(1)
    except OSError:
        return False
    return head != b"\x80" and not zipfile.is_zipfile(path)


def _zip_names(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.namelist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return []


def _is_torchscript_archive(path: Path) -> bool:
    # torch.jit.save writes code/ and constants.pkl beside data.pkl; torch.save never does.
    if not path.is_file() or not zipfile.is_zipfile(path):
        return False
    names = _zip_names(path)
    return any(name.endswith("/constants.pkl") for name in names) and any(
        "/code/" in name for name in names)


def _has_torch_record(path: Path) -> bool:
    return any(name.endswith("/data.pkl") for name in _zip_names(path))
