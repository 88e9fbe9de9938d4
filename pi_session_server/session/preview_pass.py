"""What the tree's previews need from many entries, read in one pass over their file.

A preview (``describe.preview_part``), the tool calls of an assistant message and whether it is a
silent turn depend on a few fields of an entry: its type, the message's role, text blocks, stop
reason, error, tool call id and name, bash command, and a few fields of other entry types. Reading
each entry's body on its own costs a random read and a full decode of its line, images and tool
outputs included. :func:`preview_values` reads the lines of many entries in file order, in large
sequential reads, and decodes only those fields (:class:`PreviewLine`, msgspec skipping the rest),
giving for each entry a value that holds them: ``entry_facts`` computes the same previews from it as
from the entry's whole value. A message with one of the roles most entries have (user, assistant,
tool result) is decoded with its content in one go (:class:`CommonLine`, a union tagged by the
role) and given as its decoded fields (:class:`MessageFields`), which ``entry_facts`` reads without
building a dict per entry; any other line is decoded as :class:`PreviewLine` and given as a dict
holding the fields its preview reads.

Values are made one at a time, as the caller asks for them. A line msgspec will not decode into
these fields as ``JSON.parse`` would read them (lone surrogates, invalid UTF-8, content that is
neither text nor a list of objects) is left out: its entry is read the usual way (``Entry.value``).
As with ``Entry.value``, a line that no longer carries the envelope loaded for its entry raises
``StaleFileError``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, groupby
from operator import attrgetter
from typing import Any, ClassVar

import msgspec

from ..errors import StaleFileError
from ..format.entry import Entry, LineBytes, ObservedHead
from ..format.jsvalue import ABSENT
from ..format.scan import FileLineSource

UNSET = msgspec.UNSET
Unset = msgspec.UnsetType

# Lines are read in windows of at least this many bytes (a longer line gets a window of its own).
WINDOW = 1024 * 1024
# The silences read to the next entries are decoded this many bytes at a time at most (a window
# and the lines put together from it stay in the processor's cache).
SILENCE_WINDOW = 256 * 1024
# A line whose length was not kept, far from the next one wanted, is read this much at first.
LINE_GUESS = 64 * 1024
# Below this many entries to read, reading each one on its own costs less than a pass.
MIN_BATCH = 64


class PreviewBlock(msgspec.Struct, gc=False):
    """A content block: text, or a tool call (image data, thinking and the like are skipped)."""

    type: Any = ABSENT
    text: Any = ABSENT
    id: Any = ABSENT
    name: Any = ABSENT
    arguments: msgspec.Raw | Unset = UNSET  # decoded as far as the tool's rendering needs


class PreviewMessage(msgspec.Struct, gc=False):
    role: Any = ABSENT
    content: msgspec.Raw | Unset = UNSET  # decoded for the roles whose preview shows it
    stopReason: Any = ABSENT  # the JSON keys
    errorMessage: Any = ABSENT
    toolCallId: Any = ABSENT
    toolName: Any = ABSENT
    command: Any = ABSENT


class PreviewLine(msgspec.Struct, gc=False, rename={"parent_id": "parentId"}):
    """The fields of a line that its entry's preview, tool calls and silence depend on, and its
    envelope (to check that the line is still the entry's). Fields whose value only some entries'
    previews show are kept as raw JSON and decoded for those."""

    type: Any = ABSENT
    id: Any = ABSENT
    parent_id: Any = ABSENT
    timestamp: Any = ABSENT
    message: PreviewMessage | Unset | None = UNSET
    content: msgspec.Raw | Unset = UNSET
    customType: Any = ABSENT
    tokensBefore: Any = ABSENT
    summary: msgspec.Raw | Unset = UNSET
    modelId: Any = ABSENT
    thinkingLevel: Any = ABSENT
    label: Any = ABSENT
    name: Any = ABSENT
    targetId: Any = ABSENT
    replacement: msgspec.Raw | Unset = UNSET


class TextMessage(msgspec.Struct, gc=False, tag_field="role", tag="user"):
    """A user message (and, as AssistantMessage, an assistant message), its content decoded with
    the line: the fields its preview, tool calls and silence read."""

    role: ClassVar[str] = "user"
    content: str | list[PreviewBlock] | None = ABSENT
    stopReason: Any = ABSENT  # the JSON keys
    errorMessage: Any = ABSENT


class AssistantMessage(TextMessage, tag="assistant"):
    role: ClassVar[str] = "assistant"


class ToolResultMessage(msgspec.Struct, gc=False, tag_field="role", tag="toolResult"):
    """A tool result: the fields its preview and silence read (its content, the tool's output, is
    skipped)."""

    role: ClassVar[str] = "toolResult"
    stopReason: Any = ABSENT
    errorMessage: Any = ABSENT
    toolCallId: Any = ABSENT
    toolName: Any = ABSENT


class CommonLine(PreviewLine):
    """:class:`PreviewLine` of a message with one of the common roles: a line whose message has
    another role, or none, does not decode as this."""

    message: TextMessage | AssistantMessage | ToolResultMessage | Unset | None = UNSET  # type: ignore[assignment]


class ToolArguments(msgspec.Struct, gc=False, omit_defaults=True):
    """The arguments pi's rendering of a call to one of its own tools shows (tool_call_text.format_tool_call),
    held as they are decoded: a session's tree holds every call's until its results are drawn (a
    Struct is a third of a dict's size). ABSENT: the call has no such argument (left out where it
    is encoded, as the dict of its arguments would not hold it)."""

    path: Any = ABSENT
    file_path: Any = ABSENT
    offset: Any = ABSENT
    limit: Any = ABSENT
    command: Any = ABSENT
    pattern: Any = ABSENT


# pi's tools, whose calls are rendered from ToolArguments (any other tool's from all its arguments)
OWN_TOOLS = frozenset({"read", "write", "edit", "bash", "grep", "find", "ls"})

_decode = msgspec.json.Decoder(PreviewLine).decode
_decode_common = msgspec.json.Decoder(CommonLine).decode
_decode_content = msgspec.json.Decoder(str | list[PreviewBlock] | None).decode
_decode_arguments = msgspec.json.Decoder(ToolArguments).decode
_decode_any = msgspec.json.decode
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
_SHOWN_CONTENT = frozenset({"user", "assistant"})  # the roles whose preview reads message.content


class MessageFields(msgspec.Struct, gc=False):
    """The preview fields of a message whose role most entries have (user, assistant, toolResult):
    the message as decoded, its content (ABSENT: the message has none, or its role's preview does
    not show it), and the arguments of the content's ``toolCall`` blocks, in their order (ABSENT
    for a block without any). (A Struct: made once per message of a pass, in C, where a
    NamedTuple's constructor runs Python code.)"""

    message: TextMessage | ToolResultMessage
    content: Any
    arguments: Sequence[Any]


# What a pass gives for an entry: a message's fields as decoded, or (any other entry) a value that
# holds the entry's preview fields, its other fields left out.
PreviewValue = MessageFields | dict[str, Any]

_NO_ARGUMENTS: tuple[Any, ...] = ()
_COMMON_MESSAGES = frozenset({TextMessage, AssistantMessage, ToolResultMessage})


def preview_values(entries: Iterable[Entry]) -> Iterator[tuple[Entry, PreviewValue]]:
    """(entry, a value holding the entry's preview fields, its other fields left out) for the
    entries whose lines are read from their file, in file order, and for those holding their
    line's bytes (a small file's: decoding only these fields costs less than their whole value),
    each made as it is needed: a caller that keeps what it makes of a value, not the value, holds
    one at a time. Entries holding their value are left out (it is at hand), and so is an entry
    whose line does not decode as :class:`PreviewLine`. Raises StaleFileError as ``Entry.value``.
    (The entries are sorted out at the call; the values come straight from the generators that
    make them, without a generator of this function's in between.)"""
    held, lazy = _lines_to_read(entries)
    groups = [_read_lines(source, group) for source, group in lazy]
    return chain(_held_values(held), *groups) if held else chain(*groups)


def line_value(data: bytes | memoryview) -> PreviewValue | None:
    """The preview value of an entry from the bytes of its own line, as a scan decoded the entry
    from them (see ``scan.observing_lines``: no envelope to check); None where the line does not
    decode into these fields as ``JSON.parse`` reads it (the entry is read the usual way). The
    value's raw fields (a tool call's arguments as msgspec.Raw) refer to ``data``: use it while
    ``data`` holds the line. (Run for every line a scan observes: :func:`_decoded`, inline.)"""
    try:
        common: CommonLine | None = _decode_common(data)
    except msgspec.ValidationError:  # a message of another role, or without one
        common = None
    except _DECODE_ERRORS:
        return None
    try:
        if common is None:
            return _value_of(_decode(data))
        message = common.message
        if type(message) in _COMMON_MESSAGES and common.type == "message":
            return _message_fields(message)  # type: ignore[arg-type]
        return _other_line(common, data)[1]
    except _DECODE_ERRORS:
        return None


def head_fields(head: ObservedHead) -> MessageFields | None:
    """The preview value of a user or assistant message from the head a scan decoded with its
    envelope (see entry.ObservedHead), its content decoded alone: the line is not decoded again.
    None where that content does not decode into the preview's fields (:func:`line_value` of the
    line then says what the preview is made of). Like ``line_value``'s, the value refers to the
    scan's buffer: use it while the scan holds the line."""
    content = head.content
    message_type = AssistantMessage if head.role == "assistant" else TextMessage
    try:
        decoded = ABSENT if content is UNSET else _decode_content(content)
        return _message_fields(message_type(decoded, head.stopReason, head.errorMessage))
    except _DECODE_ERRORS:
        return None


def _lines_to_read(entries: Iterable[Entry]) -> tuple[list[Entry], list[tuple[FileLineSource, list[Entry]]]]:
    """The entries holding their line's bytes, and those whose lines are read from their file, by
    file, in file order (entries holding their value are left out)."""
    held: list[Entry] = []
    lazy: list[Entry] = []
    for entry in entries:
        body = entry._body
        if type(body) is LineBytes:
            held.append(entry)
        elif body is ABSENT and type(entry._source) is FileLineSource:
            lazy.append(entry)
    one_file = len(set(map(attrgetter("_source"), lazy))) <= 1
    lazy.sort(key=attrgetter("offset") if one_file else _by_source_and_offset)
    return held, [(source, list(group)) for source, group in groupby(lazy, key=attrgetter("_source"))]


def _held_values(entries: list[Entry]) -> Iterator[tuple[Entry, PreviewValue]]:
    """:func:`preview_values` of entries holding their line's bytes."""
    for entry in entries:
        try:
            line, value = _decoded(entry._body)
        except _DECODE_ERRORS:
            continue  # read the usual way
        if not _same_envelope(entry, line):
            raise _stale(entry)
        yield entry, value


def _by_source_and_offset(entry: Entry) -> tuple[int, int]:
    return id(entry._source), entry.offset


def _read_lines(source: FileLineSource, entries: list[Entry]) -> Iterator[tuple[Entry, PreviewValue]]:
    """(entry, its preview value) for ``entries`` (in file order), their lines read a window at a
    time. (Run once per entry of a big file: what most lines need, a message of a common role with
    a plain envelope, is done inline.)"""
    for entry, data in _lines_in_windows(source, entries):
        try:  # (_decoded, inline)
            common: CommonLine | None = _decode_common(data)
        except msgspec.ValidationError:  # a message of another role, or without one
            common = None
        except _DECODE_ERRORS:
            continue  # read the usual way
        try:
            if common is None:
                line: PreviewLine = _decode(data)
                value: PreviewValue = _value_of(line)
            elif type(common.message) in _COMMON_MESSAGES and common.type == "message":
                line, value = common, _message_fields(common.message)  # type: ignore[arg-type]
            else:
                line, value = _other_line(common, data)
        except _DECODE_ERRORS:
            continue  # read the usual way
        envelope = _envelope(entry)
        plain_and_same = _envelope(line) == envelope and tuple(map(type, envelope)) in _PLAIN
        if not plain_and_same and not _same_envelope(entry, line):  # (its common case inline)
            raise _stale(entry)
        yield entry, value


def _lines_in_windows(source: FileLineSource, entries: list[Entry]) -> Iterator[tuple[Entry, memoryview]]:
    """(entry, the bytes of its line) for ``entries`` (in file order), their lines read a window
    at a time (each view valid until the next is asked for)."""
    fd = source.fd
    window = b""
    view = memoryview(window)
    find = window.find
    window_start = window_end = 0
    last = len(entries) - 1
    for index, entry in enumerate(entries):
        offset = entry.offset
        at = offset - window_start
        length = entry.length
        if length:
            stop = at + length
            if at < 0 or stop > window_end:  # not all in the window: the next window starts with it
                size = _window_size(offset, length, entries[index + 1].offset if index < last else None)
                window = os.pread(fd, size, offset)
                view, find, window_end = memoryview(window), window.find, len(window)
                window_start, at, stop = offset, 0, length
                if stop > window_end:
                    raise _stale(entry)
        else:
            stop = find(b"\n", at) if 0 <= at < window_end else -1
            if stop < 0:
                size = _window_size(offset, 0, entries[index + 1].offset if index < last else None)
                window = _window_with_line(fd, offset, size)
                view, find, window_end = memoryview(window), window.find, len(window)
                window_start, at = offset, 0
                stop = find(b"\n")
                if stop < 0:
                    stop = window_end
        yield entry, view[at:stop]


class SilenceBlock(msgspec.Struct, gc=False):
    """A content block as far as a silent turn goes (``describe.is_silent_turn``): its type and text."""

    type: Any = ABSENT
    text: Any = ABSENT


class SilenceMessage(msgspec.Struct, gc=False):
    """An assistant message as far as a silent turn goes: its text blocks and its stop reason."""

    content: str | list[SilenceBlock] | None = ABSENT
    stopReason: Any = ABSENT  # the JSON key


class SilenceLine(msgspec.Struct, gc=False, rename={"parent_id": "parentId"}):
    """A line as far as whether its message is a silent turn goes, and its envelope (to check that
    the line is still the entry's)."""

    type: Any = ABSENT
    id: Any = ABSENT
    parent_id: Any = ABSENT
    timestamp: Any = ABSENT
    message: SilenceMessage | Unset | None = UNSET


_decode_silence = msgspec.json.Decoder(SilenceLine).decode
_decode_silence_lines = msgspec.json.Decoder(SilenceLine).decode_lines


def silences(
    entries: Iterable[Entry], ends: Sequence[int] | None = None
) -> Iterator[tuple[Entry, SilenceMessage | None]]:
    """(entry, its message as far as a silent turn goes; None: the line holds no message object)
    for the entries whose lines are read from their file, or held as bytes: the filters ask it of
    every assistant message they pass, most of which are not shown, so nothing else of the line is
    decoded (no preview, no tool call). Entries holding their value are left out, and so is an
    entry whose line does not decode as :class:`SilenceLine` (content neither text nor a list of
    objects, lone surrogates, a number JSON.parse reads and msgspec will not): read the usual way.
    Raises StaleFileError as ``Entry.value``.

    ``ends``: for each of ``entries`` (then a list, in file order, all of one file), where the next
    entry of its file starts (0: not known), which its line ends before (see
    :func:`_silences_to_ends`)."""
    if ends is None:
        return _silences(entries)
    assert isinstance(entries, list) and len(entries) == len(ends)
    return _silences_to_ends(entries, ends)


def _silences(entries: Iterable[Entry]) -> Iterator[tuple[Entry, SilenceMessage | None]]:
    """:func:`silences` of entries in any order, each line read to its newline."""
    held, lazy = _lines_to_read(entries)
    held_lines = ((entry, entry._body) for entry in held)
    for entry, data in chain(held_lines, *(_lines_in_windows(source, group) for source, group in lazy)):
        try:
            line = _decode_silence(data)
        except _DECODE_ERRORS:
            continue  # read the usual way
        if not _same_envelope(entry, line):
            raise _stale(entry)
        message = line.message
        yield entry, message if type(message) is SilenceMessage else None


def _silences_to_ends(
    entries: list[Entry], ends: Sequence[int]
) -> Iterator[tuple[Entry, SilenceMessage | None]]:
    """:func:`silences` of entries read from one file, in file order, each known to end before the
    next entry of its file (``ends``). The file between an entry and the next holds its line, its
    newline and at most blank lines: the stretches of a window's entries, put together, are lines
    msgspec decodes in one call (``decode_lines``), without a call per line to find its end or
    decode it. A window whose stretches are not so (a line that is not an entry in between, a line
    the decoder refuses, a file changed) has its entries read line by line (:func:`_silences`)."""
    fd = entries[0]._source.fd
    one_by_one: list[Entry] = []
    count = len(entries)
    at = 0
    while at < count:
        if not ends[at] or entries[at]._body is not ABSENT:
            one_by_one.append(entries[at])
            at += 1
            continue
        start = entries[at].offset
        stop = at + 1  # entries[at:stop] are read in one window
        while (
            stop < count
            and ends[stop]
            and ends[stop] - start <= SILENCE_WINDOW
            and entries[stop]._body is ABSENT
        ):
            stop += 1
        chunk = entries[at:stop]
        lines = _window_silences(fd, chunk, ends[at:stop])
        if lines is None:
            one_by_one.extend(chunk)
        else:
            for entry, line in zip(chunk, lines, strict=True):
                message = line.message
                yield entry, message if type(message) is SilenceMessage else None
        at = stop
    if one_by_one:
        yield from _silences(one_by_one)


def _window_silences(fd: int, entries: list[Entry], ends: Sequence[int]) -> list[SilenceLine] | None:
    """The lines of ``entries`` (see :func:`_silences_to_ends`), read in one window and decoded in
    one call (None: not so). Raises StaleFileError for a line that no longer carries its entry's
    envelope."""
    start, end = entries[0].offset, ends[-1]
    window = os.pread(fd, end - start, start)
    if len(window) != end - start:
        return None
    view = memoryview(window)
    stretches = [view[e.offset - start : stop - start] for e, stop in zip(entries, ends, strict=True)]
    try:
        lines = _decode_silence_lines(b"".join(stretches))
    except _DECODE_ERRORS:
        return None
    if len(lines) != len(entries):
        return None
    envelopes = list(map(_envelope, entries))
    if envelopes != list(map(_envelope, lines)) or not _STRING_OR_NULL.issuperset(
        map(type, chain.from_iterable(envelopes))
    ):  # (the common case, plain envelopes the same, checked for the whole window at once)
        for entry, line in zip(entries, lines, strict=True):
            if not _same_envelope(entry, line):
                raise _stale(entry)
    return lines


def _window_size(offset: int, length: int, following: int | None) -> int:
    """How much to read at ``offset`` for a line of ``length`` bytes (0: its length was not kept):
    a window, when the next entry wanted starts within one (lines near one another are read
    together), else the line alone, or a first guess at it (the rows of a reply can be few
    lines each far from the next: a window each would read megabytes to use a few kilobytes)."""
    if following is not None and following - offset < WINDOW:
        return max(WINDOW, length)
    return length or LINE_GUESS


def _window_with_line(fd: int, offset: int, size: int = WINDOW) -> bytes:
    """A window of the file from ``offset`` of ``size`` bytes at least, holding the whole line
    there (up to the end of the file), when its length was not kept."""
    window = os.pread(fd, size, offset)
    end = window.find(b"\n")
    while end < 0 and len(window) >= size:  # a long line
        more = os.pread(fd, len(window), offset + len(window))
        if not more:
            break
        window += more
        end = window.find(b"\n", len(window) - len(more))
    return window


# (type, id, parentId, timestamp) of an Entry or a PreviewLine
_envelope = attrgetter("type", "id", "parent_id", "timestamp")


# The types of an envelope as pi writes it (string fields, a null parentId at the root): one that
# equals another only if it is the same JSON (no other JSON value equals a string, nor null).
_PLAIN = frozenset({(str, str, str, str), (str, str, type(None), str)})
# The types of the fields of envelopes that are the same JSON where they are equal (as in _PLAIN).
_STRING_OR_NULL = frozenset({str, type(None)})


def _decoded(data: bytes | memoryview) -> tuple[PreviewLine, PreviewValue]:
    """A line's preview fields, and the value describe reads them from. Raises msgspec's errors."""
    try:
        common = _decode_common(data)
    except msgspec.ValidationError:  # a message of another role, or without one
        line = _decode(data)
        return line, _value_of(line)
    message = common.message
    if type(message) in _COMMON_MESSAGES and common.type == "message":
        return common, _message_fields(message)  # type: ignore[arg-type]
    return _other_line(common, data)


def _other_line(common: CommonLine, data: bytes | memoryview) -> tuple[PreviewLine, dict[str, Any]]:
    """The preview fields of a line that decoded as :class:`CommonLine` but is no message of a
    common role."""
    if type(common.message) not in _COMMON_MESSAGES:  # no message, or null
        return common, _value_of(common)
    line = _decode(data)  # a member named message where no preview reads it: as any other line
    return line, _value_of(line)


def _same_envelope(entry: Entry, line: PreviewLine | SilenceLine) -> bool:
    """Does the line still carry the envelope loaded for ``entry``? (``Entry.same_envelope``; for
    the envelopes pi writes, plain equality says the same: see :data:`_PLAIN`.)"""
    envelope = _envelope(entry)
    if tuple(map(type, envelope)) in _PLAIN:
        return _envelope(line) == envelope
    fields = {"type": line.type, "id": line.id, "parentId": line.parent_id, "timestamp": line.timestamp}
    return entry.same_envelope({key: field for key, field in fields.items() if field is not ABSENT})


def _message_fields(message: TextMessage | ToolResultMessage) -> MessageFields:
    """The fields of a message with one of the common roles, its tool calls' arguments decoded."""
    if type(message) is ToolResultMessage:
        return MessageFields(message, ABSENT, _NO_ARGUMENTS)
    assert isinstance(message, TextMessage)
    content = message.content
    if type(content) is not list:
        return MessageFields(message, content, _NO_ARGUMENTS)
    arguments = [
        ABSENT if block.arguments is UNSET else _arguments(block.name, block.arguments)
        for block in content
        if block.type == "toolCall"
    ]
    return MessageFields(message, content, arguments)


def _value_of(line: PreviewLine) -> dict[str, Any]:
    """The entry's value as far as its preview goes: the fields set in the line (ABSENT: the line
    has no such member), content decoded where the preview shows it."""
    value = {
        name: field
        for name, field in zip(_LINE_NAMES, _line_fields(line), strict=True)
        if field is not ABSENT
    }
    etype = line.type
    message = line.message
    if type(message) is PreviewMessage:
        fields = {
            name: field
            for name, field in zip(_MESSAGE_NAMES, _message_field_values(message), strict=True)
            if field is not ABSENT
        }
        content = message.content
        if content is not UNSET:
            role = message.role
            fields["content"] = _content(content) if type(role) is str and role in _SHOWN_CONTENT else None
        value["message"] = fields
    if line.content is not UNSET:
        value["content"] = _content(line.content) if etype == "custom_message" else None
    if line.summary is not UNSET:
        value["summary"] = _decode_any(line.summary) if etype == "branch_summary" else None
    if line.replacement is not UNSET:
        value["replacement"] = _decode_any(line.replacement) if etype == "context_edit" else None
    return value


# the fields taken as they are, by their JSON names (see _value_of for the others)
_LINE_FIELDS = [
    f
    for f in msgspec.structs.fields(PreviewLine)
    if f.name not in ("message", "content", "summary", "replacement")
]
_LINE_NAMES = tuple(f.encode_name for f in _LINE_FIELDS)
_line_fields = attrgetter(*(f.name for f in _LINE_FIELDS))
_MESSAGE_NAMES = ("role", "stopReason", "errorMessage", "toolCallId", "toolName", "command")
_message_field_values = attrgetter(*_MESSAGE_NAMES)


def _content(raw: msgspec.Raw) -> Any:
    content = _decode_content(raw)
    if type(content) is list:
        return [_block(block) for block in content]
    return content


def _block(block: PreviewBlock) -> dict[str, Any]:
    """A block as far as previews go: a text block's text, a tool call's id, name and arguments."""
    btype = block.type
    fields: dict[str, Any] = {} if btype is ABSENT else {"type": btype}
    if block.text is not ABSENT:
        fields["text"] = block.text
    if btype == "toolCall":
        for name, field in zip(_CALL_NAMES, _call_fields(block), strict=True):
            if field is not ABSENT:
                fields[name] = field
        arguments = block.arguments
        if arguments is not UNSET:
            fields["arguments"] = _arguments(block.name, arguments)
    return fields


_CALL_NAMES = ("id", "name")
_call_fields = attrgetter(*_CALL_NAMES)


def _arguments(name: Any, raw: msgspec.Raw) -> Any:
    if type(name) is str and name in OWN_TOOLS:
        try:
            arguments = _decode_arguments(raw)
        except _DECODE_ERRORS:  # not an object: shown as {} (see format_tool_call)
            return _decode_any(raw)
        return arguments
    return _decode_any(raw)


def _stale(entry: Entry) -> StaleFileError:
    source = entry._source
    where = f" ({source.path})" if type(source) is FileLineSource else ""
    return StaleFileError(
        f"session file changed underneath: line {entry.line + 1} is not the entry read at load{where}"
    )
