"""Short descriptions of entries, for symbols, lenses and reference summaries.

:func:`quick_preview` reads only the line's envelope plus a regular-expression peek at its first
text, so an outline of 100,000 entries costs no JSON decoding. :func:`full_value` decodes one line
completely (for hovers).
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from ..format.jsjson import JsonSyntaxError, parse
from ..format.jstext import js_trim
from ..format.jsvalue import ABSENT, get, js_string_of, truthy
from . import lines as L
from .lines import LineInfo

# where a string a preview shows opens (the patterns end at its opening quote; see _string_start)
_FIRST_TEXT = re.compile(rb'"type"\s*:\s*"text"\s*,\s*"text"\s*:\s*"')
_STRING_CONTENT = re.compile(rb'"content"\s*:\s*"')
_FIELD = {
    name: re.compile(rb'"' + name.encode() + rb'"\s*:\s*"')
    for name in (
        "toolName",
        "name",
        "customType",
        "summary",
        "modelId",
        "thinkingLevel",
        "label",
        "command",
        "kind",
    )
}
_TOOL_NAME = re.compile(
    rb'"type"\s*:\s*"toolCall"\s*,\s*"id"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"name"\s*:\s*"((?:[^"\\]|\\.){0,80})'
)
# a string's start as a preview reads it: its first characters and escapes, as many as this
_STRING_UNITS = 240
# a preview of a limited number of characters reads this many units for each first (a unit is a
# character of most texts): all _STRING_UNITS only when collapsed whitespace or wide characters
# leave those too few
_FIRST_UNITS_PER_CHARACTER = 2
_string_starts: dict[int, re.Pattern[bytes]] = {}
# what ends a string or starts an escape: the bytes before it are characters, one a byte
_QUOTE_OR_ESCAPE = re.compile(rb'["\\]')
_WS = re.compile(r"\s+")
# what json.loads reads other than as the character's UTF-8: an escape, a quote, a control character
_NOT_PLAIN = re.compile(rb'[\x00-\x1f"\\]')


def _unescape(fragment: bytes) -> str:
    """A (possibly cut) JSON string body as text."""
    if not _NOT_PLAIN.search(fragment):
        # what json.loads reads it as, when it is whole UTF-8 (strict, as json.loads decodes it)
        try:
            return fragment.decode("utf-8")
        except UnicodeDecodeError:
            pass
    for cut in range(0, 7):
        body = fragment[: len(fragment) - cut] if cut else fragment
        try:
            return str(json.loads(b'"' + body + b'"'))
        except ValueError:
            continue
    return fragment.decode("utf-8", "replace")


def cut(text: str, limit: int = 80) -> str:
    """``text``, or its start and "…" when it is longer than ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int = 80) -> str:
    return cut(_on_one_line(text), limit)


def _on_one_line(text: str) -> str:
    """``text``'s whitespace collapsed and trimmed (:func:`one_line` before the cut)."""
    # (printable text has no whitespace but " ": collapsing it changes nothing without "  ")
    if not text.isprintable() or "  " in text:
        text = _WS.sub(" ", text)
    return js_trim(text)


def _string_start(opening: re.Pattern[bytes], raw: bytes) -> bytes | None:
    """The first :data:`_STRING_UNITS` characters and escapes of the first string that
    ``opening`` finds the opening quote of, undecoded (cut at its closing quote, or where the
    line ends), or None when there is none."""
    m = opening.search(raw)
    return None if m is None else _string_body(raw, m.end(), _STRING_UNITS)


def _string_body(raw: bytes, start: int, units: int) -> bytes:
    """The first ``units`` characters and escapes of the string whose text starts at byte
    ``start``, undecoded (cut at its closing quote, or where the line ends)."""
    window = raw[start : start + units]
    if _QUOTE_OR_ESCAPE.search(window) is None:  # (the usual text: the pattern would step byte by byte)
        return window
    pattern = _string_starts.get(units)
    if pattern is None:
        pattern = _string_starts[units] = re.compile(rb'(?:[^"\\]|\\.){0,%d}' % units)
    body = pattern.match(raw, start)
    assert body is not None  # (it matches "" at least)
    return body.group()


def _shown_start(raw: bytes, start: int, limit: int) -> str:
    """The string whose text starts at byte ``start``, on one line and cut at ``limit`` characters
    as :func:`one_line` cuts its first :data:`_STRING_UNITS` units. Fewer are read first, which
    give the same answer when they hold the whole string, or make more than ``limit`` characters
    and one where the longer read's bytes are UTF-8 (else its text is those bytes as they are, see
    :func:`_unescape`): all those characters but the last are the longer read's (the last may be
    a character cut in two, or whitespace that the longer read trims at the string's end)."""
    units = _FIRST_UNITS_PER_CHARACTER * limit
    if units < _STRING_UNITS:
        body = _string_body(raw, start, units)
        end = start + len(body)
        text = _on_one_line(_unescape(body))
        if end >= len(raw) or raw[end] == 0x22:  # (0x22: its closing quote) the whole string
            return cut(text, limit)
        # (a unit is one byte, or two: an escape's backslash and the character after it)
        if len(text) > limit + 1 and _decodes(raw[start : start + 2 * _STRING_UNITS]):
            return cut(text, limit)
    return one_line(_unescape(_string_body(raw, start, _STRING_UNITS)), limit)


def _decodes(data: bytes) -> bool:
    """``data`` is UTF-8 (a lone surrogate written as "surrogatepass" writes it too), but for a
    character cut in two at its end: what json.loads decodes."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as error:
        return error.reason == "unexpected end of data"  # (only a sequence cut short at the end)
    return True


def _field(raw: bytes, name: str) -> str | None:
    found = _string_start(_FIELD[name], raw)
    return None if found is None else _unescape(found)


def _first_text(raw: bytes, or_content: bool, limit: int) -> str | None:
    """The first text part of the line, else (``or_content``) its string "content", on one line."""
    m = _FIRST_TEXT.search(raw)
    if m is None and or_content:
        m = _STRING_CONTENT.search(raw)
    return None if m is None else _shown_start(raw, m.end(), limit)


def quick_preview(info: LineInfo, limit: int = 80, raw: bytes | None = None) -> str:
    """``user: hello``, ``assistant: read(...)``, ``[compaction]``, ... from the raw line (``raw``:
    its bytes when the caller has them already)."""
    if raw is None:
        raw = info.raw
    if info.kind == L.HEADER:
        return "session header"
    if info.kind != L.ENTRY:
        return {L.BLANK: "blank line", L.MALFORMED: "invalid JSON", L.NON_OBJECT: "not an object"}.get(
            info.kind, ""
        )
    etype = info.etype
    if etype == "message":
        return _message_preview(info, raw, limit)
    return _entry_preview(info, etype, raw, limit)


def _message_preview(info: LineInfo, raw: bytes, limit: int) -> str:
    role = info.role
    if role in ("user", "assistant", "custom", "hookMessage", "system"):
        text = _first_text(raw, role != "assistant", limit) or ""
        if not text and role == "assistant":
            tools = [_unescape(t.group(1)) for t in _TOOL_NAME.finditer(raw)]
            text = ", ".join(f"{t}(…)" for t in tools[:4]) if tools else "(no text)"
        return f"{role}: {text}" if text else f"{role}"
    if role == "toolResult":
        name = _field(raw, "toolName") or "tool"
        return f"[{name}] " + (_first_text(raw, False, limit) or "")
    if role == "bashExecution":
        return "[bash]: " + one_line(_field(raw, "command") or "", limit)
    if isinstance(role, str):
        return f"[{role}]"
    return "[message]"


def _entry_preview(info: LineInfo, etype: Any, raw: bytes, limit: int) -> str:
    """The preview of an entry that is not a message."""
    if etype == "custom_message":
        return f"[{_field(raw, 'customType') or 'custom'}]: " + (_first_text(raw, True, limit) or "")
    if etype == "compaction":
        return "[compaction]: " + one_line(_field(raw, "summary") or "", limit)
    if etype == "branch_summary":
        return "[branch summary]: " + one_line(_field(raw, "summary") or "", limit)
    if etype == "model_change":
        return f"[model: {_field(raw, 'modelId') or '?'}]"
    if etype == "thinking_level_change":
        return f"[thinking: {_field(raw, 'thinkingLevel') or '?'}]"
    if etype == "custom":
        return f"[custom: {_field(raw, 'customType') or '?'}]"
    if etype == "label":
        return _label_preview(info, raw, limit)
    if etype == "session_info":
        return f"[name: {cut(_field(raw, 'name') or '', limit)}]"
    if etype == "usage":
        return f"[usage: {_field(raw, 'kind') or '?'}]"
    return f"[{js_string_of(etype)}]"


def _label_preview(info: LineInfo, raw: bytes, limit: int) -> str:
    """``[label: …]``, or ``[label cleared]`` when the entry takes the label back. A ``label`` that
    is no string (hand-made files) is decoded: pi keeps any truthy value and its tree shows
    ``String`` of it, as the hovers and lenses do."""
    label = _field(raw, "label")
    if label is not None:
        return f"[label: {cut(label, limit)}]" if label else "[label cleared]"
    shown = label_text(get(full_value(info), "label"))
    return "[label cleared]" if shown is None else f"[label: {cut(shown, limit)}]"


def label_text(value: Any) -> str | None:
    """What a label line's ``label`` value labels its entry with, as pi keeps it: any truthy value,
    shown as ``String`` of it (a hand-made file's number, object, array); None when it takes the
    label back (a falsy value, or none)."""
    return js_string_of(value) if truthy(value) else None


def full_value(info: LineInfo, errors: str = "replace") -> Any:
    """The line's JSON value (ABSENT when it does not parse)."""
    raw = info.raw[3:] if info.bom else info.raw
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        try:
            return parse(raw.decode("utf-8", errors))
        except JsonSyntaxError:
            return ABSENT
