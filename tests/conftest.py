"""Shared fixtures: tiny generated image folders on disk, CPU only."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True, scope="session")
def _image_cache_of_the_session():
    """Runs that leave cache_dir empty cache into a folder of this test session, not into the
    user's own image cache (child processes inherit the variable)."""
    folder = tempfile.mkdtemp(prefix="workbench-test-image-cache-")
    previous = os.environ.get("WORKBENCH_CACHE_DIR")
    os.environ["WORKBENCH_CACHE_DIR"] = folder
    yield folder
    if previous is None:
        os.environ.pop("WORKBENCH_CACHE_DIR", None)
    else:
        os.environ["WORKBENCH_CACHE_DIR"] = previous
    shutil.rmtree(folder, ignore_errors=True)
