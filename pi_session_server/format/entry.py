"""One session entry: an envelope held in memory, the body decoded on demand.

A 2 GB session must open in bounded memory, so an :class:`Entry` keeps only what the tree, the
index and the context settings need (type, id, parentId, timestamp, the message role and, for
assistant messages, provider and model). The full JSON value is either held (entries we created,
small lines, migrated files) or re-read from the file by byte offset when somebody asks for it.

An Entry is a read-only ``Mapping`` of the JSON object, so ``entry["message"]`` and
``entry.get("label")`` work like on the reference's plain objects. A value that is not a JSON object
(which the reference keeps only for values handed to ``inMemory`` directly) is wrapped too: it reads
as an empty mapping and :attr:`Entry.value` returns it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from ..errors import StaleFileError
from .jsjson import parse_bytes
from .jsvalue import ABSENT, strict_equal


class LineSource(Protocol):
    """Where a lazily held entry's line can be read again."""

    def read_line(self, offset: int, length: int) -> Any:  # pragma: no cover - protocol
        """Return the parsed JSON value of the line at ``offset``."""
        ...


_ENVELOPE_KEYS = ("type", "id", "parentId", "timestamp")


class Entry(Mapping[str, Any]):
    """A file entry (or the header) with its envelope in slots and its body held or lazy."""

    __slots__ = (
        "type",
        "id",
        "parent_id",
        "timestamp",
        "role",
        "model_ref",
        "aux",
        "line",
        "offset",
        "length",
        "_value",
        "_raw",
        "_source",
    )

    type: Any
    id: Any
    parent_id: Any
    timestamp: Any
    role: Any
    model_ref: tuple[Any, Any] | None
    aux: tuple[Any, Any] | None  # label: (targetId, label); None when not known from the envelope
    line: int
    offset: int
    length: int

    def __init__(
        self,
        value: Any = ABSENT,
        *,
        envelope: tuple[Any, Any, Any, Any, Any, tuple[Any, Any] | None] | None = None,
        source: LineSource | None = None,
        line: int = -1,
        offset: int = -1,
        length: int = 0,
    ) -> None:
        self._value = value
        self._raw: bytes | None = None
        self._source = source
        self.aux = None
        self.line = line
        self.offset = offset
        self.length = length
        if envelope is None:
            self.refresh_envelope()
        else:
            self.type, self.id, self.parent_id, self.timestamp, self.role, self.model_ref = envelope

    @classmethod
    def lazy(
        cls,
        etype: Any,
        entry_id: Any,
        parent_id: Any,
        timestamp: Any,
        role: Any,
        model_ref: tuple[Any, Any] | None,
        source: LineSource | None,
        line: int,
        offset: int,
        length: int,
    ) -> Entry:
        """An entry known by its envelope only (the scanner's hot path: positional, no envelope tuple)."""
        self = cls.__new__(cls)
        self.type = etype
        self.id = entry_id
        self.parent_id = parent_id
        self.timestamp = timestamp
        self.role = role
        self.model_ref = model_ref
        self.aux = None
        self.line = line
        self.offset = offset
        self.length = length
        self._value = ABSENT
        self._raw = None
        self._source = source
        return self

    # -- envelope ---------------------------------------------------------------------------

    def refresh_envelope(self) -> None:
        """Derive the envelope from the held value (after creating or mutating it)."""
        value = self.value
        if isinstance(value, dict):
            get = value.get
            self.type = get("type", ABSENT)
            self.id = get("id", ABSENT)
            self.parent_id = get("parentId", ABSENT)
            self.timestamp = get("timestamp", ABSENT)
            self.role, self.model_ref = (
                message_head(get("message", ABSENT)) if self.type == "message" else (ABSENT, None)
            )
        else:
            self.type = self.id = self.parent_id = self.timestamp = self.role = ABSENT
            self.model_ref = None

    # -- body -------------------------------------------------------------------------------

    @property
    def value(self) -> Any:
        """The entry's JSON value (decoded from the file if it is not held)."""
        value = self._value
        if value is ABSENT:
            raw = self._raw
            if raw is not None:
                return _parse_line(raw)
            if self._source is None:
                return ABSENT
            value = self._source.read_line(self.offset, self.length)
            if not self._same_envelope(value):
                raise StaleFileError(
                    f"session file changed underneath: line {self.line + 1} is not the entry read at load"
                )
        return value

    def _same_envelope(self, value: Any) -> bool:
        """Does a re-read value still carry the envelope we loaded? (Never return another entry's body.)"""
        if not isinstance(value, dict):
            return False
        return (
            strict_equal(value.get("id", ABSENT), self.id)
            and strict_equal(value.get("parentId", ABSENT), self.parent_id)
            and strict_equal(value.get("type", ABSENT), self.type)
            and strict_equal(value.get("timestamp", ABSENT), self.timestamp)
        )

    @property
    def is_loaded(self) -> bool:
        return self._value is not ABSENT

    def hold(self) -> Any:
        """Decode the body now and keep it in memory."""
        self._value = self.value
        return self._value

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
        if key in _ENVELOPE_KEYS and self.get(key, ABSENT) is not ABSENT:  # type: ignore[arg-type]
            return True
        value = self.value
        return isinstance(value, dict) and key in value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Entry):
            return self is other or self.value == other.value
        return bool(self.value == other)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Entry(type={self.type!r}, id={self.id!r}, parentId={self.parent_id!r}, line={self.line})"


def _parse_line(raw: bytes) -> Any:
    return parse_bytes(raw)


def message_head(message: Any) -> tuple[Any, tuple[Any, Any] | None]:
    """Role of a message value (ABSENT unless it is an object) and, for assistants, (provider, model)."""
    if isinstance(message, dict):
        role = message.get("role", ABSENT)
        if role == "assistant":
            return role, (message.get("provider", ABSENT), message.get("model", ABSENT))
        return role, None
    return ABSENT, None


def wrap(value: Any) -> Entry:
    """An Entry holding ``value`` (an in-memory entry)."""
    if isinstance(value, Entry):
        return value
    return Entry(value)


def unwrap(value: Any) -> Any:
    """The JSON value of an Entry, or the value itself."""
    return value.value if isinstance(value, Entry) else value
