"""File names as the disk holds them, written into text files and messages without loss.

On Linux a file name is bytes: it may hold a newline, a tab, or bytes that are not UTF-8
(an archive unzipped from another system). Python hands such a name over as ``str`` with the
bad bytes as lone surrogates (``os.fsdecode``'s surrogateescape), which UTF-8 refuses to
encode and which a line-based file would split. Two forms keep them:

- ``stored_name`` for files the app writes and reads back (exclusion lists, CSV cells, TSV
  lines): the name itself when it is plain printable text, else a JSON string literal
  (``"new\\nline.png"``, ``"class_\\udcff/img.png"``) that ``read_stored_name`` undoes exactly.
  Plain names, Windows paths with backslashes included, are written as they are, so a list
  written by hand or by an older version reads the same.
- ``shown_name`` for messages: each byte that is not text shown as ``\\xff`` and each control
  character as ``\\n``, ``\\t`` or ``\\x07``, as ``ls -b`` shows them; recognisable, one line,
  never an encoding error.
"""

from __future__ import annotations

import json
import unicodedata

# Categories that break a line, a terminal or UTF-8: control characters (newline, tab, ...),
# lone surrogates (bytes that are not UTF-8), and the Unicode line and paragraph separators
# that str.splitlines also splits at.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def is_plain_name(text: str) -> bool:
    """True when ``text`` survives a line-based UTF-8 file as it is: printable, not quoted,
    not a comment, no space at either end."""
    if not text or text != text.strip() or text[0] in "\"#":
        return False
    return text.isprintable() or not any(unicodedata.category(char) in _UNSAFE_CATEGORIES
                                         for char in text)


def stored_name(text: str) -> str:
    """``text`` as one line of printable UTF-8 that ``read_stored_name`` turns back into it."""
    if is_plain_name(text):
        return text
    parts = ['"']
    for char in text:
        if char in '"\\':
            parts.append("\\" + char)
        elif char in _SHORT_ESCAPES:
            parts.append(_SHORT_ESCAPES[char])
        elif unicodedata.category(char) in _UNSAFE_CATEGORIES:
            parts.append(f"\\u{ord(char):04x}")
        else:
            parts.append(char)
    parts.append('"')
    return "".join(parts)


def read_stored_name(text: str) -> str:
    """The name ``stored_name`` wrote as ``text``; a plain name (or a quoted one that is not a
    JSON string, from a list written by hand) is returned as it is."""
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        try:
            value = json.loads(text)
        except ValueError:
            return text
        if isinstance(value, str):
            return value
    return text


def shown_name(text: str) -> str:
    """``text`` for a message: bytes that are not UTF-8 as ``\\xff``, control characters as
    ``\\n`` or ``\\x07``; everything printable as it is."""
    if text.isprintable() or all(unicodedata.category(char) not in _UNSAFE_CATEGORIES
                                 for char in text):
        return text
    parts = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode
            parts.append(f"\\x{code - 0xDC00:02x}")
        elif char in _SHORT_ESCAPES:
            parts.append(_SHORT_ESCAPES[char])
        elif unicodedata.category(char) in _UNSAFE_CATEGORIES:
            parts.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            parts.append(char)
    return "".join(parts)
