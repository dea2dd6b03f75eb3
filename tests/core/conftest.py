"""Fixtures for the engine tests (no Qt)."""

from __future__ import annotations

import pytest
from PIL import JpegImagePlugin


@pytest.fixture
def draft_scales(monkeypatch) -> list[int]:
    """The DCT scale denominators libjpeg was asked for by every JPEG ``draft`` call."""
    scales: list[int] = []
    original_draft = JpegImagePlugin.JpegImageFile.draft

    def spy(self, mode, size):
        result = original_draft(self, mode, size)
        scales.append(self.decoderconfig[0])
        return result

    monkeypatch.setattr(JpegImagePlugin.JpegImageFile, "draft", spy)
    return scales
