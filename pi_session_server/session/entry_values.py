"""The values of new entries: the line a value is written as, a value without its absent members,
the copies of a path's entries a branched session starts with."""

from __future__ import annotations

from typing import Any

from ..format.entry import Entry
from ..format.jsjson import dumps_bytes
from ..format.jsvalue import ABSENT, coalesce, index_key


def line_bytes(value: Any) -> bytes:
    return dumps_bytes(value) + b"\n"


def branch_copies(path: list[Entry]) -> list[dict[str, Any]]:
    """The bodies of the entries of ``path`` but its labels, each linked to the one before; a
    compaction's ``firstKeptEntryId`` naming a label names the entry that followed it."""
    kept: list[dict[str, Any]] = []
    replacement: dict[Any, Any] = {}
    pending: list[Any] = []
    parent: Any = None
    for e in path:
        if e.type == "label":
            pending.append(e.id)
            continue
        for label_id in pending:
            replacement[index_key(label_id)] = e.id
        pending.clear()
        body = e.value
        copy = dict(body) if isinstance(body, dict) else {}
        copy["parentId"] = parent
        if e.type == "compaction":
            first_kept = copy.get("firstKeptEntryId", ABSENT)
            mapped = replacement.get(index_key(first_kept), ABSENT)
            copy["firstKeptEntryId"] = coalesce(mapped, first_kept)
            copy = drop_absent(copy)
        kept.append(copy)
        parent = e.id
    return kept


def drop_absent(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` without its ABSENT members, but ``parentId``: pi's entry holds ``parentId:
    undefined`` where there was no leaf, and a branched copy that sets it (``{...entry, parentId}``)
    keeps the key where it was, after the id (ABSENT is left out when the entry is written)."""
    if any(v is ABSENT for v in value.values()):
        return {k: v for k, v in value.items() if v is not ABSENT or k == "parentId"}
    return value
