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
from ..format.jsvalue import ABSENT, js_string_of
from . import lines as L
from .lines import LineInfo

_FIRST_TEXT = re.compile(rb'"type"\s*:\s*"text"\s*,\s*"text"\s*:\s*"((?:[^"\\]|\\.){0,240})')
_STRING_CONTENT = re.compile(rb'"content"\s*:\s*"((?:[^"\\]|\\.){0,240})')
_FIELD = {
    name: re.compile(rb'"' + name.encode() + rb'"\s*:\s*"((?:[^"\\]|\\.){0,240})')
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
    return cut(js_trim(_WS.sub(" ", text)), limit)


def _field(raw: bytes, name: str) -> str | None:
    m = _FIELD[name].search(raw)
    return _unescape(m.group(1)) if m else None


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
    return _entry_preview(etype, raw, limit)


def _message_preview(info: LineInfo, raw: bytes, limit: int) -> str:
    role = info.role
    if role in ("user", "assistant", "custom", "hookMessage", "system"):
        m = _FIRST_TEXT.search(raw) or (_STRING_CONTENT.search(raw) if role != "assistant" else None)
        text = one_line(_unescape(m.group(1)), limit) if m else ""
        if not text and role == "assistant":
            tools = [_unescape(t.group(1)) for t in _TOOL_NAME.finditer(raw)]
            text = ", ".join(f"{t}(…)" for t in tools[:4]) if tools else "(no text)"
        return f"{role}: {text}" if text else f"{role}"
    if role == "toolResult":
        name = _field(raw, "toolName") or "tool"
        m = _FIRST_TEXT.search(raw)
        return f"[{name}] " + (one_line(_unescape(m.group(1)), limit) if m else "")
    if role == "bashExecution":
        return "[bash]: " + one_line(_field(raw, "command") or "", limit)
    if isinstance(role, str):
        return f"[{role}]"
    return "[message]"


def _entry_preview(etype: Any, raw: bytes, limit: int) -> str:
    """The preview of an entry that is not a message."""
    if etype == "custom_message":
        m = _FIRST_TEXT.search(raw) or _STRING_CONTENT.search(raw)
        return f"[{_field(raw, 'customType') or 'custom'}]: " + (
            one_line(_unescape(m.group(1)), limit) if m else ""
        )
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
        label = _field(raw, "label")
        return f"[label: {cut(label, limit)}]" if label else "[label cleared]"
    if etype == "session_info":
        return f"[name: {cut(_field(raw, 'name') or '', limit)}]"
    if etype == "usage":
        return f"[usage: {_field(raw, 'kind') or '?'}]"
    return f"[{js_string_of(etype)}]"


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
