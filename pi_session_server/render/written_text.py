"""Text as an output whose encoding cannot write all of it writes it (a C locale, an output encoded
as ASCII or Latin-1): nothing is lost, each character it cannot write comes out as its escape
(``\\xe9``, ``\\u2500``, ``\\U0001f600``, as Python's backslashreplace writes it, and as control
characters are shown). The command line's error handler writes them; a command that cuts text to
a width counts the columns of what is written (:func:`written_widths`): the escapes at their
length, so that a row written with escapes is no wider than one written without."""

from __future__ import annotations

import codecs
import functools

from .cells import cells
from .terminal_text import CONTROL_ESCAPES

# U+DC80..U+DCFF: a byte that did not decode (a file name that is not UTF-8), as ``surrogateescape``
# holds it: written back as that byte
_ESCAPED_BYTES = range(0xDC80, 0xDD00)
_SURROGATES = range(0xD800, 0xE000)
_REPLACEMENT = "\ufffd"


def written_instead(char: str, encoding: str) -> bytes:
    """What is written, in ``encoding``, for ``char``, which ``encoding`` cannot write: its escape;
    a lone surrogate as U+FFFD, or as its escape where that cannot be written either; an escaped
    byte as that byte."""
    code = ord(char)
    if code in _ESCAPED_BYTES:
        return bytes([code - 0xDC00])
    return _text_instead(char, encoding).encode(encoding)


def _text_instead(char: str, encoding: str) -> str:
    if ord(char) in _SURROGATES and _can_write(_REPLACEMENT, encoding):
        return _REPLACEMENT
    return char.encode("ascii", "backslashreplace").decode("ascii")


def _can_write(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


@functools.cache
def writes_every_character(encoding: str) -> bool:
    """Whether ``encoding`` writes every character as one (a Unicode encoding: a lone surrogate
    comes out as U+FFFD, one character too), so that text is as long written as it is."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return True  # (never an output's: Python would not have opened it)
    return name.startswith(("utf-8", "utf-16", "utf-32"))


def written_widths(text: str, encoding: str | None) -> list[int]:
    """The columns each character of ``text`` takes on one line of a terminal, written in
    ``encoding`` (None: one that writes every character): a control character as its escape
    (render/terminal_text.py), as is one ``encoding`` cannot write; any other as a terminal draws
    it (render/cells.py: a wide one two, a combining mark none)."""
    # (None: every character written as itself)
    lacking = None if encoding is None or writes_every_character(encoding) else encoding
    if lacking is None and text.isprintable():  # (no control character: each as a terminal draws it)
        return list(map(cells, text))
    widths = []
    for char in text:
        code = ord(char)
        escape = CONTROL_ESCAPES.get(code)
        if escape is not None:
            widths.append(len(escape))
        elif code in _ESCAPED_BYTES:  # (a byte of a name that is not UTF-8: one column, or none)
            widths.append(1)
        elif lacking is None or _can_write(char, lacking):
            widths.append(cells(char))
        else:
            widths.append(len(_text_instead(char, lacking)))
    return widths


def padded(text: str, width: int, encoding: str | None) -> str:
    """``text`` with the spaces that make it ``width`` columns wide as written (a column of a
    table lines up whatever is escaped or wide in it)."""
    return text + " " * (width - written_width(text, encoding))


def written_width(text: str, encoding: str | None) -> int:
    """The columns ``text`` takes on one line of a terminal, written in ``encoding`` (see
    :func:`written_widths`)."""
    if text.isascii() and text.isprintable():  # (nearly every text: a column a character)
        return len(text)
    return sum(written_widths(text, encoding))
