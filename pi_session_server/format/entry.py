"""One session entry: an envelope held in memory, the body decoded on demand.

A 2 GB session must open in bounded memory, so an :class:`Entry` keeps only what the tree, the
index and the context settings need (type, id, parentId, timestamp, the message role). The full
JSON value is either held (entries we created, small lines, migrated files) or re-read from the
file by byte offset when somebody asks for it.

An Entry is a read-only ``Mapping`` of the JSON object, so ``entry["message"]`` and
``entry.get("label")`` work like on the reference's plain objects. A value that is not a JSON object
(which the reference keeps only for values handed to ``inMemory`` directly) is wrapped too: it reads
as an empty mapping and :attr:`Entry.value` returns it unchanged.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, get_args

import msgspec

from ..errors import StaleFileError
from .jsjson import JsonSyntaxError, dumps, parse_bytes
from .jsvalue import ABSENT, as_js_number, strict_equal


class LineSource(Protocol):
    """Where a lazily held entry's line can be read again."""

    def read_line(self, offset: int, length: int) -> Any:  # pragma: no cover - protocol
        """Return the parsed JSON value of the line at ``offset``."""
        ...

    def found_other_line(self) -> None:  # pragma: no cover - protocol
        """A line read (again, or at load) is not the entry loaded from it (StaleFileError follows)."""
        ...


_ENVELOPE_KEYS = ("type", "id", "parentId", "timestamp")


# The entry types and message roles the typed records know (records.ENTRY_TYPES, MESSAGE_ROLES;
# a test keeps the lists equal). Declared as Literals so that msgspec hands out one shared string
# per value instead of a new one per line (two allocations less per entry); a line with any other
# type or role is decoded again by decode_open_envelope.
KnownType = Literal[
    "session",
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "usage",
    "context_edit",  # pi 1.6.0
]
KnownRole = Literal[
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
    "system",
    "hookMessage",
]


if TYPE_CHECKING:
    NotFromJson = Any
else:

    class NotFromJson:
        """The declared type of Entry's own fields: msgspec cannot decode any JSON value into it,
        so a line carrying a member named like one of them is rejected by ENVELOPE_DECODER (and
        read by the open decoder, which ignores such members) instead of setting the field. The
        scanner can then leave these fields at their defaults instead of resetting every line's."""


class MessageHead(msgspec.Struct, gc=False, frozen=True):
    """The part of ``entry.message`` kept with the envelope: its role. (The model of an assistant
    message is read from the body when asked: only the last one on a path ever is.) Frozen: the
    heads of the known roles are shared by every entry (see :func:`head_for`)."""

    role: KnownRole = ABSENT


class ObservedHead(MessageHead, gc=False, frozen=True):
    """The head a scan with an observer decodes (``OBSERVED_ENVELOPE_DECODER``, see
    ``scan.observing_lines``): what a message's preview shows comes with it from its line, so that
    the observer makes the preview without decoding the line again: a tool result's call id and
    tool name, a user or assistant message's content (as raw JSON, decoded by the observer: the
    head takes any JSON value there, as the envelope does), stop reason and error. A class of its
    own so that a scan without an observer (the server's, the library's opens) does not pay for
    decoding them; the scan swaps it for the shared head of its role once observed."""

    toolCallId: Any = ABSENT  # the JSON keys
    toolName: Any = ABSENT
    content: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET  # (refers to the scan's buffer)
    stopReason: Any = ABSENT
    errorMessage: Any = ABSENT


# The head an Entry's decoder decodes (Entry[ObservedHead] decodes ObservedHead's): a parameter of
# Entry's type, so that a scan chooses per open what its lines' heads carry while every entry stays
# of the one class Entry (``type(entry) is Entry`` is how an entry is told from other values).
if TYPE_CHECKING:  # the default makes a bare Entry an Entry[MessageHead]
    import typing_extensions  # (not at run time: a big module, which the server does not import)

    DecodedHead = typing_extensions.TypeVar(
        "DecodedHead", bound=MessageHead, default=MessageHead, covariant=True
    )
else:  # a bare Entry decodes its bound
    DecodedHead = TypeVar("DecodedHead", bound=MessageHead, covariant=True)


# One head per known role (and one for a message without a role), shared by the entries made from
# values (appended, migrated, in memory), and by those a scan decodes in its hot loop (the head
# msgspec decoded gives way to its role's): every role the head decoder takes is a key.
SHARED_HEADS: dict[Any, MessageHead] = {role: MessageHead(role) for role in get_args(KnownRole)}
SHARED_HEADS[ABSENT] = MessageHead()


def head_for(role: Any) -> MessageHead:
    """The head of a message with this ``role`` (shared when the role is a known one)."""
    if type(role) is str or role is ABSENT:
        shared = SHARED_HEADS.get(role)
        if shared is not None:
            return shared
    return MessageHead(role)


class LineBytes(bytes):
    """An entry's line as read from the file (without its newline), held instead of its decoded
    value: a type of its own so that no JSON value held by an entry can be mistaken for it."""

    __slots__ = ()


class Entry(msgspec.Struct, Generic[DecodedHead], gc=False, rename={"parent_id": "parentId"}):
    """A file entry (or the header) with its envelope in fields and its body held or lazy.

    A msgspec Struct so that opening a file decodes each line's envelope straight into its Entry in
    C (``ENVELOPE_DECODER``): one object per line and no Python per field, which is most of what
    opening a large session costs. The fields after ``label`` are never meant to come from the
    line; the scanner overwrites them after decoding. Build entries from values with :meth:`of`.
    (``gc=False``: an Entry never references anything that references it back.)
    """

    type: KnownType = ABSENT  # any JSON value once decoded (see decode_open_envelope)
    id: Any = ABSENT
    parent_id: Any = ABSENT
    timestamp: Any = ABSENT
    message: DecodedHead | None = None
    targetId: Any = ABSENT  # the JSON key; labels are indexed at load time
    label: Any = ABSENT
    line: Any = -1
    offset: Any = -1
    length: Any = 0
    # The JSON value when held; the line's bytes (LineBytes) when only those are kept (a small
    # file's entries, decoded on demand); ABSENT: read again from _source by offset.
    _body: NotFromJson = ABSENT
    _source: NotFromJson = None

    __hash__ = object.__hash__

    @classmethod
    def of(
        cls,
        value: Any,
        *,
        source: LineSource | None = None,
        line: int = -1,
        offset: int = -1,
        length: int = 0,
    ) -> Entry:
        """An entry holding ``value`` (created by us, small, migrated or handed to ``inMemory``)."""
        entry = cls(line=line, offset=offset, length=length, _body=value, _source=source)
        entry.refresh_envelope()
        return entry

    # -- envelope ---------------------------------------------------------------------------

    def refresh_envelope(self: Entry) -> None:  # (an entry made from a value has a plain head)
        """Derive the envelope from the held value (after creating or mutating it)."""
        value = self.value
        if isinstance(value, dict):
            get = value.get
            self.type = get("type", ABSENT)
            self.id = get("id", ABSENT)
            self.parent_id = get("parentId", ABSENT)
            self.timestamp = get("timestamp", ABSENT)
            message = get("message", ABSENT) if self.type == "message" else ABSENT
            if isinstance(message, dict):
                self.message = head_for(message.get("role", ABSENT))
            else:
                self.message = None
            if self.type == "label":
                self.targetId = get("targetId", ABSENT)
                self.label = get("label", ABSENT)
            else:
                self.targetId = self.label = ABSENT
        else:
            self.type = self.id = self.parent_id = self.timestamp = ABSENT
            self.targetId = self.label = ABSENT
            self.message = None

    @property
    def role(self) -> Any:
        """``message.role`` of a message entry (ABSENT for anything else)."""
        head = self.message
        if head is None or self.type != "message":
            return ABSENT
        role = head.role
        return role if type(role) is str else as_js_number(role)  # (asked for every node of a tree view)

    @property
    def model_ref(self) -> tuple[Any, Any] | None:
        """(provider, model) of an assistant message entry."""
        head = self.message
        if head is None or self.type != "message" or head.role != "assistant":
            return None
        message = self.get("message")  # read from the body (the envelope keeps the role only)
        if not isinstance(message, dict):
            return None
        return as_js_number(message.get("provider", ABSENT)), as_js_number(message.get("model", ABSENT))

    @property
    def aux(self) -> tuple[Any, Any] | None:
        """(targetId, label) of a label entry."""
        if self.type != "label":
            return None
        return as_js_number(self.targetId), as_js_number(self.label)

    # -- body -------------------------------------------------------------------------------

    @property
    def value(self) -> Any:
        """The entry's JSON value (decoded from the file if it is not held)."""
        value = self._body
        if value is ABSENT:
            if self._source is None:
                return ABSENT
            value = self._source.read_line(self.offset, self.length)
        elif type(value) is LineBytes:
            # (bytes read at load, but the envelope may come from the file's index: see scan_index)
            try:
                value = _parse_line(value)
            except StaleFileError:
                if self._source is not None:
                    self._source.found_other_line()
                raise
        else:
            return value
        if not (self.same_envelope(value) and self._same_fields_beside(value)):
            if self._source is not None:
                self._source.found_other_line()
            raise StaleFileError(
                f"session file changed underneath: line {self.line + 1} is not the entry read at load"
            )
        return value

    def same_envelope(self, value: Any) -> bool:
        """Does a re-read value still carry the envelope we loaded? (Never return another entry's body.)"""
        if not isinstance(value, dict):
            return False
        return (
            _same_json(value.get("id", ABSENT), self.id)
            and _same_json(value.get("parentId", ABSENT), self.parent_id)
            and _same_json(value.get("type", ABSENT), self.type)
            and _same_json(value.get("timestamp", ABSENT), self.timestamp)
        )

    def _same_fields_beside(self, value: dict[str, Any]) -> bool:
        """Does a re-read value (with :meth:`same_envelope`) carry what else the entry was loaded
        with, which the context and the tree take from it without reading the body: the role (a
        string, as pi writes it), a label's target and text? (An index gives them too.)"""
        head = self.message
        return (
            (head is None or type(head.role) is not str or _role_of(value) == head.role)
            and _same_json(value.get("targetId", ABSENT), self.targetId)
            and _same_json(value.get("label", ABSENT), self.label)
        )

    @property
    def is_loaded(self) -> bool:
        body = self._body
        return body is not ABSENT and type(body) is not LineBytes

    def hold(self) -> Any:
        """Decode the body now and keep it in memory."""
        value = self._body = self.value
        return value

    def to_json(self) -> Any:
        return self.value

    # -- Mapping ----------------------------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        if key in _ENVELOPE_KEYS:
            found = self.get(key, ABSENT)
            if found is not ABSENT:
                return found
        value = self.value
        if isinstance(value, dict):
            return value[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        # envelope keys are answered without touching the body
        if key == "type":
            return default if self.type is ABSENT else self.type
        if key == "id":
            return default if self.id is ABSENT else self.id
        if key == "parentId":
            return default if self.parent_id is ABSENT else self.parent_id
        if key == "timestamp":
            return default if self.timestamp is ABSENT else self.timestamp
        value = self.value
        if isinstance(value, dict):
            return value.get(key, default)
        return default

    def __iter__(self) -> Iterator[str]:
        value = self.value
        return iter(value) if isinstance(value, dict) else iter(())

    def __len__(self) -> int:
        value = self.value
        return len(value) if isinstance(value, dict) else 0

    def __contains__(self, key: object) -> bool:
        if key in _ENVELOPE_KEYS and self.get(key, ABSENT) is not ABSENT:
            return True
        value = self.value
        return isinstance(value, dict) and key in value

    def keys(self) -> KeysView[str]:
        value = self.value
        return value.keys() if isinstance(value, dict) else {}.keys()

    def values(self) -> ValuesView[Any]:
        value = self.value
        return value.values() if isinstance(value, dict) else {}.values()

    def items(self) -> ItemsView[str, Any]:
        value = self.value
        return value.items() if isinstance(value, dict) else {}.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Entry):
            return self is other or self.value == other.value
        return bool(self.value == other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return f"Entry(type={self.type!r}, id={self.id!r}, parentId={self.parent_id!r}, line={self.line})"


def _same_json(read_again: Any, loaded: Any) -> bool:
    """Is a re-read envelope field the same JSON value as the loaded one? Scalars compare as JS
    ``===``; an array or object (a malformed envelope, but one we must still read back) is a fresh
    object on every parse, so it compares by its serialization instead of by identity."""
    if type(loaded) is str:  # ids, types, timestamps as pi writes them: every lazy body read
        return type(read_again) is str and read_again == loaded
    if isinstance(loaded, (dict, list)):
        return isinstance(read_again, type(loaded)) and dumps(read_again) == dumps(loaded)
    # a number: an integer beyond 2**53 is its double in JS, whichever parser kept it exact (the
    # exact one reading the body does; the envelope's type and timestamp may too)
    return strict_equal(as_js_number(read_again), as_js_number(loaded))


def _parse_line(raw: bytes) -> Any:
    """The value of a line read at load, whose envelope may come from the file's index: bytes
    that are not a value are not the entry read (StaleFileError, as a line read again)."""
    try:
        return parse_bytes(raw)
    except JsonSyntaxError as err:
        raise StaleFileError("session file changed underneath: a line is not the entry read at load") from err


def _role_of(value: dict[str, Any]) -> Any:
    message = value.get("message", ABSENT)
    return message.get("role", ABSENT) if isinstance(message, dict) else ABSENT


def message_head(message: Any) -> tuple[Any, tuple[Any, Any] | None]:
    """Role of a message value (ABSENT unless it is an object) and, for assistants, (provider, model)."""
    if isinstance(message, dict):
        role = message.get("role", ABSENT)
        if role == "assistant":
            return role, (message.get("provider", ABSENT), message.get("model", ABSENT))
        return role, None
    return ABSENT, None


Mapping.register(Entry)  # a read-only mapping of the JSON object (Structs cannot subclass Mapping)

# Decodes a line into its Entry, envelope fields only: msgspec validates the whole line but skips
# every other member without building it. Lines of a type or role pi 0.86.1 does not write fail
# its validation; decode_open_envelope takes those.
ENVELOPE_DECODER = msgspec.json.Decoder(Entry)
# The same with the fields of a tool result's head (see ObservedHead), for a scan with an observer.
OBSERVED_ENVELOPE_DECODER = msgspec.json.Decoder(Entry[ObservedHead])


class _OpenMessageHead(msgspec.Struct, gc=False):
    role: Any = ABSENT


class _OpenEnvelope(msgspec.Struct, gc=False, rename={"parent_id": "parentId"}):
    type: Any = ABSENT
    id: Any = ABSENT
    parent_id: Any = ABSENT
    timestamp: Any = ABSENT
    message: _OpenMessageHead | None = None
    targetId: Any = ABSENT  # the JSON key
    label: Any = ABSENT


_decode_open = msgspec.json.Decoder(_OpenEnvelope).decode


def decode_open_envelope(data: Any) -> Entry:
    """The Entry of a line whose type or role is not one of pi 0.86.1's (newer pi releases add
    them; they must read like any other). Raises what msgspec raises for anything else it rejects."""
    found = _decode_open(data)
    head = found.message
    return Entry(
        found.type,
        found.id,
        found.parent_id,
        found.timestamp,
        None if head is None else head_for(head.role),
        found.targetId,
        found.label,
    )
