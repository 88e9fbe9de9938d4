"""Typed records of a session line: the header, every entry type and every message (docs/FORMAT.md §4-§7).

These Structs describe what pi *writes* (0.86.1's entries, and the ``context_edit`` entry of pi 1.6.0,
docs/FORMAT.md §6.11, which 0.86.1 reads as an unknown type). The reference itself validates nothing (it works on
whatever ``JSON.parse`` produced, see :mod:`jsvalue`), so the records serve two other purposes:

- typed validation: a line that decodes as :data:`SessionLine` has every required field with the
  right JSON type (the language server's fast path; see ``analysis.fields`` for the slow path that
  names each problem);
- the JSON Schema of a session line for non-Python front ends (:func:`session_line_schema`).

Unknown fields are accepted everywhere (newer pi versions add fields). Newer entry types and roles
are representable: :func:`decode_line` falls back to :class:`UnknownEntry` for an unknown ``type``
and :class:`UnknownMessage` for an unknown ``role``. Numbers are ``float`` (msgspec accepts JSON
integers there too), because every JSON number is a JS double.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, Struct, UnsetType, field

__all__ = [
    "BLOCK_TYPES",
    "ENTRY_TYPES",
    "MESSAGE_ROLES",
    "STOP_REASONS",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CompactionEntry",
    "CompactionSummaryMessage",
    "ContextEditEntry",
    "ContextEditReplacement",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "HookMessage",
    "ImageContent",
    "LabelEntry",
    "Message",
    "MessageEntry",
    "ModelChangeEntry",
    "SessionHeader",
    "SessionInfoEntry",
    "SessionLine",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevelChangeEntry",
    "ToolCall",
    "ToolResultMessage",
    "UnknownEntry",
    "UnknownMessage",
    "Usage",
    "UsageEntry",
    "UserMessage",
    "decode_line",
    "session_line_schema",
]


class _Record(Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Base of every record: camelCase on the wire, optional fields omitted when unset."""


# --------------------------------------------------------------------------------------------
# Content blocks and shared types (docs/FORMAT.md §7.1)
# --------------------------------------------------------------------------------------------


class _Block(_Record, tag_field="type"):
    pass


class TextContent(_Block, tag="text", kw_only=True):
    text: str
    text_signature: str | UnsetType = UNSET


class ImageContent(_Block, tag="image", kw_only=True):
    data: str  # base64
    mime_type: str


class ThinkingContent(_Block, tag="thinking", kw_only=True):
    thinking: str
    thinking_signature: str | UnsetType = UNSET
    redacted: bool | UnsetType = UNSET


class ToolCall(_Block, tag="toolCall", kw_only=True):
    id: str
    name: str
    arguments: dict[str, Any]
    thought_signature: str | UnsetType = UNSET
    namespace: str | UnsetType = UNSET


UserContent = TextContent | ImageContent
AssistantContent = TextContent | ThinkingContent | ToolCall


class Cost(_Record, kw_only=True):
    input: float
    output: float
    cache_read: float
    cache_write: float
    total: float


class Usage(_Record, kw_only=True):
    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float | UnsetType = field(default=UNSET, name="cacheWrite1h")
    reasoning: float | UnsetType = UNSET
    total_tokens: float
    cost: Cost


class Tool(_Record, kw_only=True):
    name: str
    description: str
    parameters: Any
    constrained_sampling: Any = UNSET


class ToolRef(_Record, kw_only=True):
    name: str


class DiagnosticError(_Record, kw_only=True):
    name: str | UnsetType = UNSET
    message: str
    stack: str | UnsetType = UNSET
    code: Any = UNSET


class AssistantDiagnostic(_Record, kw_only=True):
    type: str
    timestamp: float
    error: DiagnosticError | UnsetType = UNSET
    details: Any = UNSET


class Deferred(_Record, kw_only=True):
    provider: str
    model_id: str
    api: str
    id: str
    expires_at: Any = UNSET
    poll_after_ms: float | UnsetType = UNSET
    data: Any = UNSET


# --------------------------------------------------------------------------------------------
# Messages (docs/FORMAT.md §7.2), tagged by ``role``
# --------------------------------------------------------------------------------------------


class _Message(_Record, tag_field="role"):
    pass


class SystemMessage(_Message, tag="system", kw_only=True):
    content: str | list[TextContent]
    sections: dict[str, str | None] | UnsetType = UNSET
    tools_added: list[Tool] | UnsetType = UNSET
    tools_removed: list[ToolRef] | UnsetType = UNSET
    timestamp: float | None  # null in a compaction checkpoint whose time was unknown (docs/API.md §7.7)


class UserMessage(_Message, tag="user", kw_only=True):
    content: str | list[UserContent]
    timestamp: float


class AssistantMessage(_Message, tag="assistant", kw_only=True):
    content: list[AssistantContent]
    api: str
    provider: str
    model: str
    response_model: str | UnsetType = UNSET
    response_id: str | UnsetType = UNSET
    provider_thinking_level: str | UnsetType = UNSET
    diagnostics: list[AssistantDiagnostic] | UnsetType = UNSET
    usage: Usage
    stop_reason: str
    deferred: Deferred | UnsetType = UNSET
    error_message: str | UnsetType = UNSET
    raw_stop_reason: Any = UNSET
    end_turn: bool | UnsetType = UNSET
    timestamp: float


class ToolResultMessage(_Message, tag="toolResult", kw_only=True):
    tool_call_id: str
    tool_name: str
    content: list[UserContent]
    details: Any = UNSET
    usage: Usage | UnsetType = UNSET
    is_error: bool
    added_tool_names: list[str] | UnsetType = UNSET  # seed document only; carried if present
    timestamp: float


class BashExecutionMessage(_Message, tag="bashExecution", kw_only=True):
    command: str
    output: str
    exit_code: float | UnsetType | None = UNSET  # number | undefined
    cancelled: bool
    truncated: bool
    full_output_path: str | UnsetType = UNSET
    exclude_from_context: bool | UnsetType = UNSET
    timestamp: float


class CustomMessage(_Message, tag="custom", kw_only=True):
    custom_type: str
    content: str | list[UserContent]
    display: bool
    details: Any = UNSET
    timestamp: float


class HookMessage(_Message, tag="hookMessage", kw_only=True):
    """The v1/v2 name of :class:`CustomMessage` (renamed by the v2 -> v3 migration, docs/FORMAT.md §8.3)."""

    custom_type: str
    content: str | list[UserContent]
    display: bool
    details: Any = UNSET
    timestamp: float


class BranchSummaryMessage(_Message, tag="branchSummary", kw_only=True):
    """Synthesized by context building; pi never stores it (a ``message`` entry may hold one)."""

    summary: str
    from_id: str
    timestamp: float | None  # ms(entry.timestamp); NaN serializes as null


class CompactionSummaryMessage(_Message, tag="compactionSummary", kw_only=True):
    """Synthesized by context building; pi never stores it."""

    summary: str
    tokens_before: float
    timestamp: float | None


Message = (
    SystemMessage
    | UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | HookMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
)


class UnknownMessage(_Record, kw_only=True):
    """A message whose ``role`` this version does not know: only the role is typed."""

    role: str


# --------------------------------------------------------------------------------------------
# The header (docs/FORMAT.md §4) and entries (§5, §6), tagged by ``type``
# --------------------------------------------------------------------------------------------


class _Line(_Record, tag_field="type"):
    pass


class SessionHeader(_Line, tag="session", kw_only=True):
    version: float | UnsetType = UNSET  # absent in v1 files
    id: str
    timestamp: str
    cwd: str
    parent_session: str | UnsetType = UNSET


class _Entry(_Line, kw_only=True):
    id: str
    parent_id: str | None
    timestamp: str


class MessageEntry(_Entry, tag="message", kw_only=True):
    message: Message


class ModelChangeEntry(_Entry, tag="model_change", kw_only=True):
    provider: str
    model_id: str


class ThinkingLevelChangeEntry(_Entry, tag="thinking_level_change", kw_only=True):
    thinking_level: str


class UsageEntry(_Entry, tag="usage", kw_only=True):
    kind: str
    provider: str
    model: str
    usage: Usage
    note: str | UnsetType = UNSET


class CompactionEntry(_Entry, tag="compaction", kw_only=True):
    summary: str
    # "keep nothing": pi 1.6.0 writes the compaction's own id; 0.86.1 wrote null, or no key when
    # none was given (and pi's version 1 migration leaves it out when it cannot place it)
    first_kept_entry_id: str | UnsetType | None = UNSET
    tokens_before: float
    details: Any = UNSET
    usage: Usage | UnsetType | None = UNSET
    from_hook: bool | UnsetType | None = UNSET
    system_message: SystemMessage | UnsetType = UNSET


class BranchSummaryEntry(_Entry, tag="branch_summary", kw_only=True):
    from_id: str  # the abandoned leaf, or the literal "root"
    summary: str
    details: Any = UNSET
    usage: Usage | UnsetType | None = UNSET
    from_hook: bool | UnsetType | None = UNSET


class CustomEntry(_Entry, tag="custom", kw_only=True):
    custom_type: str
    data: Any = UNSET


class CustomMessageEntry(_Entry, tag="custom_message", kw_only=True):
    custom_type: str
    content: str | list[UserContent]
    display: bool
    details: Any = UNSET


class ContextEditReplacement(_Record, kw_only=True):
    """What replaces the target's message content (the content of any role an edit may target)."""

    content: str | list[UserContent | AssistantContent]


class ContextEditEntry(_Entry, tag="context_edit", kw_only=True):
    """pi 1.6.0: omits (``replacement: null``) or replaces the content of an earlier entry's messages."""

    target_id: str
    replacement: ContextEditReplacement | None


class LabelEntry(_Entry, tag="label", kw_only=True):
    target_id: str
    label: str | UnsetType | None = UNSET  # any falsy value clears the target's label


class SessionInfoEntry(_Entry, tag="session_info", kw_only=True):
    name: str | UnsetType | None = UNSET


class UnknownEntry(_Record, kw_only=True):
    """An entry of a type this version does not know (docs/FORMAT.md §6.12): kept, indexed, a tree node."""

    type: str
    id: str
    parent_id: str | None
    timestamp: str


SessionLine = (
    SessionHeader
    | MessageEntry
    | ModelChangeEntry
    | ThinkingLevelChangeEntry
    | UsageEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | ContextEditEntry
    | LabelEntry
    | SessionInfoEntry
)
"""A known line: the header or an entry of a type pi writes (tagged by ``type``)."""


def _tags(union: Any) -> frozenset[str]:
    info = msgspec.inspect.type_info(union)
    return frozenset(t.tag for t in info.types)  # type: ignore[attr-defined]


ENTRY_TYPES: Final[frozenset[str]] = _tags(SessionLine) - {"session"}
MESSAGE_ROLES: Final[frozenset[str]] = _tags(Message)
BLOCK_TYPES: Final[frozenset[str]] = frozenset({"text", "image", "thinking", "toolCall"})
STOP_REASONS: Final[frozenset[str]] = frozenset({"stop", "length", "toolUse", "error", "aborted", "deferred"})

_line_decoder = msgspec.json.Decoder(SessionLine)
_unknown_entry_decoder = msgspec.json.Decoder(UnknownEntry)
_message_entry_head = msgspec.json.Decoder(UnknownMessage)


class _UnknownRoleEntry(_Entry, tag="message", kw_only=True):
    message: UnknownMessage


_unknown_role_decoder = msgspec.json.Decoder(_UnknownRoleEntry)


def decode_line(data: str | bytes) -> SessionLine | UnknownEntry | MessageEntry:
    """Decode one line into its typed record, or raise ``msgspec.DecodeError``/``ValidationError``.

    A line of an unknown ``type`` becomes :class:`UnknownEntry`; a ``message`` entry whose role is
    unknown becomes a :class:`MessageEntry` holding an :class:`UnknownMessage`. Anything else that
    does not fit the records raises (the error names the first problem only).
    """
    try:
        return _line_decoder.decode(data)
    except msgspec.ValidationError as err:
        if "at `$.type`" in str(err):
            record = _unknown_entry_decoder.decode(data)
            if record.type in ENTRY_TYPES or record.type == "session":
                raise
            return record
        if "at `$.message.role`" in str(err):
            head = _unknown_role_decoder.decode(data)
            if head.message.role in MESSAGE_ROLES:
                raise
            return MessageEntry(
                id=head.id,
                parent_id=head.parent_id,
                timestamp=head.timestamp,
                message=head.message,  # type: ignore[arg-type]
            )
        raise


def _unknown_entry_schema(known: frozenset[str]) -> dict[str, Any]:
    return {
        "title": "UnknownEntry",
        "description": "An entry of a type this version does not know: kept as-is, a tree node (docs/FORMAT.md §6.12).",
        "type": "object",
        "properties": {
            "type": {"type": "string", "not": {"enum": sorted(known | {"session"})}},
            "id": {"type": "string"},
            "parentId": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "timestamp": {"type": "string"},
        },
        "required": ["type", "id", "parentId", "timestamp"],
    }


def session_line_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of one session line: the header, a known entry or an unknown entry."""
    known = msgspec.json.schema(SessionLine)
    defs = known.pop("$defs", {})
    # a message entry may hold a message of a newer role
    message_property = defs["MessageEntry"]["properties"]["message"]
    defs["MessageEntry"]["properties"]["message"] = {
        "anyOf": [message_property, {"$ref": "#/$defs/UnknownMessage"}]
    }
    defs["UnknownMessage"] = _unknown_message_schema(MESSAGE_ROLES)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pi session line",
        "description": "One line of a pi session file (.jsonl), as written by pi (0.86.1, 1.6.0).",
        "anyOf": [known, {"$ref": "#/$defs/UnknownEntry"}],
        "$defs": {**defs, "UnknownEntry": _unknown_entry_schema(ENTRY_TYPES)},
    }


def _unknown_message_schema(known: frozenset[str]) -> dict[str, Any]:
    return {
        "title": "UnknownMessage",
        "description": "A message of a role this version does not know: carried opaquely.",
        "type": "object",
        "properties": {"role": {"type": "string", "not": {"enum": sorted(known)}}},
        "required": ["role"],
    }


def message_schema() -> dict[str, Any]:
    """The JSON Schema of an AgentMessage (``message.message`` and context messages)."""
    known = msgspec.json.schema(Message)
    defs = known.pop("$defs", {})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pi agent message",
        "anyOf": [known, {"$ref": "#/$defs/UnknownMessage"}],
        "$defs": {**defs, "UnknownMessage": _unknown_message_schema(MESSAGE_ROLES)},
    }
