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
        return a == b
    return False


def index_key(value: Any) -> Any:
    """A hashable key that gives JS ``Map`` key semantics (SameValueZero) to a JSON value.

    Strings (the normal case) are their own key. ``True`` must not collide with ``1``; objects and
    arrays are keyed by identity, as a JS Map does.
    """
    t = type(value)
    if t is str:
        return value
    if value is None or value is ABSENT:
        return value
    if t is bool:
        return ("bool", value)
    if t is int or t is float:
        return ("num", value)
    return ("obj", id(value))


def js_string_of(value: Any) -> str:
    """JS ``String(value)``, used where the reference interpolates an id into a message."""
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
        if isinstance(value, float) and math.isnan(value):
            return "NaN"
        if isinstance(value, float) and math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return js_number(value)
    if isinstance(value, list):
        return ",".join("" if (x is None or x is ABSENT) else js_string_of(x) for x in value)
    return "[object Object]"


def to_number(value: Any) -> float:
    """JS ``Number(value)`` for JSON values (used for version comparisons)."""
    if value is True:
        return 1.0
    if value is False or value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
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
    if isinstance(value, list):
        if not value:
            return 0.0
        if len(value) == 1:
            return to_number(js_string_of(value[0]))
        return math.nan
    return math.nan
