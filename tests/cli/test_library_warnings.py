"""Library warnings do not reach the terminal raw: a poster past Pillow's pixel limit is
reported once, by workbench, with its file name and size, and Pillow's
DecompressionBombWarning (which names no file) is not printed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

# A real 10,524 x 16,000 poster (168 megapixels; 2 MB as a PNG), past Pillow's 89.5 megapixels.
POSTER = Path("/usr/share/openclipart/png/food/fruit/apple_mateya_01.png")


@pytest.mark.skipif(not POSTER.is_file(), reason="openclipart-png is not installed")
def test_a_poster_past_the_pixel_limit_is_named_by_workbench_not_by_pillow(tmp_path):
    for name, colour in (("red", (200, 30, 30)), ("blue", (30, 30, 200))):
        (tmp_path / "clip" / name).mkdir(parents=True)
        for index in range(3):
            Image.new("RGB", (40 + index, 40), colour).save(tmp_path / "clip" / name /
                                                             f"{index}.png")
    shutil.copyfile(POSTER, tmp_path / "clip" / "red" / "poster.png")
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-m", "workbench", "scan", str(tmp_path / "clip")],
                          capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "DecompressionBombWarning" not in done.stderr
    assert "warnings.warn" not in done.stderr
    assert (f"{tmp_path / 'clip' / 'red' / 'poster.png'}: image too large to decode safely "
            "(10524x16000 = 168,384,000 pixels") in done.stdout
