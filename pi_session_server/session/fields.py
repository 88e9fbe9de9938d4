"""Field access that works on lazy :class:`Entry` objects and on raw JSON values alike.

The manager's own entries are :class:`Entry` objects whose envelope lives in slots; the exported
free functions also accept plain values (dicts, even non-objects) as the reference does. These
helpers give both the reference's semantics (a missing key, or a non-object, reads as ABSENT).
"""

from __future__ import annotations

from typing import Any

from ..errors import cannot_read_property
from ..format.entry import Entry, message_head
from ..format.jsvalue import ABSENT, index_key


def type_of(e: Any) -> Any:
    if type(e) is Entry:
        return e.type
    return e.get("type", ABSENT) if isinstance(e, dict) else ABSENT


def id_of(e: Any) -> Any:
    if type(e) is Entry:
        return e.id
    return e.get("id", ABSENT) if isinstance(e, dict) else ABSENT


def parent_of(e: Any) -> Any:
    if type(e) is Entry:
        return e.parent_id
    return e.get("parentId", ABSENT) if isinstance(e, dict) else ABSENT


def timestamp_of(e: Any) -> Any:
    if type(e) is Entry:
        return e.timestamp
    return e.get("timestamp", ABSENT) if isinstance(e, dict) else ABSENT


def role_of(e: Any) -> Any:
    """``entry.message?.role`` for message entries (ABSENT for anything else)."""
    if type(e) is Entry:
        return e.role
    if isinstance(e, dict) and e.get("type", ABSENT) == "message":
        return message_head(e.get("message", ABSENT))[0]
    return ABSENT


def model_ref_of(e: Any) -> tuple[Any, Any] | None:
    """(provider, model) of an assistant message entry."""
    if type(e) is Entry:
        return e.model_ref
    if isinstance(e, dict) and e.get("type", ABSENT) == "message":
        return message_head(e.get("message", ABSENT))[1]
    return None


def field(e: Any, key: str) -> Any:
    """Any other field (decodes a lazy entry's body)."""
    if type(e) is Entry:
        value = e.value
        return value.get(key, ABSENT) if isinstance(value, dict) else ABSENT
    return e.get(key, ABSENT) if isinstance(e, dict) else ABSENT


def value_of(e: Any) -> Any:
    return e.value if type(e) is Entry else e


def build_index(entries: list[Any]) -> dict[Any, Any]:
    """id -> entry with JS Map semantics (later duplicates win, the key keeps its first position)."""
    index: dict[Any, Any] = {}
    for e in entries:
        if e is None or e is ABSENT:  # (values handed to pi's functions: it reads every id)
            raise cannot_read_property(e, "id")
        index[index_key(id_of(e))] = e
    return index
