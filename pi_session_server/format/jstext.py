"""Text handling the JavaScript way (docs/FORMAT.md §2.4): the ``trim`` whitespace set and line splitting.

Python's ``str.strip()`` and ``str.splitlines()`` use different character sets; never use them on
session text.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "JS_WHITESPACE",
    "as_displayed",
    "is_js_blank",
    "js_trim",
    "split_listing_lines",
    "split_load_lines",
]

#: Exactly what ``String.prototype.trim`` removes (WhiteSpace + LineTerminator in ECMAScript).
JS_WHITESPACE: Final[str] = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)

# (compiled by its first use, through re's cache: the scan decides blank ASCII lines without it)
_NOT_BLANK = f"[^{re.escape(JS_WHITESPACE)}]"


def as_displayed(text: str) -> str:
    """``text`` as a terminal shows it when Node prints it: a lone UTF-16 surrogate (half of a pair
    cut by a JS ``slice``, the token V8 names in "Unexpected token '\\ud83d'", or one escaped in the
    data) becomes U+FFFD, a pair held as two code points joins up. Display text only: sent as it
    is, a lone surrogate is an escape strict JSON parsers reject (Neovim's ``vim.json``, serde_json,
    msgspec), and Python cannot print it to a UTF-8 stream at all."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # only surrogates fail
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def js_trim(s: str) -> str:
    """``s.trim()``."""
    return s.strip(JS_WHITESPACE)


def is_js_blank(s: str) -> bool:
    """``!s.trim()``: empty or made only of JS whitespace."""
    return re.search(_NOT_BLANK, s) is None


def split_load_lines(text: str) -> list[str]:
    """Physical lines as the loader sees them: split on "\\n" only; a final non-empty remainder
    counts as a line, an empty one (text ending in "\\n", or empty text) does not."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


_LISTING_BREAK = re.compile("\r\n|\r|\n")


def split_listing_lines(text: str) -> list[str]:
    """Lines as Node's ``readline`` yields them (used by listing): breaks are "\\n", "\\r\\n" and a
    lone "\\r"; a final non-empty remainder is a line."""
    lines = _LISTING_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines
