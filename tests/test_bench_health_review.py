"""The review sheets show each group's first file beside the member most unlike it, over the
grey transparent pixels become, with figures a person can check by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from workbench.bench.health_review_sheets import CELL, main
from workbench.core.transparency import TRANSPARENT_BACKGROUND


def _square(dot: bool = False) -> np.ndarray:
    """16x16 page grey with a black 4x4 square; ``dot`` adds a white 2x2 dot elsewhere."""
    pixels = np.full((16, 16, 3), TRANSPARENT_BACKGROUND, np.uint8)
    pixels[2:6, 2:6] = 0
    if dot:
        pixels[10:12, 10:12] = 255
    return pixels


def test_each_group_shows_its_most_different_member_and_the_figures_are_right(tmp_path: Path,
                                                                              capsys) -> None:
    plain = tmp_path / "plain.png"
    Image.fromarray(_square()).save(plain)
    dotted = tmp_path / "dotted.png"
    Image.fromarray(_square(dot=True)).save(dotted)
    # The same square on a transparent page: over the page grey it is the plain picture.
    rgba = np.zeros((16, 16, 4), np.uint8)
    rgba[2:6, 2:6] = (0, 0, 0, 255)
    transparent = tmp_path / "transparent.png"
    Image.fromarray(rgba, "RGBA").save(transparent)
    report = tmp_path / "health.json"
    report.write_text(json.dumps({"findings": [
        {"kind": "near_duplicate", "items": [
            {"files": [str(plain), str(transparent), str(dotted)]},
            {"files": [str(transparent), str(plain)]}]},
        {"kind": "exact_duplicate", "items": [{"files": [str(plain), str(dotted)]}]},
    ]}))

    assert main([str(report), str(tmp_path / "review")]) == 0

    assert "2 groups, 5 files" in capsys.readouterr().out
    rows = (tmp_path / "review" / "groups.tsv").read_text().splitlines()
    assert rows[0].split("\t")[:5] == ["number", "kind", "members", "mean_difference",
                                       "block_difference"]
    first, second = (row.split("\t") for row in rows[1:])
    assert len(rows) == 3  # the exact duplicates were not asked for
    # Four pixels 128 -> 255 of 256: mean 4 * 127 / 256 = 1.98; the 2x2 block holding the dot
    # differs by 127 on average.
    assert first[:5] == ["0", "near_duplicate", "3", "1.98", "127.0"]
    assert first[6].split(" | ") == [str(plain), str(transparent), str(dotted)]
    assert second[:5] == ["1", "near_duplicate", "2", "0.0", "0.0"]
    sheet = np.asarray(Image.open(tmp_path / "review" / "sheet0.png").convert("L"))
    assert sheet.shape == (CELL + 4, 2 * (30 + 3 * CELL + 20))
    row_one = sheet[:CELL, 30:30 + 3 * CELL]
    first_cell, worst_cell, difference = (row_one[:, i * CELL:(i + 1) * CELL] for i in range(3))
    assert worst_cell.max() == 255 and first_cell.max() == 128  # the dotted one, beside it
    # The dot alone differs: 2x2 of 16x16 source pixels, 18x18 of 150x150 once enlarged.
    assert difference.max() == 255 and (difference > 0).sum() == 18 * 18
    # The second group's first file is the transparent one, shown over the page grey.
    transparent_cell = sheet[:CELL, 30 + 530:30 + 530 + CELL]
    assert set(np.unique(transparent_cell)) == {0, 128}
