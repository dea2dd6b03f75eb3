"""Fixtures for the engine tests (no Qt)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from PIL import Image, JpegImagePlugin


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


def write_png_with_a_broken_exif_block(path: Path) -> None:
    """A PNG that decodes, but whose EXIF tag points past its data: Pillow warns about it
    ('Tag data larger than file')."""
    entry = struct.pack("<HHII", 0x010E, 2, 100, 1000)  # 100 bytes of text at offset 1000
    exif = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1) + entry + b"\x00" * 4
    buffer = io.BytesIO()
    Image.new("RGB", (40, 32), (200, 10, 10)).save(buffer, "PNG", exif=exif)
    path.write_bytes(buffer.getvalue())


def write_truncated_png(path: Path, size: tuple[int, int] = (40, 32)) -> None:
    """A PNG of noise cut off after two thirds of its bytes: its header reads (so the scan's
    header check lets it through), its pixels do not decode (training finds it)."""
    noise = Image.frombytes("RGB", size, bytes((i * 7919) % 251 for i in range(3 * size[0]
                                                                              * size[1])))
    buffer = io.BytesIO()
    noise.save(buffer, "PNG")
    data = buffer.getvalue()
    path.write_bytes(data[: len(data) * 2 // 3])


@pytest.fixture
def png_with_a_broken_exif_block():
    """``write_png_with_a_broken_exif_block``, for tests in any folder below this one."""
    return write_png_with_a_broken_exif_block
