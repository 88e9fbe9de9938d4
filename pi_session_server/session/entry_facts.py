"""What one read of an entry gives the previews: its preview part (see ``describe.preview_part``)
and, of an assistant message, its facts (its tool calls, whether it is a silent turn), from the
entry's value, from the fields a pass decoded of its line (see preview_pass) or from the line a scan
holds; and the tool calls of a session's assistant messages gathered from them (the TUI's
toolCallMap).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from ..format.entry import Entry, ObservedHead
from ..format.jstext import as_displayed
from ..format.jsvalue import ABSENT, index_key
from .describe import (
    ToolResultPart,
    conversation_part,
    extract_full_content,
    has_text_content,
    is_silent,
    is_silent_turn,
    preview_part,
    shows_text,
    value_of,
)
from .fields import field, role_of, type_of
from .preview_pass import (
    MIN_BATCH,
    MessageFields,
    PreviewValue,
    SilenceMessage,
    ToolResultMessage,
    head_fields,
    line_value,
    preview_values,
)
from .preview_text import PREVIEW_LIMIT, js_str, normalize, utf16_slice
from .tool_call_text import ToolCalls


def _text_of_blocks(content: Any) -> str:
    """:func:`extract_full_content` of content as a pass decoded it (a list of PreviewBlock)."""
    if type(content) is not list:
        return extract_full_content(content)
    return "".join([js_str(block.text) for block in content if block.type == "text"])


def collect_tool_calls(entries: Iterable[Any]) -> ToolCalls:
    """toolCallId -> (name, arguments) from every assistant message (the TUI's toolCallMap)."""
    assistants = assistants_among(entries)
    found = {id(entry): assistant_facts(entry, value) for entry, value in in_one_pass(assistants)}
    calls: ToolCalls = {}
    for entry in assistants:  # in the order given: a later call with the same id wins
        facts = found.get(id(entry))
        for key, call in (assistant_facts(entry) if facts is None else facts)[1]:
            calls[key] = call
    return calls


def assistants_among(entries: Iterable[Any]) -> list[Any]:
    """The assistant messages among ``entries``, in their order."""
    return [  # (is_assistant inline for an Entry: once per entry of the session)
        e
        for e in entries
        if (
            (head := e.message) is not None and head.role == "assistant" and e.type == "message"
            if type(e) is Entry
            else type_of(e) == "message" and role_of(e) == "assistant"
        )
    ]


def in_one_pass(entries: list[Any]) -> Iterable[tuple[Entry, PreviewValue]]:
    """(entry, its preview fields) for the entries whose lines are read from their file, read in
    one pass (see preview_pass) when they are many; the others are left for the caller to read on
    their own."""
    if len(entries) < MIN_BATCH:
        return ()
    return preview_values([e for e in entries if type(e) is Entry])


def tool_calls_of(entry: Any) -> list[tuple[Any, tuple[Any, Any]]]:
    """(index key of the call id, (name, arguments)) of an assistant message's toolCall blocks."""
    return _tool_calls_in(field(entry, "message"))


def _tool_calls_in(message: Any) -> list[tuple[Any, tuple[Any, Any]]]:
    content = message.get("content", ABSENT) if isinstance(message, dict) else ABSENT
    if not isinstance(content, list):
        return []
    return [
        (index_key(block.get("id", ABSENT)), (block.get("name", ABSENT), block.get("arguments", ABSENT)))
        for block in content
        if isinstance(block, dict) and block.get("type", ABSENT) == "toolCall"
    ]


def is_silent_decoded_turn(message: SilenceMessage | None) -> bool:
    """:func:`is_silent_turn` of a message as ``preview_pass.silences`` decoded it (None: no object)."""
    if message is None:
        return True  # (as a message that is not an object: no text, no stop reason)
    content = message.content
    has_text = False
    if type(content) is not list:
        has_text = shows_text(content)
    else:
        for block in content:
            if block.type == "text" and shows_text(block.text):
                has_text = True
                break
    return is_silent(has_text, message.stopReason)


def part_and_facts(entry: Any, value: PreviewValue) -> tuple[str | ToolResultPart, Any]:
    """An entry's preview part, and an assistant message's facts (else None)."""
    head = entry.message if type(entry) is Entry else None  # (is_assistant inline: once per entry)
    assistant = head is not None and head.role == "assistant" and entry.type == "message"
    if isinstance(value, MessageFields):
        message = value.message
        if type(message) is ToolResultMessage:
            part: str | ToolResultPart = ToolResultPart(message.toolCallId, _shared(message.toolName))
        elif assistant and type(value.content) is list:
            return _assistant_part_and_facts(entry, value)
        else:
            text = normalize(utf16_slice(_text_of_blocks(value.content), PREVIEW_LIMIT))
            part = as_displayed(
                conversation_part(message.role, text, message.stopReason, message.errorMessage)
            )
        return part, assistant_facts(entry, value) if assistant else None
    return preview_part(entry, value), assistant_facts(entry, value) if assistant else None


def is_assistant(entry: Entry) -> bool:
    """``type_of(entry) == "message" and role_of(entry) == "assistant"``, for an Entry (no other
    JSON value than the string equals the string: the role's head is compared as it is)."""
    head = entry.message
    return head is not None and head.role == "assistant" and entry.type == "message"


def _assistant_part_and_facts(
    entry: Any, value: MessageFields
) -> tuple[str, tuple[Any, list[tuple[Any, tuple[Any, Any]]], bool]]:
    """:func:`part_and_facts` of an assistant message whose content is a list of blocks as a pass
    decoded them: its text, tool calls and silence from one walk of its blocks."""
    message = value.message
    texts: list[str] = []
    calls = []
    has_text = False
    arguments = iter(value.arguments)
    for block in value.content:
        btype = block.type
        if btype == "text":
            text = block.text
            texts.append(text if type(text) is str else js_str(text))
            has_text = has_text or shows_text(text)
        elif btype == "toolCall":
            calls.append((_key_of(block.id), (_shared(block.name), next(arguments))))
    shown = normalize(utf16_slice("".join(texts), PREVIEW_LIMIT))
    part = as_displayed(conversation_part(message.role, shown, message.stopReason, message.errorMessage))
    return part, (entry, calls, is_silent(has_text, message.stopReason))


def assistant_facts(
    entry: Any, value: PreviewValue | None = None
) -> tuple[Any, list[tuple[Any, tuple[Any, Any]]], bool]:
    """(entry, its tool calls, whether it is a silent turn): one read of the body for both
    (``value``: the entry's preview fields, when a pass read them)."""
    if isinstance(value, MessageFields):
        content = value.content
        if type(content) is not list:
            return entry, [], is_silent(has_text_content(content), value.message.stopReason)
        calls = []
        has_text = False
        arguments = iter(value.arguments)
        for block in content:
            btype = block.type
            if btype == "text":
                has_text = has_text or shows_text(block.text)
            elif btype == "toolCall":
                calls.append((index_key(block.id), (_shared(block.name), next(arguments))))
        return entry, calls, is_silent(has_text, value.message.stopReason)
    message = field(entry, "message") if value is None else value.get("message", ABSENT)
    return entry, _tool_calls_in(message), is_silent_turn(message)


def usual_part_and_facts(entry: Any) -> tuple[str | ToolResultPart, Any]:
    """``part_and_facts`` of an entry read the usual way (``Entry.value``)."""
    return part_and_facts(entry, value_of(entry))


def made_from_line(entry: Entry, line: memoryview) -> tuple[str | ToolResultPart, Any] | None:
    """``part_and_facts`` of an entry a scan decoded, from its line (None: the line does not
    decode into the preview's fields as JSON.parse reads it)."""
    head = entry.message
    if type(head) is ObservedHead and entry.type == "message":
        role = head.role
        if role == "toolResult":
            # its preview is all in the head the scan decoded: the line (most of the file's bytes
            # are tool outputs) is not decoded again
            return ToolResultPart(head.toolCallId, _shared(head.toolName)), None
        if role in ("user", "assistant"):
            # the fields its preview shows came with the head: only their content is decoded again
            fields = head_fields(head)
            if fields is not None:
                return part_and_facts(entry, fields)
    value = line_value(line)
    return None if value is None else part_and_facts(entry, value)


def _shared(name: Any) -> Any:
    """A tool's name, one string object for every call and result that names it (a session names a
    few tools hundreds of thousands of times, and its previews hold every name until drawn)."""
    return sys.intern(name) if type(name) is str else name


def _key_of(call_id: Any) -> Any:
    """``index_key(call_id)``, a string's without a call (the key of most calls)."""
    return call_id if type(call_id) is str else index_key(call_id)
