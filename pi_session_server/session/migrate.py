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
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

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


def becomes_current(version: float) -> bool:
    """Whether the migration of a file of ``version`` (:func:`session_version`, one that
    :func:`needs_migration`) leaves a current-version file: any version that is a number (a version
    that is not one stays what it is, and is migrated again at each open, as pi does)."""
    return not math.isnan(version)


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


class LaterValueNeeded(Exception):
    """A version 1 file migrated a value at a time (:class:`StreamedMigration`) whose migration
    needs a value after the one migrated: a compaction's ``firstKeptEntryIndex`` naming a later
    position, or an id drawn for an entry that a later one carries (which the migration of the
    values together would have passed over). pi writes neither: such a file's values are then
    migrated together."""


class _MigrationIds:
    """The ids of a v1 file's entries: 8 hex digits of a hash of the header's id and the entry's
    position. Unique within the file, and never an id the file already holds (the header's, or one
    a v1 entry carried); a clash takes the next hash of the same position."""

    def __init__(self, header_id: Any, taken: Iterable[str]) -> None:
        self._seed = js_string_of(header_id).encode("utf-8", "surrogatepass") + b"\0"
        self._taken = set(taken)
        self._drawn: set[str] = set()

    @classmethod
    def of(cls, entries: list[Any]) -> _MigrationIds:
        """The ids of the file whose values are ``entries``, every id they carry known."""
        header = next((e for e in entries if _type_of(e) == "session"), None)
        header_id = header.get("id", ABSENT) if isinstance(header, dict) else ABSENT
        carried = (e.get("id") for e in entries if isinstance(e, dict))
        return cls(header_id, (entry_id for entry_id in carried if isinstance(entry_id, str)))

    def carried(self, entry_id: str) -> None:
        """An id a value of the file carries, found after the ids drawn so far: never one of them
        (:class:`LaterValueNeeded` when it is: the draw would have passed over it)."""
        if entry_id in self._drawn:
            raise LaterValueNeeded(f"the id {entry_id} is carried by a later entry")
        self._taken.add(entry_id)

    def at(self, position: int) -> str:
        import hashlib  # here: only an old file's conversion needs it (importing it loads OpenSSL)

        attempt = 0
        while True:
            key = self._seed + f"{position}.{attempt}".encode()
            candidate = hashlib.blake2b(key, digest_size=4).hexdigest()
            if candidate not in self._taken:
                self._taken.add(candidate)
                self._drawn.add(candidate)
                return candidate
            attempt += 1


#: the kinds of the values of a version 1 file that count as positions for a compaction's
#: ``firstKeptEntryIndex`` (:func:`version_1_position`)
ENTRY_POSITION: Final = "entry"
HEADER_POSITION: Final = "session"
OTHER_POSITION: Final = "other"  # a kept value that is no object (D3: no entry, still a position)


def version_1_position(kept: bool, is_object: bool, value_type: Any) -> str | None:
    """What a line of a version 1 file is among the positions a compaction's
    ``firstKeptEntryIndex`` counts (docs/FORMAT.md §8.2, D3), from what its reader knows of it:
    whether pi keeps its value (``loadEntriesFromFile``: it parses and is truthy), whether that
    value is an object, and its ``type``. Every kept value is a position (the header's is 0):
    :func:`kept_value_position`; None for a line pi skips (blank, malformed, falsy)."""
    return kept_value_position(is_object, value_type) if kept else None


def kept_value_position(is_object: bool, value_type: Any) -> str:
    """The kind of position a value pi keeps is (:func:`version_1_position`): an entry, a header
    (a later one too) or a value that is no object (:data:`OTHER_POSITION`)."""
    if not is_object:
        return OTHER_POSITION
    return HEADER_POSITION if value_type == "session" else ENTRY_POSITION


# what a compaction naming a value by its position keeps when that value is no entry (none, the
# header): its firstKeptEntryId as it was
_UNCHANGED: Any = object()


def _kept_id(position: str | None, entry_id: Any) -> Any:
    """The ``firstKeptEntryId`` a compaction naming a value of the file by its position is given,
    by that value's :func:`version_1_position`: an entry's id ``entry_id`` (ABSENT: none, the key
    is removed), ABSENT for a value that is no object, :data:`_UNCHANGED` for a header or no
    value."""
    if position == ENTRY_POSITION:
        return entry_id
    return ABSENT if position == OTHER_POSITION else _UNCHANGED


def _kept_id_of(target: Any) -> Any:
    """:func:`_kept_id` of ``target``, a value of the file (or ABSENT: no value there)."""
    if target is ABSENT or target is None:
        return _UNCHANGED
    is_object = isinstance(target, dict)
    position = kept_value_position(is_object, _type_of(target))
    return _kept_id(position, target.get("id", ABSENT) if is_object else ABSENT)


class _VersionOneLinks:
    """v1 -> v2 of a file's values, one at a time and in order: each entry an id (see
    :class:`_MigrationIds`) and the entry before it as its parent, a compaction's
    ``firstKeptEntryIndex`` made the id of the value at that position (``kept_id_at``: what
    :func:`_kept_id_of` gives for the value at an index other than the compaction's own)."""

    def __init__(self, ids: _MigrationIds, file_values: bool, kept_id_at: Callable[[Any], Any]) -> None:
        self._ids = ids
        self._file_values = file_values
        self._kept_id_at = kept_id_at
        self._parent: Any = None

    def migrate(self, entry: Any, position: int) -> Any:
        """Migrate ``entry``, the file's value at ``position``, in place; what a compaction naming
        it keeps (:func:`_kept_id_of` of it migrated)."""
        position_kind = kept_value_position(isinstance(entry, dict), _type_of(entry))
        if position_kind == OTHER_POSITION:
            if self._file_values or isinstance(entry, list):
                # D3: a file's non-object line is not an entry; an array handed to inMemory gets
                # an id in pi, which a list cannot hold: it is left as it is
                return _kept_id_of(entry)
            raise not_an_entry(entry, "id")
        if position_kind == HEADER_POSITION:
            _set_key(entry, "version", 2)
            return _UNCHANGED
        new_id = self._ids.at(position)
        _link(entry, position, new_id, self._parent, self._kept_id_at)
        self._parent = new_id
        return new_id


def _link(
    entry: dict[str, Any], position: int, new_id: str, parent: Any, kept_id_at: Callable[[Any], Any]
) -> None:
    """v1 -> v2 of ``entry`` (no header), the file's value at ``position``: its id ``new_id``, its
    parent ``parent``, a compaction's ``firstKeptEntryIndex`` made the id of the value at that
    position (``kept_id_at``: what :func:`_kept_id_of` gives for the value at another index)."""
    _set_key(entry, "id", new_id)
    _set_key(entry, "parentId", parent)
    if entry.get("type", ABSENT) == "compaction":
        index = entry.get("firstKeptEntryIndex", ABSENT)
        if type(index) in (int, float):
            kept_id = new_id if index == position else kept_id_at(index)
            if kept_id is ABSENT:
                entry.pop("firstKeptEntryId", None)
            elif kept_id is not _UNCHANGED:
                _set_key(entry, "firstKeptEntryId", kept_id)
            del entry["firstKeptEntryIndex"]


def _migrate_v1_to_v2(entries: list[Any], file_values: bool) -> None:
    links = _VersionOneLinks(
        _MigrationIds.of(entries), file_values, lambda index: _kept_id_of(_at(entries, index))
    )
    for position, entry in enumerate(entries):
        links.migrate(entry, position)


class StreamedMigration:
    """The migration of a file's kept values (its non-objects too: a version 1 file's positions
    count them) given one at a time, in order, from its header: each value is migrated as
    :func:`migrate_to_current_version` (with ``file_values``) migrates it among the others, while
    no value is held but the one migrated. A version 1 file's entries' ids, and what a compaction
    naming each position keeps, are held (a few bytes an entry); its migration raises
    :class:`LaterValueNeeded` where a later value is needed."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.version = session_version([header])
        self._position = 0
        self._kept_ids: list[Any] = []  # what a compaction naming each position so far keeps
        self._ids: _MigrationIds | None = None
        self._links: _VersionOneLinks | None = None
        if self.version < 2:
            header_id = header.get("id", ABSENT)
            self._ids = _MigrationIds(header_id, [header_id] if isinstance(header_id, str) else [])
            self._links = _VersionOneLinks(self._ids, True, self._earlier_kept_id)

    def migrate(self, value: Any) -> None:
        """Migrate in place the file's next kept value."""
        if self._links is not None and self._ids is not None:
            carried = value.get("id") if isinstance(value, dict) else None
            if isinstance(carried, str):
                self._ids.carried(carried)
            self._kept_ids.append(self._links.migrate(value, self._position))
        if self.version < CURRENT_SESSION_VERSION:  # (False for a version that is not a number)
            _migrate_v2_to_v3([value])
        self._position += 1

    def _earlier_kept_id(self, index: Any) -> Any:
        """What a compaction naming the value at ``index`` keeps: known for the values before it."""
        if isinstance(index, float) and not index.is_integer():
            return _UNCHANGED  # (no value there, as _at finds)
        if 0 <= index < len(self._kept_ids):
            return self._kept_ids[int(index)]
        if index < 0:
            return _UNCHANGED
        raise LaterValueNeeded(f"a compaction names the value at {index}, after it")


class DrawnVersionOneLinks:
    """v1 -> current of a file's values one at a time, in any order, from what a scan of its lines
    keeps without their values: each kept value's kind and the id it carries, in order
    (:meth:`draw`), after every id the file carries (``carried``). The ids are drawn as
    :func:`migrate_to_current_version` draws them (same positions, same source, every carried id
    known first), so a value migrated here (:meth:`migrate`) is the one the migration of the values
    together gives. Holds, per position, the link drawn and what a compaction naming it keeps: from
    a later position, the id it carries (not migrated yet, as the migration of the values in order
    finds it), from an earlier one the id drawn (shared with its entry)."""

    def __init__(self, header_id: Any, carried: Iterable[str], *, header_first: bool = True) -> None:
        """``header_first``: position 0 is the header's, drawn here (a scan from the header on);
        False: every position is drawn, the first one too."""
        taken = [header_id] if isinstance(header_id, str) else []
        self._ids: _MigrationIds | None = _MigrationIds(header_id, [*taken, *carried])
        self._kept_ids: list[Any] = []
        self._carried_ids: list[Any] = []
        self._parents: list[Any] = []  # an entry's parent (None for a value that is no entry)
        self._parent: Any = None
        if header_first:
            self.draw(HEADER_POSITION)

    @classmethod
    def of_positions(cls, header_id: Any, positions: Sequence[tuple[str, Any]]) -> DrawnVersionOneLinks:
        """The links of a whole file, every position drawn (the first one too) from ``positions``:
        each kept value's kind and the id it carries (ABSENT: none), in file order."""
        carried = (carried_id for _, carried_id in positions if isinstance(carried_id, str))
        links = cls(header_id, carried, header_first=False)
        for kind, carried_id in positions:
            links.draw(kind, carried_id)
        links.drawn()
        return links

    @property
    def positions(self) -> int:
        """The positions drawn so far, the header's included."""
        return len(self._kept_ids)

    def draw(self, kind: str, carried: Any = ABSENT) -> tuple[str, Any] | None:
        """The next position's, of ``kind`` (:func:`version_1_position`): an entry, which carries
        the id ``carried``, is given its id and its parent, as a pair; a header or a value that is
        no object, none."""
        assert self._ids is not None, "drawn already"
        if kind == ENTRY_POSITION:
            new_id = self._ids.at(len(self._kept_ids))
            link = (new_id, self._parent)
            self._parents.append(self._parent)
            self._parent = new_id
            self._kept_ids.append(new_id)
            self._carried_ids.append(carried)
            return link
        kept = _kept_id(kind, ABSENT)
        self._kept_ids.append(kept)
        self._carried_ids.append(kept)
        self._parents.append(None)
        return None

    def drawn(self) -> None:
        """Every position is drawn: the ids the draw passed over are no longer needed."""
        self._ids = None

    def migrate(self, value: Any, position: int) -> None:
        """Migrate in place ``value``, the file's value at ``position``."""
        if not isinstance(value, dict):
            return
        if value.get("type", ABSENT) == "session":
            _set_key(value, "version", 2)
        else:
            new_id = self._kept_ids[position]
            # (else the line read is not the one drawn, and its envelope says so: a line written
            # there since, by another program, may carry an id of its own, as a version 3 one does)
            if type(new_id) is str and self._carries_scanned_id(value, position):
                parent = self._parents[position]
                _link(value, position, new_id, parent, lambda index: self._kept_id_at(index, position))
        _migrate_v2_to_v3([value])

    def _carries_scanned_id(self, value: dict[str, Any], position: int) -> bool:
        """Whether ``value`` carries the id the line drawn at ``position`` carried when it was
        scanned (none, for a line pi wrote): a line linked is the one scanned, as a current file's
        line read again is told by its id. (An id that is no string is not compared.)"""
        carried = self._carried_ids[position]
        found = value.get("id", ABSENT)
        if carried is ABSENT:
            return found is ABSENT
        return type(carried) is not str or (type(found) is str and found == carried)

    def _kept_id_at(self, index: Any, position: int) -> Any:
        """What a compaction at ``position`` naming the value at ``index`` keeps."""
        if isinstance(index, float) and not index.is_integer():
            return _UNCHANGED  # (no value there, as _at finds)
        if not 0 <= index < len(self._kept_ids):
            return _UNCHANGED
        return (self._kept_ids if index < position else self._carried_ids)[int(index)]


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
