"""Where a folder's health data lives, and the facts of its images kept between checks.

Facts are keyed by path, size and modification time: a rescan of an unchanged folder decodes
nothing, and a file that was replaced or touched is decoded again. Everything lives under the
image cache folder (``<cache>/health/<folder name>-<hash of its path>/``), never in the user's
folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from workbench.core.data.cache_folder import FACTS_FILE
from workbench.core.data.health.image_facts import ImageFacts

_VERSION = 7  # 4: the thumbnails and colours near-duplicate candidates are compared on; 5: the
# detail thumbnails of drawings; 6: a JPEG drawing's detail from a decode of at least 192 px;
# 7: its 48 px thumbnail too


class FactsCache:
    """The facts of earlier checks of one folder, looked up by path, size and mtime."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / FACTS_FILE
        self._facts: dict[str, ImageFacts] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # no earlier check, or an unreadable cache: everything is decoded again
        if isinstance(data, dict) and data.get("version") == _VERSION:
            for entry in data.get("files", []):
                try:
                    facts = ImageFacts.from_dict(entry)
                except TypeError:
                    continue
                self._facts[facts.path] = facts

    def lookup(self, path: str, size_bytes: int, mtime_ns: int) -> ImageFacts | None:
        """The cached facts of ``path`` if the file has not changed since, else None."""
        facts = self._facts.get(path)
        if facts is None or (facts.size_bytes, facts.mtime_ns) != (size_bytes, mtime_ns):
            return None
        return facts

    def save(self, facts: list[ImageFacts]) -> None:
        """Keep exactly ``facts`` (files gone from the folder are forgotten); nothing is
        written when they are what the cache already holds (a rescan of an unchanged folder)."""
        from workbench.core.runs.atomic_io import atomic_write_bytes

        kept = {f.path: f for f in facts}
        if kept == self._facts and self.path.exists():
            return
        self._facts = kept
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": _VERSION, "files": [f.to_dict() for f in facts]})
        # Atomic but not fsynced: a cache lost in a power cut is only decoded again.
        atomic_write_bytes(self.path, text.encode("utf-8"), durable=False)
