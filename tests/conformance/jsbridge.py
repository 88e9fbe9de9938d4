"""JavaScript semantics the conformance runner needs to mirror the oracle (run.mjs) exactly.

The oracle is a Node program: it parses scenarios with ``JSON.parse``, walks values with JS
property access, and reports results through ``JSON.stringify``. These helpers give Python values
(and the library's result objects) the same behaviour. Nothing here knows about sessions.
"""

from __future__ import annotations

import datetime
import json
import math
import posixpath
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from pi_session_server.format.jsvalue import ABSENT

from piconf import js_number, js_string

MAX_SAFE = 2**53


class OpError(Exception):
    """An error raised by the runner itself (reported with ``"runnerError": true``)."""


class NotSerializable(Exception):
    """A result that JSON.stringify could not encode."""


# ---------------------------------------------------------------------------
# JSON.parse
# ---------------------------------------------------------------------------


def is_array_index(key: str) -> bool:
    """Whether a JS object enumerates ``key`` first (canonical integer below 2**32 - 1)."""
    return (
        key.isdigit()
        and key.isascii()
        and (key == "0" or key[0] != "0")
        and len(key) <= 10
        and int(key) < 4294967295
    )


def js_ordered(d: dict[str, Any]) -> dict[str, Any]:
    """The dict in JS property order: array-index keys first (ascending), then insertion order."""
    if not any(k[:1].isdigit() and is_array_index(k) for k in d):
        return d
    index_keys = sorted((k for k in d if is_array_index(k)), key=int)
    return {**{k: d[k] for k in index_keys}, **{k: v for k, v in d.items() if not is_array_index(k)}}


def _parse_int(text: str) -> int | float:
    # JSON numbers are doubles: -0 stays negative zero, integers beyond 2**53 round.
    if text == "-0":
        return -0.0
    if len(text.lstrip("-")) > 16:
        return float(text)
    value = int(text)
    return value if abs(value) <= MAX_SAFE else float(value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return js_ordered(dict(pairs))  # duplicate keys: last value wins at the first key's position


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_pairs, parse_int=_parse_int, parse_constant=_reject_constant, strict=True
)


def js_loads(text: str) -> Any:
    """``JSON.parse(text)``; raises ``ValueError`` where JSON.parse throws."""
    try:
        return _DECODER.decode(text)
    except RecursionError as exc:  # V8 parses any depth; we cannot, so say so instead of crashing
        raise ValueError("nesting too deep for the runner's JSON parser") from exc


# ---------------------------------------------------------------------------
# Values and property access
# ---------------------------------------------------------------------------


def is_nullish(value: Any) -> bool:
    return value is None or value is ABSENT


def is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def is_primitive(value: Any) -> bool:
    return value is None or value is ABSENT or isinstance(value, (bool, int, float, str))


def is_object(value: Any) -> bool:
    """``typeof value === "object" && value !== null`` (arrays, mappings, result objects)."""
    return not is_primitive(value)


def js_to_string(value: Any) -> str:
    """JS ``String(value)`` for the values a scenario can contain."""
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
    if is_array(value):
        return ",".join("" if is_nullish(x) else js_to_string(x) for x in value)
    return "[object Object]"


def to_number(value: Any) -> float:
    """JS ``Number(value)`` (enough for slice bounds and Date arguments)."""
    if value is True:
        return 1.0
    if value is False or value is None:
        return 0.0
    if value is ABSENT:
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        s = value.strip(" \t\n\v\f\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff\u2000\u2001\u2002\u2003")
        if s == "":
            return 0.0
        if s in ("Infinity", "+Infinity"):
            return math.inf
        if s == "-Infinity":
            return -math.inf
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", s):
            return float(int(s, 0))
        if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
            return float(s)
        return math.nan
    if is_array(value):
        return to_number(js_to_string(value))
    return math.nan


def to_integer_or_infinity(value: Any) -> float:
    n = to_number(value)
    if math.isnan(n):
        return 0
    if math.isinf(n):
        return n
    return math.trunc(n)


def to_property_key(key: Any) -> str:
    return key if isinstance(key, str) else js_to_string(key)


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    return _CAMEL.sub(r"_\1", name).lower()


def _utf16_units(s: str) -> bytes:
    return s.encode("utf-16-le", "surrogatepass")


def get_property(value: Any, key: Any) -> Any:
    """``value[key]`` for a non-nullish value (ABSENT when the property does not exist).

    Mappings (parsed JSON, the library's entries) are looked up by key; arrays and strings by
    index and ``length``; the library's result objects (tree nodes, contexts) by the snake_case
    attribute, falling back to their ``to_json()`` form.
    """
    key = to_property_key(key)
    if isinstance(value, Mapping):
        return value.get(key, ABSENT)
    if is_array(value):
        if key == "length":
            return len(value)
        if is_array_index(key) and int(key) < len(value):
            return value[int(key)]
        return ABSENT
    if isinstance(value, str):
        units = _utf16_units(value)
        if key == "length":
            return len(units) // 2
        if is_array_index(key) and int(key) < len(units) // 2:
            i = int(key) * 2
            return units[i : i + 2].decode("utf-16-le", "surrogatepass")
        return ABSENT
    if is_primitive(value):
        return ABSENT
    if not key.startswith("_"):
        attr = snake_case(key)
        if hasattr(value, attr):
            found = getattr(value, attr)
            if not callable(found):
                return found
        getter = getattr(value, "get_" + attr, None)
        if callable(getter):  # a manager: JS reads its private field, we ask its accessor
            return getter()
    if hasattr(value, "to_json"):
        return get_property(value.to_json(), key)
    return ABSENT


def has_property(value: Any, key: str) -> bool:
    """``key in value`` for an object value."""
    if isinstance(value, Mapping):
        return key in value
    if is_array(value):
        return key == "length" or (is_array_index(key) and int(key) < len(value))
    if is_primitive(value):
        return False
    if not key.startswith("_") and hasattr(value, snake_case(key)):
        return True
    if hasattr(value, "to_json"):
        plain = value.to_json()
        return isinstance(plain, Mapping) and key in plain
    return False


def as_plain_object(value: Any) -> Any:
    """An object value as a mapping of its JS properties (for ``pick``)."""
    if isinstance(value, Mapping):
        return value
    if hasattr(value, "to_json"):
        return value.to_json()
    return value


# ---------------------------------------------------------------------------
# JSON.stringify
# ---------------------------------------------------------------------------


def date_to_iso(value: datetime.datetime) -> str:
    """``Date.prototype.toISOString`` (naive datetimes are UTC)."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.UTC)
    year = value.year
    y = f"{year:04d}" if 0 <= year <= 9999 else f"{'+' if year > 0 else '-'}{abs(year):06d}"
    return f"{y}-{value:%m-%dT%H:%M:%S}.{value.microsecond // 1000:03d}Z"


def to_jsonable(value: Any) -> Any:
    """``JSON.parse(JSON.stringify(value))`` as Python values (ABSENT for undefined).

    Dicts come out in JS property order with undefined members dropped; undefined in arrays
    becomes null; NaN/Infinity become null; -0 becomes 0; dates become ISO strings; the
    library's result objects are encoded through their ``to_json()``.
    """
    if value is None or value is True or value is False or isinstance(value, str):
        return value
    if value is ABSENT or (callable(value) and not hasattr(value, "to_json")):
        return ABSENT
    if isinstance(value, int):
        return value if abs(value) <= MAX_SAFE else float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        if value == 0:
            return 0
        return int(value) if value.is_integer() and abs(value) <= MAX_SAFE else value
    if hasattr(value, "to_json"):  # (before Mapping: an entry is one, and holds any value)
        return to_jsonable(value.to_json())
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                k = to_property_key(k)
            x = to_jsonable(v)
            if x is not ABSENT:
                out[k] = x
        return js_ordered(out)
    if is_array(value):
        items = [to_jsonable(v) for v in value]
        return [None if x is ABSENT else x for x in items]
    if isinstance(value, datetime.datetime):
        return date_to_iso(value)
    raise NotSerializable(f"cannot encode a {type(value).__name__}")


def js_stringify_compact(value: Any) -> str:
    """``JSON.stringify(value)`` without indentation (for runner error texts)."""
    plain = to_jsonable(value)
    if plain is ABSENT:
        return "undefined"
    return _compact(plain)


def _compact(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return js_number(v)
    if isinstance(v, str):
        return js_string(v)
    if isinstance(v, Mapping):
        return "{" + ",".join(js_string(k) + ":" + _compact(x) for k, x in v.items()) + "}"
    return "[" + ",".join(_compact(x) for x in v) + "]"


# ---------------------------------------------------------------------------
# Node path helpers (POSIX)
# ---------------------------------------------------------------------------


def _normalize(path: str) -> str:
    trailing = path.endswith("/") and path not in ("/", "")
    out = posixpath.normpath(path) if path else "."
    if out.startswith("//"):
        out = "/" + out.lstrip("/")
    return out + "/" if trailing and out != "/" else out


def path_resolve(base: str, path: str) -> str:
    """``path.resolve(base, path)`` (absolute, normalized, no trailing slash)."""
    joined = path if path.startswith("/") else f"{base}/{path}"
    out = _normalize(joined).rstrip("/")
    return out or "/"


def path_join(base: str, path: str) -> str:
    """``path.join(base, path)`` (keeps a trailing slash, like Node)."""
    return _normalize(f"{base}/{path}" if path else base)


_FILE_URL_SAFE = "/;=@!$&'()*+,:-._"


def path_to_file_url(path: str) -> str:
    """``url.pathToFileURL(path).href`` for an absolute POSIX path (Node 20)."""
    # quote() never escapes "~"; Node 20 does
    return "file://" + urllib.parse.quote(path, safe=_FILE_URL_SAFE, errors="surrogatepass").replace(
        "~", "%7E"
    )


def js_slice(items: list[Any], bounds: list[Any]) -> list[Any]:
    """``items.slice(...bounds)``."""
    n = len(items)

    def rel(v: Any, default: int) -> int:
        if v is ABSENT:
            return default
        k = to_integer_or_infinity(v)
        return int(max(n + k, 0)) if k < 0 else int(min(k, n))

    start = rel(bounds[0] if len(bounds) > 0 else ABSENT, 0)
    end = rel(bounds[1] if len(bounds) > 1 else ABSENT, n)
    return items[start:end]


# ---------------------------------------------------------------------------
# new Date(x)
# ---------------------------------------------------------------------------

_ISO_DATE = re.compile(
    r"([+-]\d{6}|\d{4})(?:-(\d\d)(?:-(\d\d))?)?"
    r"(?:T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?(Z|[+-]\d\d:\d\d)?)?"
)
MAX_TIME = 8.64e15
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _parse_date_string(s: str) -> float:
    m = _ISO_DATE.fullmatch(s)
    if not m:
        return math.nan
    year, month, day, hh, mm, ss, frac, zone = m.groups()
    try:
        d = datetime.datetime(int(year), int(month or 1), int(day or 1), tzinfo=datetime.UTC)
    except ValueError:
        return math.nan
    ms = (d - _EPOCH) // datetime.timedelta(milliseconds=1)
    if hh is not None:
        h, mi, sec = int(hh), int(mm), int(ss or 0)
        if h > 24 or mi > 59 or sec > 59 or (h == 24 and (mi or sec or frac)):
            return math.nan
        ms += ((h * 60 + mi) * 60 + sec) * 1000 + int((frac or "0")[:3].ljust(3, "0"))
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            ms -= sign * (int(zone[1:3]) * 60 + int(zone[4:6])) * 60000
        # without an offset a date-time is local time; the runner runs with TZ=UTC
    return float(ms)


def js_date_value(arg: Any) -> float:
    """The time value of ``new Date(arg)`` (NaN for an invalid date)."""
    if isinstance(arg, str):
        t = _parse_date_string(arg)
    elif is_object(arg) and not is_array(arg):
        t = math.nan
    else:
        t = to_number(js_to_string(arg) if is_array(arg) else arg)
    if math.isnan(t) or math.isinf(t) or abs(t) > MAX_TIME:
        return math.nan
    return float(math.trunc(t)) + 0.0
