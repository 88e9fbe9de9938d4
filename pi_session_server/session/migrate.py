"""Version migration v1 -> v2 -> v3, as the reference does it (docs/FORMAT.md §8).

Works in place on raw JSON values (dicts), like the reference. Keys that already exist keep their
position; new keys are appended (a Python dict behaves like a JS object here).

One difference: the ids v1 entries get. pi draws them at random, so two processes that migrate one
file at the same time give its entries different ids, and entries appended by one of them name
parents the other's file does not hold. Ours are derived from the header's id and the entry's
position (:class:`_MigrationIds`): every migration of a file gives the same ids, a read-only view
of a v1 file shows the ids a writer will give it, and a migration that has to start again (the file
changed under it) changes no id. Like pi's they are 8 hex digits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..errors import ValueTypeError, cannot_read_property
from ..format.jsvalue import ABSENT, js_string_of, to_number

CURRENT_SESSION_VERSION = 3


def _type_of(value: Any) -> Any:
    return value.get("type", ABSENT) if isinstance(value, dict) else ABSENT


def session_version(entries: Iterable[Any]) -> float:
    """The version the migration decision uses: the first ``session`` value's, 1 when absent/null."""
    for value in entries:
        if _type_of(value) == "session":
            version = value.get("version", ABSENT)
            if version is ABSENT or version is None:
                return 1.0
            return to_number(version)
    return 1.0


def needs_migration(entries: list[Any]) -> bool:
    version = session_version(entries)
    return not (version >= CURRENT_SESSION_VERSION)  # NaN versions are "migrated" (rewritten) too


def migrate_to_current_version(entries: list[Any], file_values: bool = False) -> bool:
    """Migrate ``entries`` in place; True when the reference would count it as migrated.

    ``file_values``: the list holds every kept value of a file, including non-objects (D3), which
    count as ``firstKeptEntryIndex`` positions but get no id and no place in the chain.
    """
    version = session_version(entries)
    if version >= CURRENT_SESSION_VERSION:
        return False
    if not math.isnan(version):
        if version < 2:
            _migrate_v1_to_v2(entries, file_values)
        if version < 3:
            _migrate_v2_to_v3(entries)
    return True


def migrates_each_value_alone(version: float) -> bool:
    """Whether the migration from ``version`` (:func:`session_version`) changes each value whatever
    the others hold, so that a file's values can be migrated one at a time (:func:`migrate_value`):
    from version 2 on, or a version that is not a number (nothing changes). From version 1 an
    entry's id and parent depend on the others'."""
    return not version < 2


def becomes_current_a_value_at_a_time(version: float) -> bool:
    """Whether a file of ``version`` (:func:`session_version`) both :func:`migrates_each_value_alone`
    and comes out of its migration a current-version file: from version 2 (a version that is not a
    number stays what it is, and is migrated again at each open, as pi does)."""
    return 2 <= version < CURRENT_SESSION_VERSION


def migrate_value(value: Any, version: float) -> None:
    """Migrate in place one value of a file whose :func:`session_version` is ``version`` (one that
    :func:`migrates_each_value_alone`), as :func:`migrate_to_current_version` migrates it among
    the file's others."""
    if 2 <= version < CURRENT_SESSION_VERSION:
        _migrate_v2_to_v3([value])


def migrate_session_entries(entries: list[Any]) -> None:
    """The exported helper: migrate in place, return nothing."""
    migrate_to_current_version(entries)


def _set_key(obj: dict[str, Any], key: str, value: Any) -> None:
    obj[key] = value  # an existing key keeps its position, a new one goes last (JS semantics)


class _MigrationIds:
    """The ids of a v1 file's entries: 8 hex digits of a hash of the header's id and the entry's
    position. Unique within the file, and never an id the file already holds (the header's, or one
    a v1 entry carried); a clash takes the next hash of the same position."""

    def __init__(self, entries: list[Any]) -> None:
        header = next((e for e in entries if _type_of(e) == "session"), None)
        header_id = header.get("id", ABSENT) if isinstance(header, dict) else ABSENT
        self._seed = js_string_of(header_id).encode("utf-8", "surrogatepass") + b"\0"
        self._taken = {e.get("id") for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}

    def at(self, position: int) -> str:
        import hashlib  # here: only an old file's conversion needs it (importing it loads OpenSSL)

        attempt = 0
        while True:
            key = self._seed + f"{position}.{attempt}".encode()
            candidate = hashlib.blake2b(key, digest_size=4).hexdigest()
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate
            attempt += 1


def _migrate_v1_to_v2(entries: list[Any], file_values: bool) -> None:
    ids = _MigrationIds(entries)
    prev_id: Any = None
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            if file_values or isinstance(entry, list):
                # D3: a file's non-object line is not an entry; an array handed to inMemory gets
                # an id in pi, which a list cannot hold: it is left as it is
                continue
            raise not_an_entry(entry, "id")
        if entry.get("type", ABSENT) == "session":
            _set_key(entry, "version", 2)
            continue
        new_id = ids.at(position)
        _set_key(entry, "id", new_id)
        _set_key(entry, "parentId", prev_id)
        prev_id = new_id
        if entry.get("type", ABSENT) == "compaction":
            index = entry.get("firstKeptEntryIndex", ABSENT)
            if type(index) in (int, float):
                target = _at(entries, index)
                if target is not ABSENT and target is not None and _type_of(target) != "session":
                    target_id = target.get("id", ABSENT) if isinstance(target, dict) else ABSENT
                    if target_id is ABSENT:
                        entry.pop("firstKeptEntryId", None)
                    else:
                        _set_key(entry, "firstKeptEntryId", target_id)
                del entry["firstKeptEntryIndex"]


def not_an_entry(value: Any, assigned: str) -> ValueTypeError:
    """pi's TypeError for a value handed to it as an entry that cannot be one: reading its type
    (null, undefined), or setting a property on a primitive (strict mode)."""
    if value is None or value is ABSENT:
        return cannot_read_property(value, "type")
    kind = "boolean" if isinstance(value, bool) else "string" if isinstance(value, str) else "number"
    return ValueTypeError(f"Cannot create property '{assigned}' on {kind} '{js_string_of(value)}'")


def _at(entries: list[Any], index: float) -> Any:
    """``entries[index]`` with JS semantics (non-integer or out-of-range -> ABSENT)."""
    if isinstance(index, float) and not index.is_integer():
        return ABSENT
    i = int(index)
    if 0 <= i < len(entries):
        return entries[i]
    return ABSENT


def _migrate_v2_to_v3(entries: list[Any]) -> None:
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        etype = entry.get("type", ABSENT)
        if etype == "session":
            _set_key(entry, "version", 3)
        elif etype == "message":
            message = entry.get("message", ABSENT)
            if isinstance(message, dict) and message.get("role", ABSENT) == "hookMessage":
                message["role"] = "custom"
