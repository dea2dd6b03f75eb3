"""Shared fixtures: tiny generated image folders on disk, CPU only."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
