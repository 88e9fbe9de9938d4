"""What pi's ``/tree`` view shows for an entry: its one-line preview, and the silent turns it hides.

``preview_of`` is ``getEntryDisplayText`` of pi's tree selector without colours (checked against
pi's own component by tests/unit/test_protocol_tree_filters.py); the sidecar's ``pi/getTree``, the
CLI's ``pi-session tree`` and the demo show the same text. Pure functions of values: what a session
keeps of them across calls is ``preview_cache.PreviewCache``'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from ..format.entry import Entry
from ..format.jstext import JS_WHITESPACE, as_displayed, js_trim
from ..format.jsvalue import ABSENT, index_key, truthy
from .fields import type_of
from .preview_text import PREVIEW_LIMIT, js_str, normalize, utf16_slice
from .profiles import Profile, ignored_by
from .tool_call_text import ToolCalls, format_tool_call, home_directory


def extract_full_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type", ABSENT) == "text":
            parts.append(js_str(block.get("text", ABSENT)))
    return "".join(parts)


def extract_content(content: Any) -> str:
    return utf16_slice(extract_full_content(content), PREVIEW_LIMIT)


def has_text_content(content: Any) -> bool:
    if isinstance(content, str):
        return shows_text(content)
    if isinstance(content, list):
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type", ABSENT) == "text"
                and shows_text(block.get("text", ABSENT))
            ):
                return True
    return False


def shows_text(text: Any) -> bool:
    """Is ``text`` (content, or a text block's) a string with more than blanks?"""
    if not isinstance(text, str):
        return False
    # (a text's first character is not a blank, as a rule: the text is not trimmed for it)
    return text[:1] not in JS_WHITESPACE or js_trim(text) != ""


def _js_round(x: Any) -> str:
    if type(x) is bool:
        x = int(x)
    if x is None:
        x = 0
    if not isinstance(x, (int, float)) or math.isnan(x) or math.isinf(x):
        return (
            "NaN" if not (isinstance(x, float) and math.isinf(x)) else ("Infinity" if x > 0 else "-Infinity")
        )
    value = math.floor(x / 1000 + 0.5)
    return str(int(value))


def is_silent_turn(message: Any) -> bool:
    """An assistant message pi's tree selector hides: no text, and it did not end in an error or
    an abort (its tool calls show through their results)."""
    msg = message if isinstance(message, dict) else {}
    return is_silent(has_text_content(msg.get("content", ABSENT)), msg.get("stopReason", ABSENT))


def is_silent(has_text: bool, stop: Any) -> bool:
    failed = stop != "stop" and stop != "toolUse" and truthy(stop)
    return not has_text and not failed


def preview_of(entry: Any, tool_calls: ToolCalls) -> str:
    """The text pi's tree selector shows for an entry (``getEntryDisplayText`` without colours, lone
    surrogates as the terminal shows them: :func:`as_displayed`)."""
    return finish_preview(preview_part(entry), tool_calls)


def call_text(part: ToolResultPart, call: tuple[Any, Any], home: str) -> str:
    """The preview of the tool result ``part`` showing ``call``, made once for that call object and
    home (the call tuples of a cached session are the same objects from one walk to the next)."""
    memo = part.memo
    if memo is not None and memo[0] is call and memo[1] == home:
        return memo[2]
    text = as_displayed(format_tool_call(call[0], call[1], home))
    part.memo = (call, home, text)
    return text


class ToolResultPart:
    """The part of a tool result's preview that needs the tool calls (and ``HOME``): done per call."""

    __slots__ = ("call_id", "memo", "name")

    def __init__(self, call_id: Any, name: Any) -> None:
        self.call_id = call_id
        self.name = name
        self.memo: tuple[Any, str, str] | None = None  # (call, HOME, text) of the last rendering


def finish_preview(part: str | ToolResultPart, tool_calls: ToolCalls, home: str | None = None) -> str:
    """The preview of an entry from its part; ``home``: see :func:`format_tool_call`."""
    if type(part) is str:
        return part
    assert isinstance(part, ToolResultPart)
    call_id = part.call_id
    if type(call_id) is str:  # (most ids: their own key, truthy unless empty)
        call = tool_calls.get(call_id) if call_id else None
    else:
        call = tool_calls.get(index_key(call_id)) if truthy(call_id) else None
    if call is not None:
        # the call tuples of a cached session are the same objects from one walk to the next
        return call_text(part, call, home_directory() if home is None else home)
    name = part.name
    return as_displayed(f"[{'tool' if name is ABSENT or name is None else js_str(name)}]")


def preview_part(entry: Any, value: dict[str, Any] | None = None) -> str | ToolResultPart:
    """What of an entry's preview depends on the entry alone (entries never change: cacheable),
    lone surrogates as the terminal shows them (:func:`as_displayed`). ``value``: the entry's
    preview fields when a pass read them (see preview_pass), else its value is read."""
    part = _entry_part(type_of(entry), value_of(entry) if value is None else value)
    return as_displayed(part) if type(part) is str else part


def value_of(entry: Any) -> Any:
    value = entry.value if type(entry) is Entry else entry
    return value if isinstance(value, dict) else {}


def _entry_part(etype: Any, value: dict[str, Any]) -> str | ToolResultPart:
    """:func:`preview_part` as pi's selector computes it, from the entry's type and value."""
    if etype == "message":
        message = value.get("message", ABSENT)
        return _message_part(message if isinstance(message, dict) else {})
    if etype == "custom_message":
        content = value.get("content", ABSENT)
        text = content if isinstance(content, str) else extract_full_content(content)
        return f"[{js_str(value.get('customType', ABSENT))}]: " + normalize(text)
    if etype == "compaction":
        return f"[compaction: {_js_round(value.get('tokensBefore', ABSENT))}k tokens]"
    if etype == "branch_summary":
        return "[branch summary]: " + normalize(js_str(value.get("summary", ABSENT)))
    if isinstance(etype, str) and etype in _WORD_AND_FIELD:
        word, key = _WORD_AND_FIELD[etype]
        return f"[{word}: {js_str(value.get(key, ABSENT))}]"
    if etype == "context_edit":  # pi 1.6.0's selector (0.86.1 shows nothing for a type it does not know)
        kind = "omit" if value.get("replacement", ABSENT) is None else "replace"
        return f"[context {kind}: {js_str(value.get('targetId', ABSENT))}]"
    if etype == "label":
        label = value.get("label", ABSENT)
        return f"[label: {'(cleared)' if label is ABSENT or label is None else js_str(label)}]"
    if etype == "session_info":
        name = value.get("name", ABSENT)
        return f"[title: {js_str(name)}]" if truthy(name) else "[title: empty]"
    return ""


#: the entry types shown as ``[word: field]``
_WORD_AND_FIELD: Final = {
    "model_change": ("model", "modelId"),
    "thinking_level_change": ("thinking", "thinkingLevel"),
    "custom": ("custom", "customType"),
}


def _message_part(msg: dict[str, Any]) -> str | ToolResultPart:
    role = msg.get("role", ABSENT)
    if role in ("user", "assistant"):
        return conversation_part(
            role,
            normalize(extract_content(msg.get("content", ABSENT))),
            msg.get("stopReason", ABSENT),
            msg.get("errorMessage", ABSENT),
        )
    if role == "toolResult":
        return ToolResultPart(msg.get("toolCallId", ABSENT), msg.get("toolName", ABSENT))
    if role == "bashExecution":
        command = msg.get("command", ABSENT)
        return "[bash]: " + normalize("" if command is ABSENT or command is None else js_str(command))
    return f"[{js_str(role)}]"


def conversation_part(role: str, text: str, stop: Any, error: Any) -> str:
    """The preview of a user or an assistant message whose content's text, cut as
    :func:`extract_content` cuts it and normalized, is ``text``."""
    return "user: " + text if role == "user" else _assistant_part(text, stop, error)


def _assistant_part(text: str, stop: Any, error: Any) -> str:
    """The preview of an assistant message whose content's text, cut as :func:`extract_content`
    cuts it and normalized, is ``text``."""
    if text:
        return "assistant: " + text
    if stop == "aborted":
        return "assistant: (aborted)"
    if truthy(error):
        return "assistant: " + utf16_slice(normalize(js_str(error)), 80)
    return "assistant: (no content)"


def edit_shown_by(profile: Profile | None) -> str | None:
    """The preview of a ``context_edit`` under ``profile``'s release when it ignores context edits
    (0.86.1's selector shows nothing for a type it does not know): the entry's type and what the
    release does with it, in the outline's words; None under a release that applies them."""
    ignored = None if profile is None else ignored_by(profile)
    return None if ignored is None else f"[context_edit]: {ignored}"


_Preview = TypeVar("_Preview", bound=Callable[..., str])


def showing_edits_as(edit_shown: str | None, preview: _Preview) -> _Preview:
    """``preview`` with every ``context_edit`` shown as ``edit_shown`` (None: ``preview`` itself,
    nothing asked of each row)."""
    if edit_shown is None:
        return preview

    def shown(entry: Any, *rest: Any) -> str:
        return edit_shown if type_of(entry) == "context_edit" else preview(entry, *rest)

    return cast(_Preview, shown)
