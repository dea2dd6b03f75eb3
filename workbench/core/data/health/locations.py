"""Where a folder's health data lives: under the image cache folder, never in the folder."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from workbench.core.data.cache_folder import default_cache_dir

FACTS_FILE = "facts.json"
REPORT_FILE = "health.json"
EXCLUDE_FILE = "exclude.txt"


def health_folder(root: str | os.PathLike[str], cache_dir: str | os.PathLike[str] = "") -> Path:
    """The folder holding ``root``'s health facts, report and exclusion list."""
    absolute = os.path.abspath(os.fspath(root))
    tag = hashlib.sha1(absolute.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    name = os.path.basename(absolute.rstrip(os.sep)) or "root"
    return Path(cache_dir or default_cache_dir()) / "health" / f"{name}-{tag}"
