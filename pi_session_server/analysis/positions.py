"""Column conversion between byte offsets in a line (the analysis unit) and an editor's columns.

LSP counts a column in the negotiated position encoding: UTF-16 code units (VS Code, the default),
UTF-8 bytes (Neovim offers it first) or UTF-32 code points. Lines are a document's ``bytes``.
Fast paths: UTF-8 is the identity; an ASCII line is the identity in every encoding; a line
without astral characters has as many UTF-16 units as code points.
"""

from __future__ import annotations

import re
from typing import Final

UTF8: Final = "utf-8"
UTF16: Final = "utf-16"
UTF32: Final = "utf-32"

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _utf8_boundary(raw: bytes, offset: int) -> int:
    """Move ``offset`` back to the start of the UTF-8 sequence it falls into."""
    offset = max(0, min(offset, len(raw)))
    while 0 < offset < len(raw) and (raw[offset] & 0xC0) == 0x80:
        offset -= 1
    return offset


def to_column(raw: bytes, offset: int, encoding: str, errors: str = "surrogatepass") -> int:
    """Byte ``offset`` in line ``raw`` as a column in ``encoding``."""
    offset = max(0, min(offset, len(raw)))
    if encoding == UTF8:
        return offset
    prefix = raw[:offset]
    if prefix.isascii():
        return offset
    text = prefix.decode("utf-8", errors)
    if encoding == UTF32 or _ASTRAL.search(text) is None:
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


def to_offset(raw: bytes, column: int, encoding: str, errors: str = "surrogatepass") -> int:
    """A column in ``encoding`` as a byte offset in line ``raw`` (clamped to the line; a column
    inside a character moves to that character's start)."""
    column = max(0, column)
    if encoding == UTF8:
        return _utf8_boundary(raw, column)
    if raw.isascii():
        return min(column, len(raw))
    text = raw.decode("utf-8", errors)
    if encoding == UTF32 or _ASTRAL.search(text) is None:
        index = min(column, len(text))
    else:
        index = _utf16_index(text, column)
    return len(text[:index].encode("utf-8", errors if errors != "replace" else "surrogatepass"))


def _utf16_index(text: str, units: int) -> int:
    """The code point index at ``units`` UTF-16 code units into ``text``."""
    count = 0
    for i, ch in enumerate(text):
        if count >= units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(text)
