"""JSON exactly as JavaScript's ``JSON.parse`` / ``JSON.stringify`` do it (docs/FORMAT.md §2.2, §2.3).

Both directions have a fast path built on C code (``json``, ``msgspec``) used only where it provably
gives the JavaScript result, and an exact pure-Python path that is iterative, so values of any
nesting depth parse and serialize (D8).

Parse errors carry V8's diagnosis: :class:`JsonSyntaxError` has the position where V8 stops
(``pos``, a Python string index), a short message (``msg``) and V8's full message (``js_message``,
whose position is counted in UTF-16 code units like V8's).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from json.decoder import scanstring as _untyped_scanstring  # type: ignore[attr-defined]  # C function typeshed omits
from json.encoder import encode_basestring as _encode_basestring
from typing import Any, Final, TypeVar

import msgspec

from .jstext import as_displayed
from .jsvalue import ABSENT

__all__ = [
    "READABLE_DEPTH",
    "JsonSyntaxError",
    "dumps",
    "dumps_bytes",
    "dumps_pretty",
    "dumps_short",
    "encode_value",
    "is_array_index_key",
    "js_key_order",
    "js_number",
    "parse",
    "parse_bytes",
]

_scanstring: Callable[[str, int, bool], tuple[str, int]] = _untyped_scanstring

_MAX_SAFE = 2**53
_MAX_ARRAY_INDEX = 4294967294


class JsonSyntaxError(ValueError):
    """``JSON.parse`` rejected the text.

    ``pos``: 0-based index into the parsed ``str`` where V8 stopped; ``msg``: short description
    ("Unexpected token ']'", "Unterminated string", ...); ``js_message``: the message V8 itself
    gives (what ``err.message`` is in Node), with positions in UTF-16 code units.
    """

    def __init__(self, msg: str, pos: int, js_message: str):
        super().__init__(js_message)
        self.msg = msg
        self.pos = pos
        self.js_message = js_message


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def _parse_int(digits: str) -> int | float:
    """A JSON integer literal as a JS number: exact while |n| <= 2**53, else the nearest double."""
    if len(digits) < 16:  # |n| < 10**15 < 2**53
        return int(digits)
    if len(digits) <= 4000:  # stay clear of CPython's int-from-str digit limit
        n = int(digits)
        if -_MAX_SAFE <= n <= _MAX_SAFE:
            return n
    return float(digits)  # correctly rounded; inf beyond the double range, like JS


class _ConstantRejected(Exception):
    """``json`` met NaN/Infinity/-Infinity, which JSON.parse rejects."""


def _reject_constant(_name: str) -> Any:
    raise _ConstantRejected


_fast_loads: Callable[[str], Any] = json.JSONDecoder(
    parse_int=_parse_int, parse_constant=_reject_constant, strict=True
).decode


def parse(text: str) -> Any:
    """``JSON.parse(text)``: raises :class:`JsonSyntaxError` where JavaScript would throw."""
    try:
        return _fast_loads(text)
    except json.JSONDecodeError as err:
        cut = _cut_short(text, err) if _SCANNER_TELLS_CUTS else None
    except (ValueError, _ConstantRejected, RecursionError):
        cut = None  # NaN or Infinity, or too deep for the C scanner
    if cut is None:
        return _Parser(text).parse()  # the exact parser finds V8's error
    # (raised outside the handler, and let go of here: neither the scanner's error nor this frame
    # stays held by it, so no cycle is left for the collector to find, one per cut-off line)
    try:
        raise cut
    finally:
        cut = None


def _cut_short(text: str, err: json.JSONDecodeError) -> JsonSyntaxError | None:
    """V8's error for ``text`` when the C scanner read it to its end without a fault (the start
    of some JSON text, which a write cut short leaves; the scanner takes the text JSON.parse
    takes, so V8 fails at its end too), worded from the scanner's error and the few characters
    that tell V8's states apart that the scanner's words do not; None for any other error, the
    exact parser's. (A cut-off line is common in damaged files, and the exact parser's walk of
    it costs many times the scanner's.)"""
    end = len(text)
    wording = err.msg
    if wording == "Unterminated string starting at":
        # the string runs to the end: a backslash there starts an escape, which ran out
        parser = _Parser(text)
        return parser._unexpected(end) if _escaped(text, end) else parser._fail(end, _UNTERMINATED_STRING)
    if err.pos != end:
        return None
    if wording == "Expecting value":  # after "[", ":", or a "," in an array
        return _Parser(text)._unexpected(end)
    if wording == "Expecting property name enclosed in double quotes":
        last = text[_before_ws(text, end) - 1]
        return _Parser(text)._fail(
            end, _EXPECTED_PROPERTY_OR_RBRACE if last == "{" else _EXPECTED_DOUBLE_QUOTED
        )
    if wording == "Expecting ':' delimiter":
        # V8 words only the first key's missing colon: after a later key, the input ran out
        opening = _string_opening(text, _before_ws(text, end) - 1)
        if text[_before_ws(text, opening) - 1] == "{":
            return _Parser(text)._fail(end, _EXPECTED_COLON)
        return _Parser(text)._unexpected(end)
    if wording == "Expecting ',' delimiter":
        return _after_member(text)
    return None


def _after_member(text: str) -> JsonSyntaxError | None:
    """V8's error for ``text`` cut short after a member of an object or an element of an array,
    told apart by the scanner's reading of it with a "]", which closes only an array."""
    end = len(text)
    try:
        _fast_loads(text + "]")
    except json.JSONDecodeError as probe:
        if probe.pos == end:
            return _Parser(text)._fail(end, _EXPECTED_COMMA_OR_RBRACE)
    except (ValueError, _ConstantRejected, RecursionError):
        return None
    return _Parser(text)._fail(end, _EXPECTED_COMMA_OR_RBRACK)


def _before_ws(text: str, end: int) -> int:
    """``end`` moved back over the JSON white space before it."""
    while end > 0 and text[end - 1] in " \t\n\r":
        end -= 1
    return end


def _string_opening(text: str, closing: int) -> int:
    """Where the string literal whose closing quote is at ``closing`` opens: the quote before it
    that no backslash escapes (a string holds no other)."""
    opening = text.rindex('"', 0, closing)
    while _escaped(text, opening):
        opening = text.rindex('"', 0, opening)
    return opening


def _escaped(text: str, at: int) -> bool:
    """Position ``at`` follows an odd run of backslashes (in a string: the last starts an escape)."""
    backslashes = 0
    while at - backslashes > 0 and text[at - 1 - backslashes] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def parse_bytes(data: bytes | bytearray | memoryview) -> Any:
    """``JSON.parse`` of ``data`` decoded as UTF-8 the Node way (invalid sequences become U+FFFD).

    msgspec is strict (valid UTF-8, no lone-surrogate escapes, JSON grammar); whatever it accepts,
    JSON.parse accepts with the same value (integers beyond 2**53 may stay exact ints; every
    consumer treats them as the nearest double). Anything else takes the exact path.
    """
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):  # not what msgspec accepts, or too deep for it
        return parse(bytes(data).decode("utf-8", "replace"))


_WS_RE = re.compile(r"[ \t\n\r]*")
_ASTRAL_RE = re.compile("[\U00010000-\U0010ffff]")
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_STRING_CHUNK_RE = re.compile(r'[^"\\\x00-\x1f]*')
_HEX = frozenset("0123456789abcdefABCDEF")
_SPECIAL_SOURCES = frozenset({"NaN", "Infinity", "undefined", "[object Object]"})

_EXPECTED_PROPERTY_OR_RBRACE = "Expected property name or '}'"
_EXPECTED_COMMA_OR_RBRACE = "Expected ',' or '}' after property value"
_EXPECTED_COMMA_OR_RBRACK = "Expected ',' or ']' after array element"
_EXPECTED_COLON = "Expected ':' after property name"
_EXPECTED_DOUBLE_QUOTED = "Expected double-quoted property name"
_NON_WHITESPACE_AFTER = "Unexpected non-whitespace character after JSON"
_UNTERMINATED_STRING = "Unterminated string"
_BAD_CONTROL = "Bad control character in string literal"
_BAD_ESCAPE = "Bad escaped character"
_BAD_UNICODE = "Bad Unicode escape"
_NO_NUMBER_AFTER_MINUS = "No number after minus sign"
_UNTERMINATED_FRACTION = "Unterminated fractional number"
_EXPONENT_MISSING = "Exponent part is missing a number"


class _ObjectFrame:
    """An object being parsed and the key whose value comes next."""

    __slots__ = ("key", "obj")

    def __init__(self, obj: dict[str, Any], key: str):
        self.obj = obj
        self.key = key


class _Parser:
    """An iterative port of V8's JsonParser: same values, same error kinds and positions."""

    __slots__ = ("end", "text")

    def __init__(self, text: str):
        self.text = text
        self.end = len(text)

    # ---- errors ------------------------------------------------------------------------------
    # (Error messages of a multi-MB line must not copy it: positions are counted in place.)

    def _utf16_pos(self, pos: int) -> int:
        if self.text.isascii():
            return pos
        return pos + len(_ASTRAL_RE.findall(self.text, 0, pos))

    def _fail(self, pos: int, message: str) -> JsonSyntaxError:
        """An error with a fixed V8 message template ("... in JSON at position N")."""
        where = "at" if message is _NON_WHITESPACE_AFTER else "in JSON at"
        return JsonSyntaxError(message, pos, f"{message} {where} position {self._utf16_pos(pos)}")

    def _unexpected(self, pos: int) -> JsonSyntaxError:
        """V8's ReportUnexpectedCharacter: the message depends on what stands at ``pos``."""
        if pos >= self.end:
            return JsonSyntaxError("Unexpected end of JSON input", self.end, "Unexpected end of JSON input")
        c = self.text[pos]
        if c == '"':
            return self._fail(pos, "Unexpected string")
        if c == "-" or "0" <= c <= "9":
            return self._fail(pos, "Unexpected number")
        if self.text in _SPECIAL_SOURCES:
            message = f'"{self.text}" is not valid JSON'
            return JsonSyntaxError(message, pos, message)
        if c > "\uffff":  # V8 reports the UTF-16 unit under the cursor: the high surrogate
            c = chr(0xD800 + ((ord(c) - 0x10000) >> 10))
        return JsonSyntaxError(f"Unexpected token '{c}'", pos, self._token_message(pos, c))

    def _token_message(self, pos: int, c: str) -> str:
        context = 10
        length = self._utf16_pos(self.end)
        # the units within ``context`` of p lie within ``context`` characters of pos
        window_start = max(0, pos - context)
        offset = self._utf16_pos(window_start)
        units = self.text[window_start : pos + context].encode("utf-16-le", "surrogatepass")
        p = offset + len(self.text[window_start:pos].encode("utf-16-le", "surrogatepass")) // 2

        def sub(a: int, b: int) -> str:
            return units[2 * (a - offset) : 2 * (b - offset)].decode("utf-16-le", "surrogatepass")

        if length < 2 * context + 1:
            return f"Unexpected token '{c}', \"{self.text}\" is not valid JSON"
        if p < context:
            return f"Unexpected token '{c}', \"{sub(0, p + context)}\"... is not valid JSON"
        if p < length - context:
            return f"Unexpected token '{c}', ...\"{sub(p - context, p + context)}\"... is not valid JSON"
        return f"Unexpected token '{c}', ...\"{sub(p - context, length)}\" is not valid JSON"

    # ---- scanners ----------------------------------------------------------------------------

    def _ws(self, pos: int) -> int:
        m = _WS_RE.match(self.text, pos)
        return m.end() if m else pos

    def _string(self, pos: int) -> tuple[str, int]:
        """The string literal whose opening quote is at ``pos``; returns (value, end)."""
        try:
            return _scanstring(self.text, pos + 1, True)
        except ValueError:
            return self._refused_string(pos)

    def _refused_string(self, pos: int) -> tuple[str, int]:
        """The string literal at ``pos`` that scanstring refused, scanned again to raise V8's error."""
        text, end = self.text, self.end
        i = pos + 1
        while True:
            m = _STRING_CHUNK_RE.match(text, i)
            i = m.end() if m else i
            if i >= end:
                raise self._fail(end, _UNTERMINATED_STRING)
            c = text[i]
            if c == '"':  # not reached when scanstring failed, but keeps the scan total
                return _scanstring(text, pos + 1, True)
            if c != "\\":
                raise self._fail(i, _BAD_CONTROL)
            i = self._after_escape(i + 1)

    def _after_escape(self, i: int) -> int:
        """Where the escape whose letter is at ``i`` (after a backslash) ends."""
        text, end = self.text, self.end
        if i >= end:
            raise self._unexpected(end)
        e = text[i]
        if e > "\xff":
            raise self._unexpected(i)
        if e in '"\\/bfnrt':
            return i + 1
        if e == "u":
            for _ in range(4):
                i += 1
                if i >= end or text[i] not in _HEX:
                    raise self._fail(i, _BAD_UNICODE)
            return i + 1
        raise self._fail(i, _BAD_ESCAPE)

    def _number(self, pos: int) -> tuple[int | float, int]:
        text = self.text
        m = _NUMBER_RE.match(text, pos)
        if m is None:  # a lone "-"
            raise self._fail(pos + 1, _NO_NUMBER_AFTER_MINUS)
        stop = m.end()
        nxt = text[stop] if stop < self.end else ""
        frac, exp = m.group(1), m.group(2)
        if nxt and "0" <= nxt <= "9":  # only possible right after a leading zero
            raise self._unexpected(stop)
        if nxt == "." and frac is None and exp is None:
            raise self._fail(stop + 1, _UNTERMINATED_FRACTION)
        if (nxt == "e" or nxt == "E") and exp is None:
            i = stop + 1
            if i < self.end and text[i] in "+-":
                i += 1
            raise self._fail(i, _EXPONENT_MISSING)
        token = m.group(0)
        if frac is None and exp is None:
            return _parse_int(token), stop
        return float(token), stop

    def _literal(self, pos: int, word: str) -> int:
        if self.text.startswith(word, pos):
            return pos + len(word)
        i = pos + 1
        for ch in word[1:]:
            if i >= self.end:
                raise self._unexpected(self.end)
            if self.text[i] != ch:
                raise self._unexpected(i)
            i += 1
        raise self._unexpected(self.end)  # pragma: no cover - startswith would have matched

    # ---- the value loop (V8's ParseJsonValue) ------------------------------------------------

    def parse(self) -> Any:  # noqa: C901 - V8's value loop, one state machine over every token
        text, end = self.text, self.end
        # Frames: a list for an open array; an _ObjectFrame for an open object.
        stack: list[Any] = []
        pos = 0
        value: Any = None
        while True:
            # Produce a value.
            while True:
                pos = self._ws(pos)
                c = text[pos] if pos < end else ""
                if c == '"':
                    value, pos = self._string(pos)
                elif c == "-" or "0" <= c <= "9":
                    value, pos = self._number(pos)
                elif c == "{":
                    pos = self._ws(pos + 1)
                    if pos < end and text[pos] == "}":
                        value = {}
                        pos += 1
                    else:
                        if pos >= end or text[pos] != '"':
                            raise self._fail(pos, _EXPECTED_PROPERTY_OR_RBRACE)
                        key, pos = self._string(pos)
                        pos = self._ws(pos)
                        if pos >= end or text[pos] != ":":
                            raise self._fail(pos, _EXPECTED_COLON)
                        pos += 1
                        stack.append(_ObjectFrame({}, key))
                        continue
                elif c == "[":
                    pos = self._ws(pos + 1)
                    if pos < end and text[pos] == "]":
                        value = []
                        pos += 1
                    else:
                        stack.append([])
                        continue
                elif c == "t":
                    pos, value = self._literal(pos, "true"), True
                elif c == "f":
                    pos, value = self._literal(pos, "false"), False
                elif c == "n":
                    pos, value = self._literal(pos, "null"), None
                else:
                    raise self._unexpected(pos)
                break
            # Consume it into the enclosing containers, closing those that end here.
            while True:
                if not stack:
                    pos = self._ws(pos)
                    if pos < end:
                        raise self._fail(pos, _NON_WHITESPACE_AFTER)
                    return value
                top = stack[-1]
                pos = self._ws(pos)
                c = text[pos] if pos < end else ""
                if type(top) is list:
                    top.append(value)
                    if c == ",":
                        pos += 1
                        break
                    if c != "]":
                        raise self._fail(pos, _EXPECTED_COMMA_OR_RBRACK)
                    pos += 1
                    value = stack.pop()
                    continue
                obj = top.obj
                obj[top.key] = value
                if c == ",":
                    pos = self._ws(pos + 1)
                    if pos >= end or text[pos] != '"':
                        raise self._fail(pos, _EXPECTED_DOUBLE_QUOTED)
                    top.key, pos = self._string(pos)
                    pos = self._ws(pos)
                    if pos >= end or text[pos] != ":":
                        raise self._unexpected(pos)  # V8 gives no specific message here
                    pos += 1
                    break
                if c != "}":
                    raise self._fail(pos, _EXPECTED_COMMA_OR_RBRACE)
                pos += 1
                stack.pop()
                value = obj
                continue


#: texts cut short in each state the C scanner's errors tell apart (with what ends them)
_CUT_SAMPLES: Final = (
    "{",
    '{"a"',
    '{"a":',
    '{"a":1',
    '{"a":1,',
    '{"a":1,"b"',
    "[",
    "[1",
    "[1,",
    '["ab',
    '["a\\',
    '{"a":[{}',
)


def _scanner_tells_cuts() -> bool:
    """Whether the C scanner words its errors for texts cut short as :func:`_cut_short` reads them,
    so that it gives the exact parser's errors. Its messages are no API: a release that words them
    otherwise turns that reading off (the exact parser then words every error), never another answer."""
    for text in _CUT_SAMPLES:
        try:
            _fast_loads(text)
        except json.JSONDecodeError as err:
            told = _cut_short(text, err)
        else:
            return False
        try:
            _Parser(text).parse()
        except JsonSyntaxError as exact:
            if told is None or (told.msg, told.pos, told.js_message) != (
                exact.msg,
                exact.pos,
                exact.js_message,
            ):
                return False
    return True


_SCANNER_TELLS_CUTS = _scanner_tells_cuts()


# --------------------------------------------------------------------------------------------
# Serializing
# --------------------------------------------------------------------------------------------


# msgspec writes exactly JSON.stringify's string escapes (checked for every code point) and the
# same digits for the floats _fast_path_ok admits; it refuses lone surrogates (UnicodeEncodeError).
_fast_encode: Callable[[Any], bytes] = msgspec.json.Encoder().encode


def js_number(x: int | float) -> str:
    """``Number.prototype.toString()`` of a JS number (docs/FORMAT.md §2.3 rule 3).

    Non-finite values give "NaN"/"Infinity"/"-Infinity" (JSON.stringify writes those as null).
    Python ints beyond 2**53 are first rounded to the nearest double, as JS would hold them.
    """
    t = type(x)
    if t is int:
        if -_MAX_SAFE <= x <= _MAX_SAFE:
            return int.__repr__(x)
        try:
            f = float(x)
        except OverflowError:
            return "Infinity" if x > 0 else "-Infinity"
    elif t is float:
        f = x
    elif isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"not a JS number: {type(x).__name__}")
    else:  # int/float subclasses
        return js_number(int(x) if isinstance(x, int) else float(x))
    return _double_text(f)


def _double_text(f: float) -> str:
    """``Number.prototype.toString()`` of a double."""
    if f != f:
        return "NaN"
    if f == math.inf:
        return "Infinity"
    if f == -math.inf:
        return "-Infinity"
    if f == 0:
        return "0"
    af = abs(f)
    if 1e-4 <= af < 1e16:
        if af < _MAX_SAFE and f.is_integer():
            return int.__repr__(int(f))
        r = float.__repr__(f)
        if "e" not in r:
            return r[:-2] if r.endswith(".0") else r
    return _format_double(f)


def _format_double(x: float) -> str:
    """The general ECMAScript Number::toString algorithm from the shortest round-trip digits."""
    r = float.__repr__(abs(x))
    mantissa, _, exp_text = r.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = int_part + frac_part
    stripped = all_digits.lstrip("0")
    n = len(int_part) + exponent - (len(all_digits) - len(stripped))  # value = 0.DIGITS x 10**n
    digits = stripped.rstrip("0") or "0"
    k = len(digits)
    sign = "-" if x < 0 else ""
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp


def _json_number(x: int | float) -> str:
    s = js_number(x)
    return "null" if s in ("NaN", "Infinity", "-Infinity") else s


def is_array_index_key(key: str) -> bool:
    """A canonical array index (``0|[1-9][0-9]*`` up to 4294967294): JS enumerates these first."""
    if not key or not ("0" <= key[0] <= "9"):
        return False
    if key == "0":
        return True
    if key[0] == "0" or len(key) > 10 or not key.isascii() or not key.isdigit():
        return False
    return int(key) <= _MAX_ARRAY_INDEX


_V = TypeVar("_V")


def js_key_order(members: Iterable[tuple[str, _V]]) -> list[tuple[str, _V]]:
    """An object's members in JavaScript's enumeration order, from ``(key, value)`` pairs in
    insertion order: array-index keys (:func:`is_array_index_key`) first, ascending, then the other
    keys as inserted. The library's one rule for key order (JSON output, merged objects)."""
    indexes: list[tuple[str, _V]] = []
    others: list[tuple[str, _V]] = []
    for member in members:
        (indexes if is_array_index_key(member[0]) else others).append(member)
    if not indexes:
        return others
    indexes.sort(key=lambda member: int(member[0]))
    return indexes + others


def _ordered_items(obj: Mapping[str, Any], displayed: bool = False) -> list[tuple[str, Any]]:
    """Members in JS enumeration order, ABSENT-valued ones dropped (``displayed``: keys with lone
    surrogates shown as U+FFFD)."""
    return js_key_order(_present_members(obj, displayed))


def _present_members(obj: Mapping[str, Any], displayed: bool) -> Iterable[tuple[str, Any]]:
    for k, v in obj.items():
        if v is ABSENT:
            continue
        if type(k) is not str:
            raise TypeError(f"object keys must be strings, got {type(k).__name__}")
        yield (as_displayed(k) if displayed else k), v


# (compiled by its first use, through re's cache: few strings hold surrogates)
_SURROGATE = "[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]"


def _fix_surrogate(m: re.Match[str]) -> str:
    s = m.group(0)
    if len(s) == 2:  # a valid pair held as two code points is one astral character in JS
        return chr(0x10000 + ((ord(s[0]) - 0xD800) << 10) + (ord(s[1]) - 0xDC00))
    return f"\\u{ord(s):04x}"


def _encode_string(s: str) -> str:
    if len(s) > 512:  # msgspec escapes identically and much faster; it refuses lone surrogates
        try:
            return _fast_encode(s).decode("utf-8")
        except UnicodeEncodeError:
            pass
    out: str = _encode_basestring(s)
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            out = re.sub(_SURROGATE, _fix_surrogate, out)
    return out


def _scalar(  # noqa: C901 - a dispatch on the value's type, exact types first (the fast cases)
    v: Any, default: Callable[[Any], Any] | None = None, displayed: bool = False
) -> str | None:
    """The JSON text of a non-container value, or None for a container (``default`` turns other
    objects into JSON values; ``displayed``: lone surrogates become U+FFFD, see ``encode_value``)."""
    t = type(v)
    if t is str:
        return _encode_string(as_displayed(v) if displayed else v)
    if t is dict or t is list:
        return None
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if t is int or t is float:
        return _json_number(v)
    if t is msgspec.Raw:
        return bytes(v).decode("utf-8")
    if isinstance(v, (Mapping, list, tuple)):
        return None
    if isinstance(v, str):
        return _scalar(str(v), default, displayed)
    if isinstance(v, (int, float)):
        return _json_number(v)
    if default is not None and v is not ABSENT:
        converted = default(v)
        if converted is not v:
            return _scalar(converted, default, displayed)
    raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")


def _encode_exact(  # noqa: C901 - the iterative encoder: one loop over every value at any depth
    value: Any,
    indent: str = "",
    default: Callable[[Any], Any] | None = None,
    displayed: bool = False,
    indented_depth: int | None = None,
) -> str:
    """JSON.stringify(value, null, indent) exactly, iteratively (any depth). ``default`` turns
    objects that are not JSON values into JSON values (containers included). ``indented_depth``:
    the members of containers nested deeper are written without line breaks (see dumps_pretty)."""
    if value is ABSENT:
        raise TypeError("JSON.stringify(undefined) produces no text")
    out: list[str] = []
    append = out.append
    # the deepest container whose members go on lines of their own (-1: none, compact)
    deepest = -1 if indent == "" else (1 << 62) if indented_depth is None else indented_depth
    # Frames: [items, next index, is_object, the container's id]; items are (key, value) pairs
    # for objects.
    stack: list[list[Any]] = []
    # the containers being written (JSON.stringify throws on a value that holds itself, where a
    # loop over its members would never end; one held twice side by side is written twice)
    open_ids: set[int] = set()

    def open_container(v: Any) -> None:
        ident = id(v)
        if ident in open_ids:
            raise TypeError("Converting circular structure to JSON")
        t = type(v)
        if t is not dict and t is not list and not isinstance(v, (Mapping, list, tuple)):
            v = default(v) if default is not None else v  # _scalar let it through: a container
            t = type(v)
        if t is dict or (t is not list and isinstance(v, Mapping)):
            items: list[Any] = _ordered_items(v, displayed)
            if not items:
                append("{}")
                return
            append("{")
            stack.append([items, 0, True, ident])
        else:
            if not v:
                append("[]")
                return
            append("[")
            stack.append([v, 0, False, ident])
        open_ids.add(ident)

    s = _scalar(value, default, displayed)
    if s is not None:
        return s
    open_container(value)
    while stack:
        frame = stack[-1]
        items, i, is_object, ident = frame
        depth = len(stack)
        laid_out = depth <= deepest
        if i == len(items):
            stack.pop()
            open_ids.discard(ident)
            if laid_out:
                append("\n" + indent * (depth - 1))
            append("}" if is_object else "]")
            continue
        frame[1] = i + 1
        if i:
            append(",")
        if laid_out:
            append("\n" + indent * depth)
        if is_object:
            k, v = items[i]
            append(_encode_string(k))
            append(": " if laid_out else ":")
        else:
            v = items[i]
            if v is ABSENT:
                v = None
        s = _scalar(v, default, displayed)
        if s is not None:
            append(s)
        else:
            open_container(v)
    return "".join(out)


_DIGIT_STARTS = frozenset("0123456789")


def _fast_path_ok(value: Any) -> bool:  # noqa: C901 - one loop over every value, kept inline on purpose
    """True when msgspec encodes ``value`` exactly like JSON.stringify (lone surrogates aside,
    which make it raise): only dict/list/str/bool/None, safe ints, floats whose shortest spelling
    is the JS one, no ABSENT, no key that JS would move to the front. (A plain loop: per-container
    ``set(map(type, ...))`` passes are slower on session-sized values.) A container met twice
    (held twice, or holding itself, where this loop would never end) is left to the exact encoder."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    containers: set[int] = set()
    seen = containers.add
    while stack:
        v = pop()
        t = type(v)
        if t is str or v is None or t is bool:
            continue
        if t is dict or t is list:
            ident = id(v)
            if ident in containers:
                return False
            seen(ident)
            if t is list:
                extend(v)
                continue
            for k in v:
                if type(k) is not str or k[:1] in _DIGIT_STARTS:
                    return False
            extend(v.values())
        elif t is int:
            if not (-_MAX_SAFE <= v <= _MAX_SAFE):
                return False
        elif t is float:
            if not (1e-4 <= abs(v) < 1e16) or v.is_integer():
                return False
        else:
            return False
    return True


def dumps_bytes(value: Any) -> bytes:
    """``JSON.stringify(value)`` encoded as UTF-8: what a writer puts in the file (add b"\\n")."""
    if _fast_path_ok(value):
        try:
            return _fast_encode(value)
        except (msgspec.EncodeError, TypeError, ValueError, RecursionError):
            pass  # lone surrogates (UnicodeEncodeError), nesting too deep for msgspec
    return _encode_exact(value).encode("utf-8")


def surely_encodable(value: Any) -> bool:
    """True when :func:`dumps_bytes` cannot fail on ``value`` (JSON's own values only, each
    container met once: see _fast_path_ok), told without encoding it; False tells nothing."""
    return _fast_path_ok(value)


def dumps(value: Any) -> str:
    """``JSON.stringify(value)`` (compact). Raises TypeError for ABSENT and non-JSON values."""
    if _fast_path_ok(value):
        try:
            return _fast_encode(value).decode("utf-8")
        except (msgspec.EncodeError, TypeError, ValueError, RecursionError):
            pass  # lone surrogates (UnicodeEncodeError), nesting too deep for msgspec
    return _encode_exact(value)


def dumps_pretty(value: Any, indent: int = 2, indented_depth: int | None = None) -> str:
    """``JSON.stringify(value, null, indent)`` (no trailing newline). ``indented_depth``: the
    members of containers nested deeper than that are written on one line, as ``JSON.stringify``
    without ``indent`` writes them. Text for people takes it: indentation makes the laid-out text
    grow with the square of the nesting depth (a line of a few hundred KB of nested arrays would be
    gigabytes), while no value worth reading nests that deep."""
    return _encode_exact(value, " " * min(max(indent, 0), 10), indented_depth=indented_depth)


_NO_MORE = object()


def dumps_short(value: Any, limit: int) -> str:
    """``JSON.stringify(value)`` cut to ``limit`` characters ("…" last when cut), for a value quoted
    in a message: the work stops once ``limit`` characters are written, whatever the value's size
    or depth, and lone surrogates show as U+FFFD."""
    out: list[str] = []
    size = 0
    # Frames: [iterator over the members, is_object, a member written]
    stack: list[list[Any]] = []
    v = value
    while size <= limit:
        t = type(v)
        if t is str:
            text: str | None = _encode_string(as_displayed(v[: limit + 1]))
        else:
            try:
                text = _scalar(v, displayed=True)
            except TypeError:
                text = "null"  # not a JSON value (undefined in an array is written null)
        if text is not None:
            out.append(text)
            size += len(text)
        elif isinstance(v, Mapping):
            out.append("{")
            size += 1
            stack.append([iter(_ordered_items(v, displayed=True)), True, False])
        else:
            out.append("[")
            size += 1
            stack.append([iter(v), False, False])
        while stack:  # the next value to write, closing the containers that have no more
            frame = stack[-1]
            member: Any = next(frame[0], _NO_MORE)
            if member is _NO_MORE:  # (not ABSENT: an array may hold undefined, written null)
                stack.pop()
                out.append("}" if frame[1] else "]")
                size += 1
                continue
            if frame[2]:
                out.append(",")
                size += 1
            frame[2] = True
            if frame[1]:
                key = _encode_string(as_displayed(member[0][: limit + 1])) + ":"
                out.append(key)
                size += len(key)
                v = member[1]
            else:
                v = member
            break
        else:
            break
    text = "".join(out)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


#: what text for people lays out of a JSON value (see dumps_pretty's ``indented_depth``)
READABLE_DEPTH: Final = 32


# What msgspec writes differently from JSON.stringify, found in its output by searches that start
# with a literal (C speed; a pattern starting with a character class costs ten times more):
# a key JavaScript enumerates first (an array index); an integral float ("1.0", "-0.0" where JS
# writes "1", "0"); an exponent msgspec uses where JS does not, or spells otherwise (msgspec writes
# "e16" to "e308" and "e-6" where JS writes "10000000000000000", "1e+21" or "0.000001"; from "e-7"
# down both write the same). Text inside strings that looks the same only costs the exact path.
# Integers between 2**53 and 2**64 are written as msgspec holds them (JS would hold the nearest
# double); such a number is never in what pi writes, and finding one costs a slow search.
_INDEX_KEY = re.compile(rb'"(?:0|[1-9][0-9]{0,9})":')
_INTEGRAL_FLOAT = re.compile(rb"\.0[,}\]]")
_EXPONENT = re.compile(rb"e(?:-6|[1-9][0-9]{1,2})[,}\]]")


def _needs_exact(out: bytes) -> bool:
    if out[:1] in b"-0123456789":  # a bare number: the exact path costs nothing
        return True
    if _INTEGRAL_FLOAT.search(out) is not None or _INDEX_KEY.search(out) is not None:
        return True
    for match in _EXPONENT.finditer(out):
        # a number token: digits (and ".") after a ":", "," or "[" (or the start), then the "e"
        start = match.start()
        while start > 0 and out[start - 1] in b"0123456789.":
            start -= 1
        if start > 0 and out[start - 1] == 0x2D:  # "-"
            start -= 1
        if start < match.start() and (start == 0 or out[start - 1] in b":,["):
            return True
    return False


_value_encoders: dict[Any, Callable[[Any], bytes]] = {}


def encode_value(
    value: Any,
    *,
    default: Callable[[Any], Any] | None = None,
    displayed: bool = False,
    exact: bool = False,
    checked: bool = True,
) -> bytes:
    """``JSON.stringify(value)`` as UTF-8, for a value made of JSON builtins, ``ABSENT`` (left out
    of objects, ``null`` in arrays), ``msgspec.Raw`` (JSON text inserted as it is) and objects that
    ``default`` turns into those. The encoder of the wire: replies of any size and depth.

    msgspec writes the value in one C pass; the exact path runs only when msgspec refuses it (lone
    surrogates, ``ABSENT``, nesting deeper than it goes, integers beyond 64 bits) or its output
    holds something JavaScript writes otherwise (see ``_needs_exact``). Unlike :func:`dumps_bytes`,
    other Python types (bytes, sets, dates) are not refused: msgspec's own encoding of them stands.

    Integers between 2**53 and 2**64 are the exception (see ``_needs_exact``).

    ``displayed``: the text is for display (a message an editor shows): a lone surrogate becomes
    U+FFFD instead of an escape that strict JSON decoders (Neovim's) reject with the whole message.
    ``exact``: skip msgspec (for values holding objects msgspec would encode its own way).
    ``checked=False``: the caller made every number and key the way JavaScript writes it (ints, no
    integer-like keys): msgspec's output is taken without looking (the exact path still runs for what
    msgspec refuses).
    """
    if exact:
        return _encode_exact(value, default=default, displayed=displayed).encode("utf-8")
    encode = _value_encoders.get(default)
    if encode is None:
        encode = _value_encoders[default] = msgspec.json.Encoder(enc_hook=_refusing(default)).encode
    try:
        out = encode(value)
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError, OverflowError):
        return _encode_exact(value, default=default, displayed=displayed).encode("utf-8")
    if not checked or not _needs_exact(out):
        return out
    return _encode_exact(value, default=default, displayed=displayed).encode("utf-8")


def _refusing(default: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """msgspec's hook: ``default``'s conversion, but ABSENT is left to the exact path."""

    def hook(value: Any) -> Any:
        if value is ABSENT or default is None:
            raise TypeError("needs the exact path")
        return default(value)

    return hook
