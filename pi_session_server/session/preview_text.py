"""JavaScript's string rules pi's tree selector makes its previews with: lengths and cuts counted in
UTF-16 code units, ``String(value)`` as a template shows it, a text on one line."""

from __future__ import annotations

from typing import Any

from ..format.jstext import js_trim
from ..format.jsvalue import ABSENT, js_string_of

PREVIEW_LIMIT = 200


def utf16_slice(text: str, limit: int) -> str:
    """``text.slice(0, limit)`` counting UTF-16 code units, as JS does."""
    if len(text) <= limit // 2 or (len(text) <= limit and text.isascii()):
        return text[:limit]
    head = text[:limit]
    if head.isascii():  # one unit per character: the first `limit` units
        return head
    # the first `limit` characters hold at least `limit` units: the rest of a long text is not encoded
    units = text[:limit].encode("utf-16-le", "surrogatepass")
    if len(text) <= limit and len(units) <= 2 * limit:
        return text
    return units[: 2 * limit].decode("utf-16-le", "surrogatepass")


def utf16_longer(text: str, limit: int) -> bool:
    """``text.length > limit`` in JS (UTF-16 code units: a character beyond the BMP counts two)."""
    if len(text) > limit:
        return True
    if 2 * len(text) <= limit or text.isascii():
        return False
    return len(text.encode("utf-16-le", "surrogatepass")) > 2 * limit


def normalize(text: str) -> str:
    """``text`` on one line, trimmed: its line feeds and tabs made spaces."""
    return js_trim(text.replace("\n", " ").replace("\t", " "))


def js_str(value: Any) -> str:
    """``String(value)`` as a template literal shows a JSON value (an object: ``[object Object]``)."""
    return (
        js_string_of(value)
        if isinstance(value, (str, int, float, bool, list)) or value is None or value is ABSENT
        else "[object Object]"
    )
