"""The folder of cached resized images: where it is, what it holds, whether it has room.

No torch here: the window shows and clears the cache without loading it. Writing and reading
cached images is ``image_cache``'s business; it asks ``has_room`` before every write, so the
cache never takes the last ``FREE_SPACE_RESERVE`` bytes of its disk (the run's checkpoints need
room more than the cache does).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from workbench.core.units import GIB, byte_amount

# The data health check's files, in health_folder(root): never in the user's folder.
FACTS_FILE = "facts.json"
REPORT_FILE = "health.json"
EXCLUDE_FILE = "exclude.txt"
# The cache writes nothing that would leave less than this free on its disk.
FREE_SPACE_RESERVE = 2 * GIB
# Names the cache writes: <2 hex>/<40 hex>.npy, and the temp files of unfinished writes.
_CACHE_SUBFOLDER = re.compile(r"[0-9a-f]{2}")
_CACHE_FILE = re.compile(r"(\.)?[0-9a-f]{40}\.npy(\..*\.tmp)?")


def default_cache_dir() -> Path:
    """Where resized images are cached: ``$WORKBENCH_CACHE_DIR`` or the user's cache folder."""
    override = os.environ.get("WORKBENCH_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    if os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "workbench" / "images"


def folder_identity(root: str | os.PathLike[str]) -> str:
    """The one name of a data folder, however it was typed: its real path (relative parts,
    symbolic links, ``..`` and trailing separators resolved). Every cache key, health result,
    exclusion list, split and run record of the folder uses it, so ``clip``, ``/home/me/clip``,
    ``clip/`` and a link to it are one folder."""
    return os.path.realpath(os.fspath(root))


def health_folder(root: str | os.PathLike[str], cache_dir: str | os.PathLike[str] = "") -> Path:
    """The folder holding ``root``'s health facts, report and exclusion list (keyed by the
    folder's identity, so every spelling of one folder finds the same check)."""
    identity = folder_identity(root)
    tag = hashlib.sha1(os.fsencode(identity)).hexdigest()[:12]
    name = os.path.basename(identity) or "root"
    return Path(cache_dir or default_cache_dir()) / "health" / f"{name}-{tag}"


def health_report_of_run(run_dir: str | os.PathLike[str]) -> Path | None:
    """The health.json of the data folder a run trained on (None when the run's config cannot
    be read); the file itself may not exist."""
    from workbench.core.runs.config import ConfigError, TrainConfig

    try:
        config = TrainConfig.load(run_dir)
    except ConfigError:
        return None
    if not config.data_root:
        return None
    return health_folder(config.data_root, config.cache_dir) / REPORT_FILE


def has_room(folder: str | os.PathLike[str], nbytes: int) -> bool:
    """Whether ``nbytes`` more still leave ``FREE_SPACE_RESERVE`` free on ``folder``'s disk."""
    return free_bytes(folder) - nbytes >= FREE_SPACE_RESERVE


def free_bytes(folder: str | os.PathLike[str]) -> int:
    """Free bytes on the disk that holds ``folder`` (or its nearest existing parent)."""
    path = Path(folder).absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return shutil.disk_usage(path).free


@dataclass(frozen=True)
class CacheUsage:
    """How many cached images a cache folder holds and how many bytes they take."""

    files: int
    bytes: int

    def __add__(self, other: CacheUsage) -> CacheUsage:
        return CacheUsage(self.files + other.files, self.bytes + other.bytes)


def cache_usage(cache_dir: str | os.PathLike[str]) -> CacheUsage:
    """The cache's files and bytes (only the files the cache itself writes count)."""
    return sum((subfolder_usage(f) for f in cache_subfolders(cache_dir)), CacheUsage(0, 0))


def clear_cache(cache_dir: str | os.PathLike[str]) -> CacheUsage:
    """Delete the cached images in ``cache_dir`` and their emptied subfolders; any other file
    is left where it is. Returns what was deleted."""
    return sum((clear_subfolder(f) for f in cache_subfolders(cache_dir)), CacheUsage(0, 0))


def cache_subfolders(cache_dir: str | os.PathLike[str]) -> list[Path]:
    """The cache's own subfolders (two hex digits each); [] when there is no cache yet."""
    try:
        return [entry for entry in Path(cache_dir).iterdir()
                if entry.is_dir() and _CACHE_SUBFOLDER.fullmatch(entry.name)]
    except OSError:
        return []  # no cache yet, or not readable


def subfolder_usage(folder: Path) -> CacheUsage:
    """The cached images in one cache subfolder, a step small enough for the window's thread."""
    files = total = 0
    for entry in _cache_files(folder):
        try:
            total += entry.stat().st_size
            files += 1
        except OSError:
            pass  # removed meanwhile by another run
    return CacheUsage(files, total)


def clear_subfolder(folder: Path) -> CacheUsage:
    """Delete the cached images in one cache subfolder, and the subfolder once it is empty."""
    files = total = 0
    for entry in _cache_files(folder):
        try:
            size = entry.stat().st_size
            entry.unlink()
        except OSError:
            continue
        files += 1
        total += size
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty: it holds something that is not ours
    return CacheUsage(files, total)


def usage_summary(usage: CacheUsage, folder: str | os.PathLike[str]) -> str:
    """'1,234 resized image(s), 1.2 GiB; 60.0 GiB free on that disk (the cache leaves 2.0 GiB
    free)', as the command line and the settings show it."""
    try:
        free = f"{byte_amount(free_bytes(folder))} free on that disk"
    except OSError as exc:
        free = f"free space unknown ({exc.strerror or exc})"
    return (f"{usage.files:,} resized image(s), {byte_amount(usage.bytes)}; {free} "
            f"(the cache leaves {byte_amount(FREE_SPACE_RESERVE)} free)")


def estimated_cache_bytes(images: int, resize_size: int, channels: int) -> int:
    """About how much ``images`` resized photos take in the cache (4:3 assumed)."""
    return images * channels * resize_size * math.ceil(resize_size * 4 / 3)


def cache_messages(cache_dir: str, uncached_images: int, resize_size: int,
                   channels: int) -> list[tuple[str, str]]:
    """(level, text) lines for the run log: where the cache is and whether it has room for
    the ``uncached_images`` of the dataset that it does not hold yet."""
    free = free_bytes(cache_dir)
    room = max(0, free - FREE_SPACE_RESERVE)
    needed = estimated_cache_bytes(uncached_images, resize_size, channels)
    messages = [("info", f"Resized images are cached in {cache_dir} ({byte_amount(free)} free "
                         f"there); `workbench cache` shows its size and clears it.")]
    if needed > room:
        messages.append((
            "warning",
            f"cache_dir: the {uncached_images:,} images of this dataset not cached yet take "
            f"about {byte_amount(needed)} resized, but {cache_dir} has room for "
            f"{byte_amount(room)} (the cache leaves {byte_amount(FREE_SPACE_RESERVE)} free for "
            "checkpoints). Images past that are decoded again every epoch; choose a cache_dir "
            "on a larger disk, lower resize_size, or clear the cache with `workbench cache "
            "--clear`."))
    return messages


def _cache_files(folder: Path) -> Iterator[Path]:
    try:
        names = list(folder.iterdir())
    except OSError:
        return
    yield from (entry for entry in names if _CACHE_FILE.fullmatch(entry.name) and entry.is_file())
