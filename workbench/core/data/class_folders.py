"""What a class folder holds: which entries are images, which are clutter, which links a scan
follows, and why it skips the others.

Images are listed recursively (subfolders of a class folder count), with ``os.scandir`` and no
pixel decoded unless asked to. People link class folders (and single images) into a data folder
rather than copy them, so a scan follows links, but a link must not change what a class holds:

- a link to a folder that contains the folder it is in (``class_a/loop -> ..``) is a loop: it
  would file the whole data folder, other classes included, under ``class_a``;
- a link into another class folder of the same data folder (or to a folder holding one) would
  give that class's images a second label;
- a link to a file or folder the class already lists is the same images twice.

Each skipped link becomes a ``SkippedFile`` of the scan with one of these reasons. Real paths
are only worked out when a link is met, so a folder without links costs nothing more.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from workbench.core.file_names import shown_name

# torchvision.datasets.folder.IMG_EXTENSIONS, written out (importing torchvision takes seconds,
# and the GUI scans folders long before it needs torch), plus .gif, whose first frame is used.
IMG_EXTENSIONS = (
    ".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp", ".gif"
)

# Folders and files that operating systems, archivers and tools leave behind: never a class,
# never an image, not worth a line in the skipped list. Folders starting with "." are also
# ignored (.git, .ipynb_checkpoints), as are AppleDouble "._name" files from macOS zips.
SYSTEM_FOLDERS = frozenset(
    {"__MACOSX", "__pycache__", "@eaDir", "$RECYCLE.BIN", "System Volume Information"}
)
SYSTEM_FILES = frozenset({".DS_Store", "Thumbs.db", "ehthumbs.db", "desktop.ini", "Icon\r"})


class DatasetError(Exception):
    """The folder cannot be used as a dataset; the message names the folder and the reason."""


@dataclass(frozen=True)
class SkippedFile:
    """A file the scan left out, and why."""

    path: str
    reason: str


def list_folder(folder: str) -> tuple[list[str], list[str]]:
    """Names of the subfolders and of the files directly inside ``folder``."""
    folders: list[str] = []
    files: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                (folders if _is_dir(entry) else files).append(entry.name)
    except OSError as exc:
        raise DatasetError(f"{folder}: cannot list folder ({exc.strerror or exc})") from exc
    return folders, files


def class_folder_names(folder: str, subfolders: list[str],
                 skipped: list[SkippedFile] | None = None) -> list[str]:
    """The class folders among ``subfolders``, sorted; a linked one that would loop or repeat
    another class (``linked_class_problems``) is left out, with its reason in ``skipped``."""
    names = candidate_classes(subfolders)
    problems = linked_class_problems(folder, names)
    if skipped is not None:
        skipped.extend(SkippedFile(os.path.join(folder, name), reason)
                       for name, reason in problems.items())
    names = [name for name in names if name not in problems]
    if not names:
        raise DatasetError(
            f"{shown_name(folder)}: no class subfolders; put each class's images in a folder "
            f"of its own ({shown_name(folder)}/<class>/image.jpg)"
        )
    return names


def candidate_classes(subfolders: list[str]) -> list[str]:
    return sorted(name for name in subfolders if not is_ignored_folder(name))



def collect_class(folder: str, verify: bool, skipped: list[SkippedFile]) -> list[str]:
    """Every usable image under ``folder``, recursively, sorted by path.

    Links are followed as the rules at the top of this module allow. The folders reached
    without a link are listed first, then the links, so each real file is listed once, under
    its own path where the class holds it; a link into a loop or another class folder is
    skipped with its reason.
    """
    walk = _ClassWalk(folder, verify, skipped)
    walk.run()
    return sorted(walk.found)


class _ClassWalk:
    """The listing of one class folder (see ``collect_class``)."""

    def __init__(self, folder: str, verify: bool, skipped: list[SkippedFile]) -> None:
        self.verify = verify
        self.skipped = skipped
        self.found: list[str] = []
        self.guard = LinkGuard(
            folder, lambda: candidate_classes(list_folder(os.path.dirname(folder))[0]))
        self.folders = [(folder, False)]  # (folder, reached through a link)
        self.links: list[os.DirEntry[str]] = []  # followed once the folders are listed
        self.seen_dirs: set[tuple[int, int]] = set()
        self.seen_files: set[tuple[int, int]] = set()

    def run(self) -> None:
        problem = self.guard.class_folder_problem()  # a val/ class that is a link, say
        if problem:
            self.skipped.append(SkippedFile(self.folders.pop()[0], problem))
        while self.folders or self.links:
            if self.folders:
                self._list(*self.folders.pop())
            elif _is_dir(self.links[-1]):
                self._list(self.links.pop().path, True)
            else:
                self._add_image(self.links.pop(), via_link=True)

    def _list(self, current: str, via_link: bool) -> None:
        try:
            info = os.stat(current)
        except OSError:
            return
        if (info.st_dev, info.st_ino) in self.seen_dirs:
            self.skipped.append(SkippedFile(
                current, "link to a folder this class already lists: not followed"))
            return
        self.seen_dirs.add((info.st_dev, info.st_ino))
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    self._sort(entry, current, via_link)
        except OSError as exc:
            raise DatasetError(f"{current}: cannot list folder ({exc.strerror or exc})") from exc

    def _sort(self, entry: os.DirEntry[str], current: str, via_link: bool) -> None:
        """One entry of ``current``: a folder to list, a link to follow later, an image, or
        a skipped file."""
        is_link = _is_link(entry)
        if _is_dir(entry):
            if is_ignored_folder(entry.name):
                return
            reason = self.guard.folder_link_problem(entry.path, current) if is_link else None
            if reason:
                self.skipped.append(SkippedFile(entry.path, reason))
            elif is_link:
                self.links.append(entry)
            else:
                self.folders.append((entry.path, via_link))
            return
        if _is_system_file(entry.name):
            return
        if is_link and _file_problem(entry, self.verify) is None:
            reason = self.guard.file_link_problem(entry.path)
            if reason:
                self.skipped.append(SkippedFile(entry.path, reason))
            else:
                self.links.append(entry)
            return
        self._add_image(entry, via_link)

    def _add_image(self, entry: os.DirEntry[str], via_link: bool) -> None:
        reason = _file_problem(entry, self.verify)
        if reason is not None:
            self.skipped.append(SkippedFile(entry.path, reason))
            return
        info = entry.stat()  # cached by the DirEntry since _file_problem
        key = (info.st_dev, info.st_ino)
        # st_ino is 0 where the system gives no file identity (DirEntry on Windows).
        if via_link and info.st_ino and key in self.seen_files:
            self.skipped.append(SkippedFile(
                entry.path, "link to an image this class already lists: listed once"))
            return
        self.seen_files.add(key)
        self.found.append(entry.path)


def _file_problem(entry: os.DirEntry[str], verify: bool) -> str | None:
    """Why this file cannot be used, or None when it can."""
    name = entry.name
    if name.startswith("."):
        return "hidden file"
    if not is_image_name(name):
        extension = os.path.splitext(name)[1] or "(none)"
        return f"not an image file (extension {extension})"
    try:
        info = entry.stat()  # follows a symlink: a dangling one fails here
    except OSError as exc:
        return f"cannot read file ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"  # a FIFO or device would block the loader forever
    if info.st_size == 0:
        return "empty file (0 bytes)"
    if verify:
        return _identify_problem(entry.path, info.st_size, info.st_mtime_ns)
    return None


@lru_cache(maxsize=200_000)
def _identify_problem(path: str, _size: int, _mtime_ns: int) -> str | None:
    """Why Pillow cannot use this file, judged from its header and size alone. Remembered per
    (path, size, modification time): the Dataset tab, the pre-flight and the run all scan
    with header checks, and each settings change runs the pre-flight again, so an unchanged
    file is opened once a process."""
    # Imported here: Pillow and numpy are not needed by a scan that does not verify.
    from PIL import Image

    from workbench.core.data.image_decoding import (
        ImageDecodeError,
        check_decoded_size,
        decode_failure_reason,
    )

    try:
        with Image.open(path) as image:
            check_decoded_size(image)
    except ImageDecodeError as exc:
        return exc.reason
    except Exception as exc:  # noqa: BLE001 - malformed headers raise all kinds of errors
        return decode_failure_reason(exc)
    return None


def has_images(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(is_image_name(e.name) for e in entries if not _is_dir(e))
    except OSError:
        return False


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def is_ignored_folder(name: str) -> bool:
    return name.startswith(".") or name in SYSTEM_FOLDERS


def _is_system_file(name: str) -> bool:
    return name in SYSTEM_FILES or name.startswith("._")


def is_image_name(name: str) -> bool:
    return name.lower().endswith(IMG_EXTENSIONS)


def _inside(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or lies under it (both real paths)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _last_name(real: str) -> str:
    return shown_name(os.path.basename(real) or real)


def linked_class_problems(tree: str, names: list[str]) -> dict[str, str]:
    """Class folder name -> why it is not a class, for the class folders among ``names``
    (folders of ``tree``) that are links to a folder containing ``tree`` or to (a folder in
    or around) another class folder; the first of two links to one folder is kept."""
    links = [name for name in names if os.path.islink(os.path.join(tree, name))]
    if not links:
        return {}
    real_tree = os.path.realpath(tree)
    kept = {name: os.path.realpath(os.path.join(tree, name))
            for name in names if name not in links}
    problems: dict[str, str] = {}
    for name in links:
        real = os.path.realpath(os.path.join(tree, name))
        problem = _folder_problem(real, real_tree, kept)
        if problem:
            problems[name] = problem
        else:
            kept[name] = real
    return problems


def _folder_problem(real: str, real_tree: str, classes: dict[str, str]) -> str | None:
    if _inside(real_tree, real):
        return (f"link to {_last_name(real)}, a folder that contains the data folder (a "
                "loop): not followed")
    for other, real_other in classes.items():
        if _inside(real, real_other):
            return (f"link into class folder '{shown_name(other)}': not followed, its images "
                    f"stay in '{shown_name(other)}' only")
        if _inside(real_other, real):
            return (f"link to a folder that holds class folder '{shown_name(other)}': not "
                    f"followed, its images stay in '{shown_name(other)}' only")
    return None


class LinkGuard:
    """Judges the links met while listing one class folder (``folder``) of a data folder.

    Args:
        folder: the class folder being listed; its parent is the data folder (or its train/
            or val/ folder).
        class_names: lists the class folders of that parent, called once when the first
            link is met.
    """

    def __init__(self, folder: str, class_names: Callable[[], list[str]]) -> None:
        self.folder = folder
        self.name = os.path.basename(folder)
        self._class_names = class_names
        self._real_tree = ""
        self._other_classes: dict[str, str] | None = None

    def class_folder_problem(self) -> str | None:
        """Why the class folder itself, when it is a link, is not listed (a loop or another
        class folder: ``linked_class_problems``); None when it may be."""
        if not os.path.islink(self.folder):
            return None
        tree = os.path.dirname(self.folder)
        return linked_class_problems(tree, self._class_names()).get(self.name)

    def folder_link_problem(self, link: str, containing: str) -> str | None:
        """Why the folder link ``link`` (met in the folder ``containing``) is not followed,
        or None when it may be."""
        self._learn_classes()
        real = os.path.realpath(link)
        if _inside(os.path.realpath(containing), real):
            return (f"link to {_last_name(real)}, a folder that contains the folder it is in "
                    "(a loop): not followed")
        assert self._other_classes is not None
        return _folder_problem(real, self._real_tree, self._other_classes)

    def file_link_problem(self, link: str) -> str | None:
        """Why the file link ``link`` is not used, or None when it may be."""
        self._learn_classes()
        real = os.path.realpath(link)
        assert self._other_classes is not None
        for other, real_other in self._other_classes.items():
            if _inside(real, real_other):
                return (f"link to an image of class '{shown_name(other)}': not used, it stays in "
                        f"'{shown_name(other)}' only")
        return None

    def _learn_classes(self) -> None:
        if self._other_classes is not None:
            return
        tree = os.path.dirname(self.folder)
        self._real_tree = os.path.realpath(tree)
        names = self._class_names()
        problems = linked_class_problems(tree, names)
        self._other_classes = {n: os.path.realpath(os.path.join(tree, n))
                               for n in names if n != self.name and n not in problems}
