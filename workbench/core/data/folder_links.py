"""Which symbolic links a dataset scan follows, and why it skips the others.

People link class folders (and single images) into a data folder rather than copy them, so a
scan follows links, but a link must not change what a class holds:

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
from collections.abc import Callable

from workbench.core.file_names import shown_name


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
