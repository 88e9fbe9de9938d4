"""One-line descriptions of entries, as pi's ``/tree`` view shows them (without colours)."""

from __future__ import annotations

import json
import re
from typing import Any

from ..format.jstext import js_trim
from ..format.jsvalue import ABSENT, get, js_string_of
from .fields import type_of, value_of

_WS = re.compile(r"[\n\t]")


def _normalize(text: str) -> str:
    return js_trim(_WS.sub(" ", text))


def content_text(content: Any, joiner: str = "") -> str:
    """The text of a string content or of the ``text`` blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text", "")
                parts.append(text if isinstance(text, str) else js_string_of(text))
        return joiner.join(parts)
    return ""


def has_text_content(content: Any) -> bool:
    """pi's ``hasTextContent``: some non-blank text."""
    if isinstance(content, str):
        return bool(js_trim(content))
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and js_trim(text):
                    return True
    return False


def tool_call_text(name: Any, arguments: Any) -> str:
    """``name(args)`` with the arguments compacted, for previews of tool calls and results."""
    try:
        args = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        args = ""
    return f"{js_string_of(name)}({args})"


def shorten(text: str, limit: int = 100) -> str:
    text = _normalize(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_entry(entry: Any, tool_calls: dict[str, Any] | None = None, limit: int = 100) -> str:
    """``user: hello``, ``assistant: (no content)``, ``[compaction: 12k tokens]``, ... (decodes the body)."""
    etype = type_of(entry)
    value = value_of(entry)
    if etype == "message":
        message = get(value, "message")
        role = get(message, "role")
        if role == "user":
            return "user: " + shorten(content_text(get(message, "content")), limit)
        if role == "assistant":
            text = shorten(content_text(get(message, "content")), limit)
            if text:
                return "assistant: " + text
            if get(message, "stopReason") == "aborted":
                return "assistant: (aborted)"
            error = get(message, "errorMessage")
            if isinstance(error, str) and error:
                return "assistant: " + shorten(error, 80)
            calls = [
                b
                for b in get(message, "content") or []
                if isinstance(b, dict) and b.get("type") == "toolCall"
            ]
            if calls:
                return "assistant: " + shorten(
                    " ".join(tool_call_text(c.get("name"), c.get("arguments")) for c in calls), limit
                )
            return "assistant: (no content)"
        if role == "toolResult":
            call_id = get(message, "toolCallId")
            call = tool_calls.get(call_id) if tool_calls and isinstance(call_id, str) else None
            if call is not None:
                return shorten(tool_call_text(call.get("name"), call.get("arguments")), limit)
            name = get(message, "toolName")
            return f"[{name if isinstance(name, str) else 'tool'}]"
        if role == "bashExecution":
            command = get(message, "command")
            return "[bash]: " + shorten(command if isinstance(command, str) else "", limit)
        if role is ABSENT:
            return "[message]"
        return f"[{js_string_of(role)}]"
    if etype == "custom_message":
        return f"[{js_string_of(get(value, 'customType'))}]: " + shorten(
            content_text(get(value, "content")), limit
        )
    if etype == "compaction":
        tokens = get(value, "tokensBefore")
        k = round(tokens / 1000) if isinstance(tokens, (int, float)) and not isinstance(tokens, bool) else "?"
        return f"[compaction: {k}k tokens]"
    if etype == "branch_summary":
        summary = get(value, "summary")
        return "[branch summary]: " + shorten(summary if isinstance(summary, str) else "", limit)
    if etype == "model_change":
        return f"[model: {js_string_of(get(value, 'modelId'))}]"
    if etype == "thinking_level_change":
        return f"[thinking: {js_string_of(get(value, 'thinkingLevel'))}]"
    if etype == "custom":
        return f"[custom: {js_string_of(get(value, 'customType'))}]"
    if etype == "label":
        label = get(value, "label")
        return f"[label: {label if isinstance(label, str) and label else '(cleared)'}]"
    if etype == "session_info":
        name = get(value, "name")
        return f"[title: {name}]" if isinstance(name, str) and name else "[title: empty]"
    if etype == "usage":
        return f"[usage: {js_string_of(get(value, 'kind'))}]"
    return f"[{js_string_of(etype)}]"
