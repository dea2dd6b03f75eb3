"""The list of files a run leaves out of training: written from chosen findings, read by the
run's dataset scan. One path a line, relative to the data folder (or absolute); lines starting
with '#' are comments. The user's files are never touched: leaving out only shortens the
run's image list.
"""

from __future__ import annotations

import os
from pathlib import Path

from workbench.core.data.dataset_scan import DatasetError
from workbench.core.data.health.findings import refuse_inside


def write_exclusion_file(path: str | os.PathLike[str], root: str, files: list[str],
                         note: str = "") -> Path:
    """Write ``files`` (sorted, relative to ``root`` where inside it) to ``path``, atomically;
    refuses a ``path`` inside ``root``."""
    from workbench.core.runs.atomic_io import atomic_write_text

    target = Path(path).absolute()
    refuse_inside(target, root)
    lines = [f"# Files left out of training, relative to {os.path.abspath(root)}"]
    if note:
        lines.append(f"# {note}")
    lines += sorted({_relative(file, root) for file in files})
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, "\n".join(lines) + "\n")
    return target


def read_exclusion_file(path: str | os.PathLike[str], root: str) -> set[str]:
    """The absolute, normalised paths listed in ``path``.

    Raises:
        DatasetError: the file cannot be read; the message names it and the reason.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise DatasetError(f"{path}: cannot read the exclusion list ({reason})") from exc
    listed = (line.strip() for line in text.splitlines())
    return {_absolute(line, root) for line in listed if line and not line.startswith("#")}


def _relative(path: str, root: str) -> str:
    absolute, base = os.path.abspath(path), os.path.abspath(root)
    if absolute.startswith(base + os.sep):
        return os.path.relpath(absolute, base)
    return absolute


def _absolute(line: str, root: str) -> str:
    return os.path.normpath(line if os.path.isabs(line) else os.path.join(os.path.abspath(root),
                                                                            line))
