"""The run report's layout: captions stay inside their own thumbnail's column (a long file
name wraps rather than running under its neighbour), and each export's verdict comes first,
beside its file name, with how it was made and checked after the figures.

Seen in a browser (headless chromium, 1200 px wide): before, a caption such as
'as_pique_jean_victor_bal_.png' ran 60 px into the next thumbnail's caption.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from workbench.core.runs.run_report import _STYLE, _exports_section


def _rule(selector: str) -> dict[str, str]:
    """The declarations of ``selector``'s rule in the report's stylesheet."""
    css = re.sub(r"\s+", " ", _STYLE)
    match = re.search(r"(?:^|\})\s*" + re.escape(selector) + r"\s*\{([^}]*)\}", css)
    assert match is not None, selector
    return {name.strip(): value.strip() for name, _, value in
            (part.partition(":") for part in match.group(1).split(";") if part.strip())}


def test_a_caption_wraps_inside_its_own_thumbnail_column() -> None:
    figure = _rule("figure")
    width = int(figure["width"].removesuffix("px"))
    # A file name has no spaces: only 'anywhere' lets it break inside the figure's width.
    assert figure.get("overflow-wrap") == "anywhere"
    image = _rule("figure img")
    assert int(image["max-width"].removesuffix("px")) <= width


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_each_export_says_its_verdict_first_and_its_checks_last(tmp_path: Path) -> None:
    verdict = ("NOT VERIFIED: validation accuracy 0.512 is 4.7 points below float32's 0.559 "
               "(at most 1 point allowed); kept for inspection")
    how = ("ONNX opset 18; max |difference| from the trained model: 2.10e-06 with "
           "onnxruntime in a fresh process (the float32 file this one was made from)")
    (tmp_path / "export_report.json").write_text(json.dumps({"exports": {"model_int8.onnx": {
        "export_format": "onnx-int8", "size_bytes": 2**20, "val_accuracy": 0.512,
        "top1_agreement": 0.9, "latency_ms_median": 2.0, "images_per_second": 400.0,
        "verified": False, "verdict": verdict, "verification": how}}}))
    cells = _Cells()
    cells.feed(_exports_section(tmp_path))
    header, row = cells.rows
    assert header[:2] == ["file", "verdict"] and header[-1] == "how it was made and checked"
    assert row[:2] == ["model_int8.onnx", verdict] and row[-1] == how
    assert sum("verified" in cell.lower() for cell in row) == 1  # one verdict
