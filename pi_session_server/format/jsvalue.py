"""The value model: parsed JSON as Python builtins, plus ABSENT for JavaScript's ``undefined``.

pi never validates what it reads; it works on whatever ``JSON.parse`` produced. We mirror that with
plain Python values: ``dict`` (insertion-ordered, like a JS object except for integer-like keys,
which the serializer moves first), ``list``, ``str`` (may hold lone surrogates), ``int``/``float``
(JS doubles; integers beyond 2**53 and integral floats are formatted the JS way on output),
``bool`` and ``None``. A key that an object does not have reads as :data:`ABSENT`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final


class _Absent:
    """JavaScript ``undefined``: equal only to itself, falsy, omitted from JSON objects."""

    __slots__ = ()
    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Final[Any] = _Absent()


def get(value: Any, key: str) -> Any:
    """``value[key]`` with JS semantics: ABSENT when ``value`` is not an object or lacks ``key``."""
    if isinstance(value, Mapping):
        return value.get(key, ABSENT)
    return ABSENT


def is_object(value: Any) -> bool:
    """A JSON object (arrays and null are not objects)."""
    return isinstance(value, Mapping)


def truthy(value: Any) -> bool:
    """JS truthiness: ABSENT, None, False, 0, -0, NaN and "" are falsy; everything else is truthy."""
    if value is None or value is ABSENT or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, str):
        return value != ""
    if isinstance(value, (int, float)):
        return not (value == 0 or (isinstance(value, float) and math.isnan(value)))
    return True


def nullish(value: Any) -> bool:
    """``value == null`` in JS: ABSENT or None."""
    return value is None or value is ABSENT


def coalesce(value: Any, default: Any) -> Any:
    """``value ?? default``."""
    return default if (value is None or value is ABSENT) else value


def strict_equal(a: Any, b: Any) -> bool:
    """``a === b`` for JSON values (objects compare by identity, bool is not a number)."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is str or tb is str:
        return ta is tb and a == b
    if ta is bool or tb is bool:
        return False
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    return False


_MAX_SAFE_INTEGER = 2**53  # every integer up to this magnitude is exactly a double


def index_key(value: Any) -> Any:
    """A hashable key that gives JS ``Map`` key semantics (SameValueZero) to a JSON value.

    Strings (the normal case) are their own key. ``True`` must not collide with ``1``; objects and
    arrays are keyed by identity, as a JS Map does. Numbers are keyed by the double JS holds: an
    ``int`` beyond 2**53 (a parser may keep it exact) by its nearest double, so the same digits find
    the same entry whichever way they were read (#5); NaN is one key, as SameValueZero wants.
    """
    t = type(value)
    if t is str:
        return value
    if value is None or value is ABSENT:
        return value
    if t is bool:
        return ("bool", value)
    if t is int:
        return ("num", as_js_number(value))
    if t is float:
        return ("num", value) if value == value else ("num", "NaN")
    return ("obj", id(value))


def as_js_number(value: Any) -> Any:
    """A JSON value as JS holds it: an ``int`` beyond 2**53 (msgspec and our exact parser keep it
    exact) becomes its nearest double; anything else is itself."""
    if type(value) is int and not -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        return _nearest_double(value)
    return value


def _nearest_double(n: int) -> float:
    """The double JS holds for the integer ``n`` (±Infinity beyond the double range)."""
    try:
        return float(n)
    except OverflowError:
        return math.inf if n > 0 else -math.inf


def js_string_of(value: Any, limit: int | None = None) -> str:
    """JS ``String(value)``, used where the reference interpolates an id into a message.

    ``limit``: return at most that many characters (the start of the string), without building the
    rest; for a text that only feeds a short message. Arrays nested any depth are handled without
    recursion (#16).
    """
    if type(value) is str:
        return value if limit is None else value[:limit]
    text = _join_array(value, limit) if isinstance(value, list) else _scalar_string(value)
    return text if limit is None else text[:limit]


def _scalar_string(value: Any) -> str:
    """``String(value)`` of anything but an array."""
    from .jsjson import js_number  # local import: jsjson depends on this module

    if isinstance(value, str):
        return value
    if value is ABSENT:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return js_number(value)  # NaN, ±Infinity, exponents and big integers the JS way
    return "[object Object]"


def _join_array(array: list[Any], limit: int | None) -> str:
    """``String(array)``, which is ``array.join(",")``: elements separated by ",", null and undefined
    as "", a nested array by the same rule in place. Iterative: one stack entry per open array.

    An array met again inside itself (JSON never makes one) gives "", as V8's join does.
    """
    pieces: list[str] = []
    length = 0
    stack = [enumerate(array)]
    open_ids = [id(array)]  # the arrays being joined, outermost first (parallel to stack)
    open_set = {id(array)}
    while stack:
        for index, element in stack[-1]:
            if index:
                pieces.append(",")
                length += 1
            if isinstance(element, list):
                if id(element) not in open_set:
                    stack.append(enumerate(element))
                    open_ids.append(id(element))
                    open_set.add(id(element))
                    break
            elif element is not None and element is not ABSENT:
                piece = _scalar_string(element)
                pieces.append(piece)
                length += len(piece)
            if limit is not None and length >= limit:
                return "".join(pieces)
        else:
            stack.pop()
            open_set.discard(open_ids.pop())
    return "".join(pieces)


def to_number(value: Any) -> float:
    """JS ``Number(value)`` for JSON values (used for version comparisons)."""
    if value is True:
        return 1.0
    if value is False or value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return _string_to_number(value)
    if isinstance(value, list):  # Number([x]) is Number(String([x])): [null] and [[]] are 0, like []
        return to_number(js_string_of(value))
    return math.nan


def _string_to_number(value: str) -> float:
    """JS ``Number(string)``."""
    s = value.strip(
        " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
    )
    if s == "":
        return 0.0
    try:
        if s[:2].lower() in ("0x", "0o", "0b"):
            return float(int(s, 0))
        if s in ("Infinity", "+Infinity"):
            return math.inf
        if s == "-Infinity":
            return -math.inf
        if any(c not in "0123456789+-.eE" for c in s):
            return math.nan
        return float(s)
    except ValueError:
        return math.nan
