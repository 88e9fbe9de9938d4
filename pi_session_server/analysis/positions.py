"""Column conversion between byte offsets in a line (the analysis unit) and an editor's columns.

LSP counts a column in the negotiated position encoding: UTF-16 code units (VS Code, the default),
UTF-8 bytes (Neovim offers it first) or UTF-32 code points. Lines are a document's ``bytes``.
Fast paths: UTF-8 is the identity; an ASCII line is the identity in every encoding; a line
without astral characters has as many UTF-16 units as code points. An offset inside a character
stands for that character's start, both ways.
"""

from __future__ import annotations

import codecs
import re
import threading
from typing import Final

UTF8: Final = "utf-8"
UTF16: Final = "utf-16"
UTF32: Final = "utf-32"

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_UTF8_DECODER = codecs.getincrementaldecoder("utf-8")


def _is_continuation(raw: bytes, offset: int) -> bool:
    return offset < len(raw) and (raw[offset] & 0xC0) == 0x80


def char_end(raw: bytes, offset: int) -> int:
    """Where the character starting at byte ``offset`` of ``raw`` ends (``offset`` at the end)."""
    end = min(offset + 1, len(raw))
    while _is_continuation(raw, end):
        end += 1
    return end


def text_end(raw: bytes) -> int:
    """Where the text of line ``raw`` ends: before the ``\r`` of a ``\r\n`` line break, which an
    editor counts as part of the break, not of the line (a range past it ends on the next line)."""
    return len(raw) - 1 if raw.endswith(b"\r") else len(raw)


def _utf8_boundary(raw: bytes, offset: int) -> int:
    """Move ``offset`` back to the start of the UTF-8 sequence it falls into."""
    offset = max(0, min(offset, len(raw)))
    while 0 < offset < len(raw) and (raw[offset] & 0xC0) == 0x80:
        offset -= 1
    return offset


def to_column(raw: bytes, offset: int, encoding: str, errors: str = "surrogatepass") -> int:
    """Byte ``offset`` in line ``raw`` as a column in ``encoding``."""
    offset = max(0, min(offset, len(raw)))
    inside = _is_continuation(raw, offset)
    if encoding == UTF8 and not inside:
        return offset
    if raw[:offset].isascii():
        return offset
    # A line can be an image's megabytes of base64 after one non-ASCII character: all but the last
    # piece of the prefix are counted piece by piece, split where a character starts (so each decodes
    # as it does in the whole line), and an ASCII piece without decoding it.
    counted = start = 0
    while offset - start > _PIECE:
        end = _piece_end(raw, start)
        if end >= offset:
            break
        piece = raw[start:end]
        if piece.isascii() or encoding == UTF8:
            counted += len(piece)
        else:
            counted += _units(piece.decode("utf-8", errors), encoding)
        start = end
    rest = raw[start:offset]
    if inside:
        # The decoder holds back the bytes of a character cut at the prefix's end, and only them
        # (invalid bytes are decoded as ``errors`` says, as in the whole line).
        decoder = _UTF8_DECODER(errors)
        text = decoder.decode(rest)
        if encoding == UTF8:
            return offset - len(decoder.getstate()[0])
    else:
        text = rest.decode("utf-8", errors)
    return counted + _units(text, encoding)


#: how much of a line :func:`to_column` decodes at once
_PIECE = 1 << 16


def _piece_end(raw: bytes, start: int) -> int:
    """Where the piece of ``raw`` from ``start`` ends: about :data:`_PIECE` bytes on, where no
    character is cut: before a character's first byte, or after three continuation bytes (no
    character has more, so the bytes from there are stray ones)."""
    end = start + _PIECE
    for place in range(end, max(start, end - 4), -1):
        if not _is_continuation(raw, place):
            return place
    if end - 3 > start:
        return end
    end = start + 1  # a piece shorter than the character at its start
    while end < start + 4 and _is_continuation(raw, end):
        end += 1
    return end


def _units(text: str, encoding: str) -> int:
    """The length of ``text`` in ``encoding``'s units (UTF-16 or UTF-32)."""
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
    replaced: list[tuple[int, int]] = []
    if errors == "replace":
        _REPLACED.spans = replaced
    handler = _REPLACE_NOTING if errors == "replace" else errors
    # Only the bytes that can hold the first ``column`` units are decoded (a UTF-16 unit or a code
    # point takes at most 3 or 4 bytes): the cursor near a long line's start costs what it shows.
    # The decoder holds back a character cut at their end, which lies past the column anyway.
    limit = (4 if encoding == UTF32 else 3) * column + 4
    if limit < len(raw):
        text = _UTF8_DECODER(handler).decode(raw[:limit])
    else:
        text = raw.decode("utf-8", handler)
    if encoding == UTF32 or _ASTRAL.search(text) is None:
        index = min(column, len(text))
    else:
        index = _utf16_index(text, column)
    if replaced:
        return _offset_past_replacements(raw, text, index, replaced)
    return len(text[:index].encode("utf-8", "surrogatepass" if errors == "replace" else errors))


# A file read from disk keeps its bytes; its invalid runs are each one U+FFFD to the editor, whose
# own three bytes are not in the line: where they were is noted as the line is decoded.
_REPLACE_NOTING: Final = "pi-session-replace-noting"
_REPLACED = threading.local()


def _replace_noting(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    _REPLACED.spans.append((error.start, error.end))
    return "\ufffd", error.end


codecs.register_error(_REPLACE_NOTING, _replace_noting)


def _offset_past_replacements(raw: bytes, text: str, index: int, replaced: list[tuple[int, int]]) -> int:
    """The byte offset in ``raw`` of character ``index`` of ``text``, ``raw`` decoded with each
    invalid run (``replaced``: byte spans, in order) one U+FFFD: the valid runs between them are
    counted by their own characters."""
    chars = done = 0  # characters and bytes of raw before the valid run looked at
    for start, end in replaced:
        run = len(raw[done:start].decode("utf-8", "surrogatepass"))
        if chars + run >= index:
            break
        chars, done = chars + run + 1, end
        if chars >= index:
            return done
    return done + len(text[chars:index].encode("utf-8", "surrogatepass"))


def _utf16_index(text: str, units: int) -> int:
    """The code point index at ``units`` UTF-16 code units into ``text`` (a count that ends inside a
    surrogate pair stands for its character's start, as a column inside a character does in every
    encoding). Counted by the codec, not a loop per character: a line can be an image's megabytes
    of base64. No character is shorter than a unit: the first ``units`` characters hold the place."""
    encoded = text[: max(units, 0)].encode("utf-16-le", "surrogatepass")[: 2 * units]
    decoded = encoded.decode("utf-16-le", "surrogatepass")
    index = len(decoded)
    if index and decoded[-1] != text[index - 1]:  # (the pair's first half: cut off its character)
        index -= 1
    return index
