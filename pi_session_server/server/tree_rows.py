"""The rows of a window of the tree (:class:`Row`, a chain's :class:`ChainRows`) and a row as it goes
on the wire (:class:`FlatRow`, its ids and values as JSON builtins).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Any, Final, overload

import msgspec
from msgspec import UNSET

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server.wire import to_wire
from pi_session_server.session.fields import id_of, parent_of, role_of, timestamp_of, type_of


def wire_id(value: Any) -> Any:
    """An id (an entry's, its parent's) as the wire has it: null where the entry has none."""
    return None if value is ABSENT else wire_value(value)


def wire_value(value: Any) -> Any:
    """A value from a file as JSON builtins (the result is sent without another scan)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    return to_wire(value)


def envelope(entry: Any) -> tuple[Any, Any, Any, Any, Any, int]:
    """(id, parentId, type, role, timestamp, line) without decoding a lazy body."""
    if type(entry) is Entry:
        return entry.id, entry.parent_id, entry.type, entry.role, entry.timestamp, entry.line
    return id_of(entry), parent_of(entry), type_of(entry), role_of(entry), timestamp_of(entry), -1


class Row(msgspec.Struct, gc=False):
    """A shown node of a walk (see :meth:`TreeShape.walk`): the node, the id of its nearest shown
    ancestor (None: a top of the window) and its depth. Not tracked by the collector: a whole tree's
    walk is kept while its pages are asked for, a row per shown node, which the collection after
    each request would otherwise go through (a row holds a node and an id: no cycles)."""

    node: Any
    parent_id: Any
    depth: int


class ChainRows(Sequence[Row]):
    """The rows of one chain (:meth:`TreeShape.chain_rows`), kept as its nodes: a row is made when
    asked for. Row ``i`` is ``nodes[i]`` at depth ``i`` under the row before it (the top: a top of
    the window). A tree view's levels down to the leaf of a big session are chains of most of its
    entries, kept with the shape; a :class:`Row` for each (and an int for each depth past the
    small ones) held several times the memory of the node list."""

    __slots__ = ("nodes",)

    def __init__(self, nodes: list[Any]) -> None:
        self.nodes = nodes

    def __len__(self) -> int:
        return len(self.nodes)

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...
    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        nodes = self.nodes
        if isinstance(index, slice):
            start, stop, step = index.indices(len(nodes))
            if step != 1:
                return [self[at] for at in range(start, stop, step)]
            parent = None if start == 0 or start >= stop else node_id(nodes[start - 1])
            return list(rows_of_chain(nodes[start:stop], start, parent))
        at = index + len(nodes) if index < 0 else index
        if not 0 <= at < len(nodes):
            raise IndexError(index)
        return Row(nodes[at], None if at == 0 else node_id(nodes[at - 1]), at)

    def __iter__(self) -> Iterator[Row]:
        return rows_of_chain(self.nodes, 0, None)


def rows_of_chain(nodes: Iterable[Any], depth: int, parent_id: Any) -> Iterator[Row]:
    """The rows of a chain's ``nodes``, the first at ``depth`` under the row of ``parent_id`` (None:
    a top of the window), each next one a level below the one before."""
    for node in nodes:
        yield Row(node, parent_id, depth)
        entry = node.entry  # (node_id inline: most ids)
        parent_id = entry.id if type(entry) is Entry and type(entry.id) is str else node_id(node)
        depth += 1


def row_nodes(rows: Sequence[Row]) -> Iterable[Any]:
    """The node of each of ``rows``, without a row made for each of a :class:`ChainRows`."""
    return rows.nodes if isinstance(rows, ChainRows) else map(_ROW_NODE, rows)


_ROW_NODE = attrgetter("node")
# rows a page is cut from by index (a walk's rows otherwise: a generator)
INDEXED_ROWS = (list, ChainRows)


def node_id(node: Any) -> Any:
    entry = node.entry
    if type(entry) is Entry and type(entry.id) is str:  # most ids
        return entry.id
    return wire_id(envelope(entry)[0])


class FlatRow(msgspec.Struct, gc=False):
    """One node of a result as it goes on the wire, its members in the order the result lists them
    (an UNSET one is left out). A Struct: made in one call and encoded by msgspec without a dict per
    row, which a whole tree makes tens of thousands of. ``childIds`` holds the shown children's ids
    (the nested form: their nodes, under ``children``, see :meth:`to_json`)."""

    id: Any
    parentId: Any
    visibleParentId: Any
    childIds: Any
    type: Any
    role: Any
    label: Any
    labelTimestamp: Any
    preview: Any
    timestamp: Any
    line: Any
    depth: int
    isLeaf: bool
    onLeafPath: bool
    isBranchPoint: Any = UNSET

    def to_json(self, children_key: str = "childIds") -> dict[str, Any]:
        """The node as a dict (what the exact encoder writes when msgspec refuses a row: a lone
        surrogate), its children under ``children_key``."""
        return {
            children_key if name == "childIds" else name: value
            for name, value in zip(_ROW_MEMBERS, msgspec.structs.astuple(self), strict=True)
            if value is not UNSET
        }


_ROW_MEMBERS: Final = FlatRow.__struct_fields__
