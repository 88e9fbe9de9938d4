"""Text as an output whose encoding cannot write all of it writes it (a C locale, an output encoded
as ASCII or Latin-1): nothing is lost, each character it cannot write comes out as its escape
(``\\xe9``, ``\\u2500``, ``\\U0001f600``, as Python's backslashreplace writes it, and as control
characters are shown). The command line's error handler writes them; a command that cuts text to
a width counts them, so that a row written with escapes is no wider than one written without."""

from __future__ import annotations

import codecs
import functools

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


def written_lengths(text: str, encoding: str) -> list[int]:
    """How many characters each character of ``text`` comes out as, written in ``encoding``."""
    lengths = []
    for char in text:
        if _can_write(char, encoding) or ord(char) in _ESCAPED_BYTES:
            lengths.append(1)
        else:
            lengths.append(len(_text_instead(char, encoding)))
    return lengths


def written_length(text: str, encoding: str | None) -> int:
    """How many characters ``text`` comes out as, written in ``encoding`` (None: each as itself)."""
    if encoding is None or writes_every_character(encoding) or _can_write(text, encoding):
        return len(text)
    return sum(written_lengths(text, encoding))
