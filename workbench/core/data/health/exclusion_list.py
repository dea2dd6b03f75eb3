"""The list of files a run leaves out of training: written from chosen findings, read by the
run's dataset scan. One path a line, relative to the data folder (or absolute); lines starting
with '#' are comments. A name that a line could not hold as it is (a newline, a byte that is
not UTF-8, a leading '#' or '"', a space at either end) is written as a JSON string
(``"class_a/new\\nline.png"``, see ``workbench.core.file_names``); plain lines, such as those of
an older list or one written by hand (``find`` output included: its bytes are read as the disk
names them), read as they always did. The user's files are never touched: leaving out only
shortens the run's image list.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.core.data.dataset_scan import DatasetError, SkippedFile
from workbench.core.data.health.findings import refuse_inside
from workbench.core.file_names import read_stored_name, shown_name, stored_name

# Lines that matched nothing named in the run's message before "and N more".
SHOWN_UNMATCHED = 5


@dataclass(frozen=True)
class ListedFile:
    """One path of an exclusion list and the line it is on."""

    line: int
    path: str  # absolute, normalised


def write_exclusion_file(path: str | os.PathLike[str], root: str, files: list[str],
                         note: str = "") -> Path:
    """Write ``files`` (sorted, relative to ``root`` where inside it) to ``path``, atomically;
    refuses a ``path`` inside ``root``."""
    from workbench.core.runs.atomic_io import atomic_write_text

    target = Path(path).absolute()
    refuse_inside(target, root)
    lines = [f"# Files left out of training, relative to {shown_name(os.path.abspath(root))}",
             '# One path a line; a name with a newline, a byte that is not UTF-8 or a leading '
             '# or " is written as a JSON string ("...")']
    if note:
        lines.append(f"# {shown_name(note)}")
    lines += [stored_name(name) for name in sorted({_relative(file, root) for file in files})]
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, "\n".join(lines) + "\n")
    return target


def read_exclusion_lines(path: str | os.PathLike[str], root: str) -> list[ListedFile]:
    """The paths listed in ``path``, absolute and normalised, with their line numbers.

    Raises:
        DatasetError: the file cannot be read; the message names it and the reason.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or exc
        raise DatasetError(f"{path}: cannot read the exclusion list ({reason})") from exc
    # surrogateescape: a line of raw bytes (a list made with ``find``) names the file the disk
    # names with them.
    text = data.decode("utf-8", errors="surrogateescape")
    listed = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if line and not line.startswith("#"):
            listed.append(ListedFile(number, _absolute(read_stored_name(line), root)))
    return listed


def read_exclusion_file(path: str | os.PathLike[str], root: str) -> set[str]:
    """The absolute, normalised paths listed in ``path``.

    Raises:
        DatasetError: the file cannot be read; the message names it and the reason.
    """
    return {listed.path for listed in read_exclusion_lines(path, root)}


def unmatched_lines_message(exclude_file: str, root: str, left_out: Collection[str],
                            skipped: Sequence[SkippedFile] = ()) -> str | None:
    """The sentence naming the lines of ``exclude_file`` that left out nothing (their path is
    not among ``left_out``, the normalised absolute paths of the images the list removed);
    None when every line matched an image.

    Raises:
        DatasetError: the file cannot be read.
    """
    matched = set(left_out)
    unmatched = [entry for entry in read_exclusion_lines(exclude_file, root)
                 if entry.path not in matched]
    if not unmatched:
        return None
    scan_skipped = {os.path.normpath(os.path.abspath(s.path)) for s in skipped}
    shown = []
    for entry in unmatched[:SHOWN_UNMATCHED]:
        why = "already skipped by the scan" if entry.path in scan_skipped else "no such image"
        shown.append(f"line {entry.line} {shown_name(_relative(entry.path, root))} ({why})")
    more = len(unmatched) - SHOWN_UNMATCHED
    lines = f"{len(unmatched):,} line{'' if len(unmatched) == 1 else 's'}"
    return (f"{shown_name(exclude_file)}: {lines} matched no image of this folder: "
            + "; ".join(shown) + (f"; and {more:,} more" if more > 0 else ""))


def _relative(path: str, root: str) -> str:
    absolute, base = os.path.abspath(path), os.path.abspath(root)
    if absolute.startswith(base + os.sep):
        return os.path.relpath(absolute, base)
    return absolute


def _absolute(line: str, root: str) -> str:
    return os.path.normpath(line if os.path.isabs(line) else os.path.join(os.path.abspath(root),
                                                                            line))
