"""The UTF-8 bytes of a JSON string token, unescaped in one pass without building a ``str``.

A ``didOpen`` carries a whole session as one JSON string: decoding it the usual way builds a
100 MB ``str`` (often 4 bytes a character, for one emoji) only to encode it back to UTF-8.

In valid JSON the escapes are ``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX``. ``codecs.escape_decode``
unescapes all but two of them as JSON does, in C; the two it does not know, ``\\/`` and ``\\u``,
it keeps as they are and warns about (a ``DeprecationWarning``). Raised as an error for the calls
of this module (a warnings filter on its name and the warning's message), that warning tells in
the same pass that the quick way does not apply: searching a 100 MB token for those escapes
beforehand costs about as much again as unescaping it, memory being read once more.

Where the warning cannot be relied on (a Python that words it otherwise or no longer warns: see
:func:`_escape_warning_raises`), the token is searched for them first, as before.
"""

from __future__ import annotations

import codecs
import functools
import re
import warnings
from typing import Any

#: what ``escape_decode`` says of an escape it keeps (``\\u``, ``\\/``); an octal one says "invalid
#: octal escape sequence", which JSON has not
_UNKNOWN_ESCAPE_WARNING = "invalid escape sequence"
#: a backslash before "u" or "/": one of those escapes, or an escaped backslash before the letter
_MAYBE_UNKNOWN_ESCAPE = re.compile(rb"\\[u/]")


#: the filter as ``warnings.filterwarnings`` below puts it in ``warnings.filters``
_FILTER = (
    "error",
    re.compile(_UNKNOWN_ESCAPE_WARNING, re.I),
    DeprecationWarning,
    re.compile(re.escape(__name__)),
    0,
)


def _raise_unknown_escapes() -> None:
    """Make the warning an error for this module's calls, the filter first: a filter added since
    (``simplefilter("ignore")``, a test's own) would otherwise decide first and let a kept escape
    through. Added again only when it is not first: adding one makes every module forget the
    warnings it showed already."""
    if warnings.filters[:1] != [_FILTER]:
        warnings.filterwarnings("error", _UNKNOWN_ESCAPE_WARNING, DeprecationWarning, re.escape(__name__))


def _unescaped(data: Any) -> bytes | None:
    """``data`` (a JSON string's content) unescaped, or None if it holds ``\\u`` or ``\\/``."""
    _raise_unknown_escapes()
    try:
        return codecs.escape_decode(data)[0]
    except DeprecationWarning:
        return None


@functools.cache
def _escape_warning_raises() -> bool:
    """Does an escape ``escape_decode`` keeps end :func:`_unescaped` (checked once a process)?"""
    return (
        _unescaped(b"\\/") is None and _unescaped(b"\\u0041") is None and _unescaped(b'\\\\u\\"') == b'\\u"'
    )


def json_string_bytes(token: Any) -> bytes | None:
    """The UTF-8 bytes of the value of a JSON string token (``"..."``, as ``msgspec.Raw`` holds it,
    which msgspec checked to be valid JSON), or None when the quick way does not apply (a ``\\u``
    or ``\\/`` escape: decode it as JSON). The bytes are not checked to be valid UTF-8 (see
    ``SessionDocument.from_editor_bytes``).
    """
    raw = memoryview(token).cast("B")  # no copy of a 100 MB token
    if len(raw) < 2 or raw[0] != 0x22 or raw[-1] != 0x22:
        return None
    if not _escape_warning_raises() and _MAYBE_UNKNOWN_ESCAPE.search(raw) is not None:
        return None
    return _unescaped(raw[1:-1])
