"""How entries link up as pi sees them: by ``parentId`` (the document's :class:`~.tree.TreeIndex`),
or, in a version 1 file, as the one chain in file order that pi's migration makes of it.

A version 1 file has no ids and no ``parentId`` (FORMAT.md §8.2): read literally, every entry would
be a root without children. pi migrates it before anything else, giving each entry a fresh id and
the entry before it as its parent, so its tree is that chain. Hovers, hints and the outline ask
here instead of the tree index, so that both kinds of file read the way pi reads them.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from ..format.jsvalue import ABSENT, js_string_of
from . import lines as L
from .document import SessionDocument
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


def version_1_kept(doc: SessionDocument, index: Any) -> LineInfo | None:
    """The entry a version 1 compaction's ``firstKeptEntryIndex`` ``index`` names: pi's migration
    makes it the ``firstKeptEntryId`` of the file's value at that position (the header's 0; a
    non-object kept counts too, D3). None for a file of version 2 or later, and when that value is
    no entry (the header, a non-object, none: pi's migration gives no id of an entry)."""
    if not doc.is_v1() or type(index) not in (int, float) or index < 0:
        return None
    if isinstance(index, float) and not index.is_integer():  # (1e400 too: no position)
        return None
    values = _kept_values(doc)
    if index >= len(values):
        return None
    info = values[int(index)]
    return info if info.kind == L.ENTRY else None


#: per version 1 document: (its version, the lines of the values pi's migration counts, in order)
_KEPT_VALUES: weakref.WeakKeyDictionary[SessionDocument, tuple[int, list[LineInfo]]] = (
    weakref.WeakKeyDictionary()
)


def _kept_values(doc: SessionDocument) -> list[LineInfo]:
    """The lines of ``doc``'s values as pi's migration counts positions (the header, the
    entries, the non-objects kept), made once a version: a hover asks at each cursor move."""
    cached = _KEPT_VALUES.get(doc)
    if cached is not None and cached[0] == doc.version:
        return cached[1]
    values = [
        info
        for info in doc.lines
        if info.kind in (L.HEADER, L.ENTRY) or (info.kind == L.NON_OBJECT and info.kept)
    ]
    _KEPT_VALUES[doc] = (doc.version, values)
    return values


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


def shown_id(doc: SessionDocument, info: LineInfo) -> str:
    """The entry's id as text; an entry of a version 1 file has none until pi migrates the file."""
    if info.id is ABSENT and doc.is_v1():
        return "no id yet (version 1)"
    return js_string_of(info.id)
