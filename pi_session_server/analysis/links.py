"""How entries link up as pi sees them: by ``parentId`` (the document's :class:`~.tree.TreeIndex`),
or, in a version 1 file, as the one chain in file order that pi's migration makes of it.

A version 1 file has no ids and no ``parentId`` (FORMAT.md §8.2): read literally, every entry would
be a root without children. pi migrates it before anything else, giving each entry a fresh id and
the entry before it as its parent, so its tree is that chain. The ids its lines may carry anyway (an
old tool's, a hand edit's, a half-migrated file's) are not the ids pi reads: the migration replaces
each ``id`` and ``parentId``, and keeps a ``targetId``, ``fromId`` or ``firstKeptEntryId`` as
written, naming an id no entry has once every entry has a new one (:func:`ids_as_written`,
:func:`migrated_key`). Hovers, hints, navigation and the outline ask here instead of the tree
index, so that both kinds of file read the way pi reads them.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from ..format.jsvalue import js_string_of
from ..session.migrate import version_1_position
from . import lines as L
from .document import SessionDocument
from .jsonpath import scalar_value, value_span
from .lines import LineInfo

#: per document: (its version, its entries in file order, each one's position among them)
_CHAINS: weakref.WeakKeyDictionary[SessionDocument, tuple[int, list[LineInfo], dict[LineInfo, int]]] = (
    weakref.WeakKeyDictionary()
)


def migration_chain(doc: SessionDocument) -> tuple[list[LineInfo], dict[LineInfo, int]] | None:
    """The entries of a version 1 ``doc`` in file order (the chain pi's migration makes) and each
    one's position in it; None for a file of version 2 or later."""
    if not doc.is_v1():
        return None
    cached = _CHAINS.get(doc)
    if cached is not None and cached[0] == doc.version:
        return cached[1], cached[2]
    entries = list(doc.entries())
    position = {e: i for i, e in enumerate(entries)}
    _CHAINS[doc] = (doc.version, entries, position)
    return entries, position


def version_1_kept(doc: SessionDocument, compaction: LineInfo, index: Any) -> LineInfo | None:
    """The entry a version 1 ``compaction``'s ``firstKeptEntryIndex`` ``index`` names: pi's
    migration makes it the ``firstKeptEntryId`` of the file's value at that position (the header's
    0; a non-object kept counts too, D3). None for a file of version 2 or later, and when that value
    is no entry (the header, a non-object, none) or an entry after the compaction (the migration,
    in file order, has not given it its id yet: the compaction gets the id its line carries, which
    names no entry once that one has its new id): pi's migration gives no id of an entry then."""
    info = version_1_value(doc, index)
    if info is None or info.kind != L.ENTRY or info.line > compaction.line:
        return None
    return info


def version_1_value(doc: SessionDocument, index: Any) -> LineInfo | None:
    """The line of the value at position ``index`` of a version 1 file (an entry, a header or a
    non-object kept: :func:`~..session.migrate.version_1_position`); None for a file of version 2
    or later, and for an index that names no position (no number, not whole, out of range)."""
    if not doc.is_v1() or type(index) not in (int, float) or index < 0:
        return None
    if isinstance(index, float) and not index.is_integer():  # (1e400 too: no position)
        return None
    values = _positions(doc).values
    return values[int(index)] if index < len(values) else None


def version_1_index(info: LineInfo) -> tuple[Any, tuple[int, int]] | None:
    """The ``firstKeptEntryIndex`` of a version 1 compaction ``info`` as pi reads it (its last
    one, JSON.parse keeps it), and where it is on the line; None when it has none."""
    span = value_span(info.raw, (KEPT_INDEX,)) if info.etype == "compaction" else None
    return (scalar_value(info.raw, span), span) if span is not None else None


def compactions_keeping(doc: SessionDocument, info: LineInfo) -> Sequence[LineInfo]:
    """The compactions of a version 1 file whose ``firstKeptEntryIndex`` names the entry
    ``info`` (:func:`version_1_kept`), in file order; none in a file of version 2 or later."""
    if not doc.is_v1():
        return ()
    positions = _positions(doc)
    if positions.keepers is None:
        positions.keepers = _keepers(doc, positions)
    return positions.keepers.get(info, ())


#: the key by which a version 1 compaction names the first entry it keeps, by position
KEPT_INDEX = "firstKeptEntryIndex"


class _VersionOnePositions:
    """A version 1 document's values as pi's migration counts positions (the header, the entries,
    the non-objects kept), and which compactions name each entry (``keepers``: made on the first
    ask, a hover reads only the positions)."""

    def __init__(self, doc: SessionDocument) -> None:
        self.values = [
            info
            for info in doc.lines
            if version_1_position(info.kept, info.kind in (L.HEADER, L.ENTRY), info.etype) is not None
        ]
        self.keepers: dict[LineInfo, list[LineInfo]] | None = None


def _keepers(doc: SessionDocument, positions: _VersionOnePositions) -> dict[LineInfo, list[LineInfo]]:
    """Each entry that compactions of ``doc`` name, and those compactions in file order."""
    found: dict[LineInfo, list[LineInfo]] = {}
    for info in positions.values:
        named = version_1_index(info) if info.kind == L.ENTRY else None
        kept = version_1_kept(doc, info, named[0]) if named is not None else None
        if kept is not None:
            found.setdefault(kept, []).append(info)
    return found


#: per version 1 document: (its version, its positions)
_POSITIONS: weakref.WeakKeyDictionary[SessionDocument, tuple[int, _VersionOnePositions]] = (
    weakref.WeakKeyDictionary()
)


def _positions(doc: SessionDocument) -> _VersionOnePositions:
    """``doc``'s positions, made once a version: a hover asks at each cursor move."""
    cached = _POSITIONS.get(doc)
    if cached is not None and cached[0] == doc.version:
        return cached[1]
    positions = _VersionOnePositions(doc)
    _POSITIONS[doc] = (doc.version, positions)
    return positions


def ids_as_written(doc: SessionDocument) -> bool:
    """Whether the ids ``doc``'s lines carry are the ids pi reads. Not in a version 1 file: pi's
    migration gives every entry a new id, so an id a line carries names no entry then (the entry
    that carried it has another; :func:`migrated_key` says what becomes of each key naming one)."""
    return not doc.is_v1()


#: what pi's migration makes of a key naming an entry on a line of a version 1 file
#: (:func:`migrated_key`): the previous entry's id (``parentId``; null for the first entry)
BY_PREVIOUS_ENTRY = "previous entry"
#: the id of the value the compaction's ``firstKeptEntryIndex`` names (``firstKeptEntryId``)
BY_KEPT_INDEX = "kept index"
#: left as written, naming an id no entry has once each has a new one
AS_WRITTEN = "as written"


def migrated_key(doc: SessionDocument, info: LineInfo, key: str) -> str | None:
    """What pi's migration makes of the key ``key`` (``parentId``, ``targetId``, ``fromId``,
    ``firstKeptEntryId``) of the entry ``info`` in a version 1 file (FORMAT.md §8.2):
    :data:`BY_PREVIOUS_ENTRY`, :data:`BY_KEPT_INDEX` or :data:`AS_WRITTEN`. None in a file of
    version 2 or later, whose keys pi reads as written."""
    if ids_as_written(doc):
        return None
    if key == "parentId":
        return BY_PREVIOUS_ENTRY
    if key == "firstKeptEntryId" and _kept_index_replaces_id(doc, info):
        return BY_KEPT_INDEX
    return AS_WRITTEN


def _kept_index_replaces_id(doc: SessionDocument, info: LineInfo) -> bool:
    """Whether pi's migration gives the version 1 compaction ``info`` a ``firstKeptEntryId`` from
    its ``firstKeptEntryIndex`` (the id of the value there, or none for a non-object: the key is
    then removed); it leaves the one written when the index names the header or no value."""
    named = version_1_index(info)
    value = version_1_value(doc, named[0]) if named is not None else None
    return value is not None and value.kind != L.HEADER


def named_entry(doc: SessionDocument, info: LineInfo, key: str, value: Any) -> LineInfo | None:
    """The entry that ``value``, written at the key ``key`` (one naming an entry: ``parentId``,
    ``targetId``, ``fromId``, ``firstKeptEntryId``) of the entry ``info``, names as pi reads it:
    the entry with that id; in a version 1 file, what pi's migration puts there
    (:func:`migrated_key`), whatever is written."""
    how = migrated_key(doc, info, key)
    if how is None:
        return doc.entry_by_id(value) if isinstance(value, str) else None
    if how == BY_PREVIOUS_ENTRY:
        return parent(doc, info)
    if how == BY_KEPT_INDEX:
        named = version_1_index(info)
        return version_1_kept(doc, info, named[0]) if named is not None else None
    return None


def naming(doc: SessionDocument, subject: LineInfo) -> Iterator[tuple[LineInfo, str]]:
    """The entries whose key names ``subject`` as pi reads it (:func:`named_entry`), with that
    key: its children's ``parentId``, the ``targetId``, ``fromId`` or ``firstKeptEntryId`` naming
    its id; in a version 1 file, the next entry's ``parentId`` and the compactions keeping it
    (:func:`compactions_keeping`: their ``firstKeptEntryIndex`` and ``firstKeptEntryId``)."""
    for child in children(doc, subject):
        yield child, "parentId"
    if not ids_as_written(doc):
        for compaction in compactions_keeping(doc, subject):
            yield compaction, KEPT_INDEX
            yield compaction, "firstKeptEntryId"
        return
    for referrer in referrers(doc, subject):
        key = L.REF_FIELD.get(referrer.etype)
        if key is not None:
            yield referrer, key


def referrers(doc: SessionDocument, info: LineInfo) -> Sequence[LineInfo]:
    """The lines whose ``targetId``, ``fromId`` or ``firstKeptEntryId`` (by their type: labels,
    context edits, branch summaries, compactions) names the string id of ``info``, in file order;
    none in a version 1 file (each is kept as written, and names an id no entry has once pi's
    migration has given each a new one)."""
    if not ids_as_written(doc) or not isinstance(info.id, str):
        return ()
    return doc.tree.referrers.get(info.id, ())


def names_a_parent(doc: SessionDocument, info: LineInfo) -> bool:
    """Whether ``info`` names a parent, found or not (a truthy ``parentId`` pi reads); never in a
    version 1 file, whose first entry pi's migration makes the root (:func:`parent`: the others')."""
    return ids_as_written(doc) and info.pkey is not None


def is_ancestor(doc: SessionDocument, above: LineInfo, info: LineInfo) -> bool:
    """Whether ``above`` is on ``info``'s path, strictly above it."""
    chain = migration_chain(doc)
    if chain is None:
        return doc.tree.is_ancestor(above, info)
    position = chain[1]
    return position.get(above, len(position)) < position.get(info, -1)


def parent(doc: SessionDocument, info: LineInfo) -> LineInfo | None:
    """The entry ``info`` continues from (None for a root)."""
    chain = migration_chain(doc)
    if chain is None:
        found = doc.tree.parent(info)
        return None if found is info else found
    entries, position = chain
    i = position.get(info, 0)
    return entries[i - 1] if i else None


def children(doc: SessionDocument, info: LineInfo) -> Sequence[LineInfo]:
    """The entries that continue from ``info``, in file order."""
    chain = migration_chain(doc)
    if chain is None:
        return doc.tree.kids(info)
    entries, position = chain
    i = position.get(info)
    return [] if i is None or i + 1 >= len(entries) else [entries[i + 1]]


def depth(doc: SessionDocument, info: LineInfo) -> int:
    """Steps from ``info`` up to its root."""
    chain = migration_chain(doc)
    if chain is None:
        return doc.tree.depth(info)
    return chain[1].get(info, 0)


def on_leaf_path(doc: SessionDocument, info: LineInfo) -> bool:
    """Is ``info`` on the path from the root to the leaf (where pi continues)?"""
    chain = migration_chain(doc)
    if chain is None:
        return info in doc.leaf_path()
    return info in chain[1]


#: what stands for the id of an entry of a version 1 file (:func:`shown_id`)
NO_ID_YET = "no id yet (version 1)"


def shown_id(doc: SessionDocument, info: LineInfo) -> str:
    """The entry's id as text; an entry of a version 1 file has none until pi migrates the file
    (one its line carries is replaced)."""
    return js_string_of(info.id) if ids_as_written(doc) else NO_ID_YET
