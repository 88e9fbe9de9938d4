"""Undo the in-memory part of a write that failed, so a failed request leaves the session as it was.

The reference keeps an entry in memory when writing it fails (spec §14; the library keeps that for
conformance). The wire promises the opposite. Until the library's opt-in (``rollback_failed_appends``)
replaces it, this module restores the manager from a snapshot: a shallow copy of its
attributes (operations that switch sessions replace the entry list and index wholesale) plus the
length of the entry list and copies of the label maps (appends change those in place).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_session_server.format.jsvalue import index_key


@dataclass
class Snapshot:
    attributes: dict[str, Any]
    entries: list[Any] | None
    entry_count: int
    label_maps: dict[str, dict[Any, Any]]


def snapshot(manager: Any) -> Snapshot | None:
    attributes = getattr(manager, "__dict__", None)
    if not isinstance(attributes, dict):
        return None
    entries = attributes.get("_file_entries")
    label_maps = {
        name: dict(value)
        for name in ("_labels", "_label_timestamps")
        if isinstance(value := attributes.get(name), dict)
    }
    return Snapshot(
        dict(attributes),
        entries if isinstance(entries, list) else None,
        len(entries) if isinstance(entries, list) else 0,
        label_maps,
    )


def rollback(manager: Any, state: Snapshot | None) -> None:
    """Bring ``manager`` back to ``state`` (entries appended since are dropped from list and index)."""
    if state is None:
        return
    entries = state.entries
    by_id = state.attributes.get("_by_id")
    if entries is not None:
        while len(entries) > state.entry_count:
            entry = entries.pop()
            key = index_key(getattr(entry, "id", None))
            if isinstance(by_id, dict) and by_id.get(key) is entry:
                del by_id[key]
    manager.__dict__.clear()
    manager.__dict__.update(state.attributes)
    for name, saved in state.label_maps.items():
        current = manager.__dict__.get(name)
        if isinstance(current, dict):
            current.clear()
            current.update(saved)
