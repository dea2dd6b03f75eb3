"""Names as bytes: every byte value, and the characters that break lines, survive
``stored_name`` and ``read_stored_name`` exactly, as one printable UTF-8 line; ``shown_name``
shows them as ``ls -b`` does."""

from __future__ import annotations

import os

import pytest

from workbench.core.file_names import read_stored_name, shown_name, stored_name

# Every byte but "/" and NUL (which no file name holds), as the middle of a name.
EVERY_BYTE = [b"a" + bytes([value]) + b"z.png" for value in range(1, 256) if value != 0x2F]


def test_every_byte_survives_one_line_of_utf8() -> None:
    for name in EVERY_BYTE:
        stored = stored_name(os.fsdecode(name))
        line = stored.encode("utf-8")  # never a surrogate
        assert len(stored.splitlines()) == 1 and stored == stored.strip(), name
        assert os.fsencode(read_stored_name(line.decode("utf-8"))) == name


@pytest.mark.parametrize(("name", "stored"), [
    (b"cat/img.png", "cat/img.png"),  # plain: as it is
    (b"C:\\data\\cat.png", "C:\\data\\cat.png"),  # backslashes of a Windows path, too
    ("caf\u00e9.png".encode(), "caf\u00e9.png"),  # UTF-8 text is plain
    (b"new\nline.png", '"new\\nline.png"'),
    (b"class_\xff/a.png", '"class_\\udcff/a.png"'),
    (b"#1/a.png", '"#1/a.png"'),  # would read as a comment
    (b'"quoted".png', '"\\"quoted\\".png"'),  # would read as a JSON string
    (b" space.png", '" space.png"'),  # a line is stripped
    ("a\u2028b.png".encode(), '"a\\u2028b.png"'),  # str.splitlines splits there
])
def test_a_name_is_written_plain_or_as_a_json_string(name: bytes, stored: str) -> None:
    assert stored_name(os.fsdecode(name)) == stored
    assert os.fsencode(read_stored_name(stored)) == name


def test_a_quoted_line_that_is_not_json_is_read_as_it_is() -> None:
    assert read_stored_name('"unfinished\\"') == '"unfinished\\"'
    assert read_stored_name('"a" and "b"') == '"a" and "b"'


@pytest.mark.parametrize(("name", "shown"), [
    (b"plain.png", "plain.png"),
    (b"bad\xfename.png", "bad\\xfename.png"),
    (b"new\nline\ttab.png", "new\\nline\\ttab.png"),
    (b"bell\x07.png", "bell\\x07.png"),
    ("caf\u00e9.png".encode(), "caf\u00e9.png"),
])
def test_a_message_shows_a_name_escaped_on_one_line(name: bytes, shown: str) -> None:
    assert shown_name(os.fsdecode(name)) == shown
