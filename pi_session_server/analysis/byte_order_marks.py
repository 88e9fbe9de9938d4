"""Byte order marks at a session file's start: UTF-8's, which pi cannot parse the header after
(PI014), and those of UTF-16 and UTF-32, encodings pi cannot read at all."""

from __future__ import annotations

BOM_BYTES = b"\xef\xbb\xbf"
# the byte order marks of the encodings pi cannot read, longest first (UTF-32LE's starts as UTF-16LE's)
_OTHER_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32LE"),
    (b"\x00\x00\xfe\xff", "UTF-32BE"),
    (b"\xff\xfe", "UTF-16LE"),
    (b"\xfe\xff", "UTF-16BE"),
)
#: bytes of a file's start that tell its byte order mark (:func:`other_bom`)
BOM_PREFIX_SIZE = 4


def other_bom(data: bytes) -> tuple[bytes, str] | None:
    """The byte order mark ``data`` starts with and the encoding other than UTF-8 it names (UTF-16
    or UTF-32, either order), or None."""
    for mark, encoding in _OTHER_BOMS:
        if data.startswith(mark):
            return mark, encoding
    return None


def utf8_of_marked(data: bytes) -> bytes | None:
    """The UTF-8 of a file whose byte order mark names UTF-16 or UTF-32 (:func:`other_bom`), without
    the mark; None when it has no such mark or does not decode in that encoding, every byte of it."""
    found = other_bom(data[:BOM_PREFIX_SIZE])
    if found is None:
        return None
    mark, encoding = found
    try:
        return data[len(mark) :].decode(encoding).encode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError):  # (a lone surrogate cannot be UTF-8)
        return None
