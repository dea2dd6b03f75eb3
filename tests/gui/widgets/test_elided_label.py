"""A label too narrow for its text cuts it after a whole word, with '…', and keeps the whole
text in its tooltip: "choose an…", never "choose an im…"."""

from __future__ import annotations

import pytest

from workbench.gui.widgets.elided_label import ElidedLabel

TEXT = "Cannot start: Data folder (data_root): choose an image folder with one folder per class"


def words_cut_cleanly(shown: str, text: str) -> bool:
    """``shown`` is whole words of ``text`` followed by '…' (punctuation before a cut may go)."""
    kept = shown.removesuffix("\u2026")
    return shown.endswith("\u2026") and text.startswith(kept) and text[len(kept)] in " ,;:"


@pytest.mark.parametrize("max_lines", [1, 2])
def test_a_long_text_is_cut_after_a_word_and_whole_in_the_tooltip(qtbot, max_lines):
    label = ElidedLabel(TEXT, max_lines=max_lines)
    qtbot.addWidget(label)
    metrics = label.fontMetrics()
    # Widths that fall inside a word: the cut lands in 'image', 'folder', 'with', 'class'...
    for chars in range(30, len(TEXT) // max_lines - 2, 7):
        width = metrics.horizontalAdvance(TEXT[:chars])
        lines = label.shown_lines(width)
        last = lines[-1]
        assert len(lines) <= max_lines
        assert all(metrics.horizontalAdvance(line) <= width for line in lines), lines
        flat = " ".join(lines[:-1])
        rest = TEXT[len(flat) + 1:] if flat else TEXT
        assert words_cut_cleanly(last, rest), (chars, lines)
    label.resize(metrics.horizontalAdvance(TEXT[:40]), 200)
    label.show()
    qtbot.waitExposed(label)
    assert label.is_elided()
    assert label.toolTip() == TEXT


def test_a_text_that_fits_is_shown_whole_with_no_tooltip(qtbot):
    label = ElidedLabel("Cannot start: no folder")
    qtbot.addWidget(label)
    label.resize(label.fontMetrics().horizontalAdvance("Cannot start: no folder") + 10, 30)
    assert label.shown_text() == "Cannot start: no folder"
    assert not label.is_elided() and label.toolTip() == ""


def test_a_first_word_longer_than_the_line_is_cut_where_it_must_be(qtbot):
    path = "/home/someone/a_very_long_folder_name_without_any_spaces_at_all/photos"
    label = ElidedLabel(path)
    qtbot.addWidget(label)
    width = label.fontMetrics().horizontalAdvance(path[:20])
    shown = label.shown_lines(width)[0]
    assert shown.endswith("\u2026") and path.startswith(shown[:-1]) and len(shown) > 5
