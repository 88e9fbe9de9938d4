"""The tree as front ends show it: pi's ``/tree`` filter modes, a flat form and a nested form.

Everything here is a pure function of ``getTree()``'s nodes and the leaf id (no pygls), and
iterative: a 200,000-entry linear session is a 200,000-level tree. The filter modes, and how a
hidden entry's descendants attach, are the domain's (session/tree_filter.py, which ``pi-session
tree --filter`` draws with too).
"""

from __future__ import annotations

import itertools
import operator
from bisect import bisect_left
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import partial
from itertools import islice
from operator import attrgetter
from typing import Any, Final, NamedTuple, overload

import msgspec
from msgspec import UNSET

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key, js_string_of, strict_equal, truthy
from pi_session_server.server.params import id_key
from pi_session_server.server.raw_parts import RawParts
from pi_session_server.server.tree_held import MOST_MOVED_ROWS
from pi_session_server.server.wire import encode_rows, encode_rows_into, to_wire
from pi_session_server.session.describe import (
    PreviewCache,
    ToolCalls,
    collect_tool_calls,
    preview_of,
    tool_calls_of,
)
from pi_session_server.session.entry_verdicts import EntryVerdicts
from pi_session_server.session.fields import field, id_of, parent_of, role_of, timestamp_of, type_of
from pi_session_server.session.index_rows import RowPath
from pi_session_server.session.tree import TreeRoots, label_target, shared_path_length
from pi_session_server.session.tree_filter import node_filter, shown_below

_CALL_SEARCH_STEPS = 64  # how far above a tool result its call is looked for (parallel calls' results chain)
_NOT_LOOKED_FOR: Final = object()  # (a call above a tool result not looked for yet: see _call_above)
# the filters that show most entries of a chat (the others a few: all previews made up front is waste)
_MOSTLY_SHOWN = frozenset({"none", "default", "no-tools", "all"})
# previews (and assistant messages' facts, calls above results) a tree view's windows hold before
# those of the replies before go: tens of windows' worth, not a session's
_PREVIEWS_HELD = 1 << 14


# --- the flat and nested forms -------------------------------------------------------------


def active_path_ids(entries_by_id: Mapping[Any, Any], leaf_id: Any) -> set[Any]:
    """Index keys of the ids from the leaf up to its root (cycle-safe)."""
    ids: set[Any] = set()
    current = leaf_id
    get = entries_by_id.get
    while truthy(current):
        key = index_key(current)
        if key in ids:
            break
        ids.add(key)
        entry = get(key)
        if entry is None:
            break
        parent = parent_of(entry)
        current = None if parent is ABSENT else parent
    return ids


def _order_active_first(roots: list[Any], leaf_id: Any) -> Callable[[list[Any]], list[Any]]:
    """The TUI's ordering: at every level the child containing the leaf comes first."""
    contains: dict[int, bool] = {}
    order: list[Any] = []
    stack = list(roots)
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(node.children)
    has_leaf = leaf_id is not None and leaf_id is not ABSENT
    for node in reversed(order):
        children = node.children
        if has_leaf and strict_equal(id_of(node.entry), leaf_id):
            has = True
        elif len(children) == 1:  # most nodes: no generator for them
            has = contains.get(id(children[0]), False)
        else:
            has = any(contains.get(id(c), False) for c in children)
        contains[id(node)] = has

    def ordered(nodes: list[Any]) -> list[Any]:
        if len(nodes) < 2:  # most nodes: one child or none
            return nodes
        return [n for n in nodes if contains.get(id(n))] + [n for n in nodes if not contains.get(id(n))]

    return ordered


def _order_along(on_path: Container[Any]) -> Callable[[list[Any]], list[Any]]:
    """:func:`_order_active_first` when the entries from the leaf's root down to the leaf are
    known (``on_path``: them, see :func:`_entries_on`) and every id is unique: a node holds the
    leaf exactly when its entry is one of them, so no walk of the tree is needed."""

    def ordered(nodes: list[Any]) -> list[Any]:
        if len(nodes) < 2:
            return nodes
        return [n for n in nodes if n.entry in on_path] + [n for n in nodes if n.entry not in on_path]

    return ordered


def _entries_on(path: Sequence[Any]) -> Container[Any]:
    """The entries of a leaf's path, for ``in`` by identity: a path of the index's rows finds an
    entry by its row (its entries are not all made), a list by its entries' lines
    (:class:`_EntriesOnPath`)."""
    return path if isinstance(path, RowPath) else _EntriesOnPath(path)


_LINE: Final = attrgetter("line")


class _EntriesOnPath(Container[Any]):
    """The entries of a list path, for ``in`` by identity. Down a path of a file's entries their
    lines grow (a child is written after its parent): the path's lines are marked a byte each, and
    an entry on a marked line is found by halves on its line in the path itself (a set of the
    entries of a path of a session of GBs is several times the list). A path whose lines do not
    grow (entries made in memory, a parent written after its child) is held as a set of its
    entries."""

    __slots__ = ("_lines", "_next", "_path", "_set")

    def __init__(self, path: Sequence[Any]) -> None:
        self._path = path
        self._lines = bytearray()  # 1 at each line of the path
        # where the entry after the last one found is: a walk down the path asks for each in turn
        self._next = 0
        self._set: set[Any] | None = None
        if _lines_grow(path, 0):
            self._mark(0)
        else:
            self._set = set(path)

    def _mark(self, start: int) -> None:
        """Mark the lines of the path's entries from ``start`` on, none marked after the line of
        the entry before it."""
        path, lines = self._path, self._lines
        del lines[path[start - 1].line + 1 if start else 0 :]
        if start < len(path):
            lines.extend(bytes(path[-1].line + 1 - len(lines)))
            for line in map(_LINE, islice(path, start, None)):
                lines[line] = 1

    def __contains__(self, entry: object) -> bool:
        held = self._set
        if held is not None:
            return entry in held
        path = self._path
        at = self._next
        if at < len(path) and path[at] is entry:
            self._next = at + 1
            return True
        if at and path[at - 1] is entry:  # (asked again)
            return True
        if type(entry) is not Entry:
            return False
        line = entry.line
        if type(line) is not int or not 0 <= line < len(self._lines) or not self._lines[line]:
            return False
        at = bisect_left(path, line, key=_LINE)
        if at < len(path) and path[at] is entry:
            self._next = at + 1
            return True
        return False

    def move(self, path: Sequence[Any], shared: int, left: list[Any], joined: list[Any]) -> None:
        """The leaf's path is now ``path``, whose first ``shared`` entries were the path before;
        ``left``: the entries off it now, ``joined``: those on it now."""
        held = self._set
        if held is not None:
            held.difference_update(left)
            held.update(joined)
        elif _lines_grow(path, max(shared - 1, 0)):  # (the shared part was looked at before)
            self._path, self._next = path, 0
            self._mark(shared)
        else:
            self._path, self._set, self._lines = path, set(path), bytearray()


def _lines_grow(path: Sequence[Any], start: int) -> bool:
    """Whether the entries of ``path`` from ``start`` on are the manager's, their lines growing
    from a line of the file (an entry not written yet is on line -1)."""
    if not set(map(type, islice(path, start, None))) <= {Entry}:
        return False
    if not set(map(type, map(_LINE, islice(path, start, None)))) <= {int}:
        return False
    if start < len(path) and path[start].line < 0:
        return False
    return all(
        map(operator.lt, map(_LINE, islice(path, start, None)), map(_LINE, islice(path, start + 1, None)))
    )


def _keys_on(path: Sequence[Any]) -> set[Any]:
    """The keys (``index_key``) of the ids of ``path``'s entries: of a path of the index's rows, or
    of the manager's entries with string ids (their own keys), read without a call per entry."""
    if isinstance(path, RowPath):  # every id a distinct string: no entry made
        return set(path.ids())
    if set(map(type, path)) <= {Entry}:
        ids = list(map(_ENTRY_ID, path))
        if set(map(type, ids)) <= {str}:
            return set(ids)
    return {index_key(id_of(entry)) for entry in path}


_ENTRY_ID: Final = attrgetter("id")


def _whole_leaf_path(path: Sequence[Any], leaf_id: Any) -> bool:
    """Whether ``path`` runs from a root (parentId null) down to the entry ``leaf_id``."""
    if not path:
        return False
    last_id = id_of(path[-1])
    return parent_of(path[0]) is None and last_id is not ABSENT and strict_equal(last_id, leaf_id)


def _wire_id(value: Any) -> Any:
    return None if value is ABSENT else _safe(value)


def _safe(value: Any) -> Any:
    """A value from a file as JSON builtins (the result is sent without another scan)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    return to_wire(value)


def _envelope(entry: Any) -> tuple[Any, Any, Any, Any, Any, int]:
    """(id, parentId, type, role, timestamp, line) without decoding a lazy body."""
    if type(entry) is Entry:
        return entry.id, entry.parent_id, entry.type, entry.role, entry.timestamp, entry.line
    return id_of(entry), parent_of(entry), type_of(entry), role_of(entry), timestamp_of(entry), -1


# --- which part of the tree a request wants ------------------------------------------------


def appended_path(appended: list[Any], new_leaf: Any) -> tuple[list[Any], Any] | None:
    """(the entries of ``appended`` on the new leaf's path, root first, the id of the older entry
    they hang under), or None when they are not the manager's own entries with string ids down
    from an older one."""
    by_id = {entry.id: entry for entry in appended if type(entry) is Entry and type(entry.id) is str}
    tail: list[Any] = []
    current = new_leaf
    while type(current) is str and current in by_id and len(tail) <= len(by_id):
        entry = by_id[current]
        tail.append(entry)
        current = entry.parent_id
    if not tail or type(current) is not str or current in by_id:
        return None
    tail.reverse()
    return tail, current


@dataclass(frozen=True, slots=True)
class TreeWindow:
    """A part of the tree: the subtree of ``root_id`` (ABSENT: the whole tree), down to ``depth``
    levels below its top (None: every level), and a page of the preorder of the flat form
    (``offset``, ``limit``; ``paged`` adds ``total``/``hasMore``/``nextOffset`` to the result).

    ``chain``: only what one level of pi's ``/tree`` layout lists, the top and its shown descendants
    while each has exactly one shown child (several tops: the tops alone). ``around_id``: the page is
    the one around the row on the path to that entry (the entry itself, or its deepest shown
    ancestor in the window), wherever ``offset`` points; the result says where the page starts
    (``offset``) and where that row is (``aroundIndex``). A tree view opens on the leaf this way.

    Paging and depth never change a node: ``childIds``, ``depth`` and ``isBranchPoint`` are those of
    the whole result, so the pages of a tree, concatenated, are exactly the unpaged tree.
    """

    root_id: Any = ABSENT
    depth: int | None = None
    offset: int = 0
    limit: int | None = None
    paged: bool = False
    chain: bool = False
    around_id: Any = ABSENT

    def around(self, around_id: Any) -> TreeWindow:
        """This window around the path to ``around_id``, made without ``dataclasses.replace`` (slow
        for what it is: a tree view following pi aims each of hundreds of levels at every new leaf)."""
        return TreeWindow(
            self.root_id, self.depth, self.offset, self.limit, self.paged, self.chain, around_id
        )


WHOLE_TREE: Final = TreeWindow()


class TreeTooLargeError(Exception):
    """The result would hold more nodes than one reply may (``total`` of them, ``max_nodes`` allowed)."""

    def __init__(self, total: int, max_nodes: int) -> None:
        super().__init__(
            f"The tree has {total} nodes, more than the {max_nodes} one reply may hold: ask for pages "
            "with `limit` and `offset` (flat form), or for a subtree with `rootId` and `depth`"
        )
        self.total = total
        self.max_nodes = max_nodes


class RootNotFoundError(Exception):
    """``root_id`` (or ``around_id``) names no entry of the tree."""

    def __init__(self, root_id: Any, param: str = "rootId") -> None:
        super().__init__(f"Entry {js_string_of(root_id)} not found")  # as the library words it
        self.root_id = root_id
        self.param = param


def find_node(roots: list[Any], wanted_id: Any) -> Any:
    """The tree node of the entry ``wanted_id`` (looked up like ``getEntry``), or None."""
    wanted = index_key(wanted_id)
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        entry_id = id_of(node.entry)
        if entry_id is not ABSENT and index_key(entry_id) == wanted:
            return node
        stack.extend(node.children)
    return None


def nodes_along(roots: list[Any], path: Iterable[Any]) -> Iterator[Any]:
    """The tree nodes of ``path``'s entries (root first), down from ``roots``; stops where the
    tree and the path disagree (duplicate ids can make the walk up and the tree differ)."""
    level = roots
    for entry in path:
        # most levels hold one node: no search (a path can be the whole of a huge session)
        if len(level) == 1:
            node = level[0] if level[0].entry is entry else None
        else:
            node = next((n for n in level if n.entry is entry), None)
        if node is None:
            return
        yield node
        level = node.children


# --- the walk: shown nodes in preorder ------------------------------------------------------


class CallReading(Enum):
    """How a view reads the tool calls its tool results' previews name (``preview_of``).

    * ``UP_FRONT``: every call of the session, read before the walk (pi's tree selector; what the
      pages of a whole tree need anyway).
    * ``AT_FIRST_RESULT``: every call of the session, read when the first tool result's preview
      is made: a window without one reads no assistant message, and one with one answers as the
      whole tree does.
    * ``NEAR_EACH_RESULT``: each tool result names the call of its id in the nearest assistant
      message above it (a few entries up: parallel calls' results chain under their message),
      else the session's (every call of the session, read then): a window reads the bodies of
      what it sends (a tree view's first window of a 2 GB session would otherwise read every
      assistant message). Which call a result names depends on the session alone, never on the
      windows asked for before. By design it differs from ``UP_FRONT`` for a call id that several
      assistant messages hold: the whole tree names the last one a walk meets for every result
      of that id, a window the one above each result (telling that the id is held elsewhere too
      is reading every assistant message).
    """

    UP_FRONT = "up front"
    AT_FIRST_RESULT = "at the first result"
    NEAR_EACH_RESULT = "near each result"


class Row(msgspec.Struct, gc=False):
    """A shown node of a walk (see :meth:`_TreeShape.walk`): the node, the id of its nearest shown
    ancestor (None: a top of the window) and its depth. Not tracked by the collector: a whole tree's
    walk is kept while its pages are asked for, a row per shown node, which the collection after
    each request would otherwise go through (a row holds a node and an id: no cycles)."""

    node: Any
    parent_id: Any
    depth: int


class ChainRows(Sequence[Row]):
    """The rows of one chain (:meth:`_TreeShape.chain_rows`), kept as its nodes: a row is made when
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
            parent = None if start == 0 or start >= stop else _node_id(nodes[start - 1])
            return list(_chain_rows(nodes[start:stop], start, parent))
        at = index + len(nodes) if index < 0 else index
        if not 0 <= at < len(nodes):
            raise IndexError(index)
        return Row(nodes[at], None if at == 0 else _node_id(nodes[at - 1]), at)

    def __iter__(self) -> Iterator[Row]:
        return _chain_rows(self.nodes, 0, None)


def _chain_rows(nodes: Iterable[Any], depth: int, parent_id: Any) -> Iterator[Row]:
    """The rows of a chain's ``nodes``, the first at ``depth`` under the row of ``parent_id`` (None:
    a top of the window), each next one a level below the one before."""
    for node in nodes:
        yield Row(node, parent_id, depth)
        entry = node.entry  # (_node_id inline: most ids)
        parent_id = entry.id if type(entry) is Entry and type(entry.id) is str else _node_id(node)
        depth += 1


def row_nodes(rows: Sequence[Row]) -> Iterable[Any]:
    """The node of each of ``rows``, without a row made for each of a :class:`ChainRows`."""
    return rows.nodes if isinstance(rows, ChainRows) else map(_ROW_NODE, rows)


_ROW_NODE = attrgetter("node")
# rows a page is cut from by index (a walk's rows otherwise: a generator)
_INDEXED_ROWS = (list, ChainRows)


class NamedCalls:
    """The keys of the tool calls the previews a shape made named from every call of the session
    (``keys`` None: every call's), one object for the shape's life (what a client holds was cut
    from it: see ``tree_since``)."""

    __slots__ = ("keys",)

    def __init__(self) -> None:
        self.keys: set[Any] | None = set()

    def add(self, key: Any) -> None:
        if self.keys is not None:
            self.keys.add(key)

    def update(self, other: NamedCalls) -> None:
        """Add what ``other`` holds (the rows of another shape a client holds too)."""
        if self.keys is not None and other is not self:
            self.keys = None if other.keys is None else self.keys | other.keys


def _record(changed: set[int] | None, node: Any) -> None:
    """Add ``node`` (by ``id``) to the nodes that ``changed``, when they are recorded (None: a
    change after which no level is kept, see :meth:`_TreeShape._take_in`)."""
    if changed is not None:
        changed.add(id(node))


class _TreeShape:
    """What every node of one result needs: visibility, order, leaf path, previews.

    A hidden node passes its place on to its children, which then hang under the nearest shown
    ancestor; ``shown_children`` finds a node's shown children without walking anything else.
    """

    def __init__(
        self,
        roots: list[Any],
        leaf_id: Any,
        entries_by_id: Mapping[Any, Any],
        *,
        mode: str,
        search: str | None,
        active_branch_first: bool,
        context_edits: bool = True,
        previews: bool,
        cache: PreviewCache | None,
        calls: CallReading = CallReading.UP_FRONT,
        leaf_path: Sequence[Any] | None = None,
        branch_of: Callable[[Any], Sequence[Any] | None] | None = None,
        every_call: Callable[[], ToolCalls] | None = None,
    ) -> None:
        self.roots = roots
        self._branch_of = branch_of
        self._every_call = every_call
        self.leaf_id = leaf_id
        self.entries_by_id = entries_by_id
        self._unique_ids = False
        self._node_index: dict[Any, Any] | None = None  # see find
        self._path_nodes: dict[Any, Any] | None = None  # the leaf path's nodes by key (see find)
        self._around: tuple[Any, set[Any]] | None = None  # (key of an aroundId, its path's keys)
        self.has_leaf = leaf_id is not ABSENT and leaf_id is not None
        self._mode, self._search, self._context_edits = mode, search, context_edits
        self.visible = (
            None
            if mode == "none" and not search
            else node_filter(mode, leaf_id, search, cache, context_edits)
        )
        self._shown = EntryVerdicts()  # see is_shown
        self._shown_children: dict[int, list[Any]] = {}  # by id(node) (the roots hold the nodes)
        # the rows of a chain (see chain_length): by id(its top node), the node kept alive with them
        self._chain_lengths: dict[tuple[int, int | None], tuple[Any, int]] = {}
        path = leaf_path if leaf_path is not None and _whole_leaf_path(leaf_path, leaf_id) else None
        # a known leaf path's entries by identity (every id unique): whether a node is on it, for
        # the order and each node's onLeafPath, without the key of every entry of a long path
        self._path_entries = None if path is None else _entries_on(path)
        self.ordered: Callable[[list[Any]], list[Any]] | None = None
        if active_branch_first:
            on_path = self._path_entries
            self.ordered = _order_active_first(roots, leaf_id) if on_path is None else _order_along(on_path)
        self.leaf_path = path
        self.cache = cache
        self.tool_calls: ToolCalls | None = None
        self.preview: Callable[[Any, ToolCalls], str] = preview_of
        self.calls = calls
        self.calls_complete = calls is CallReading.UP_FRONT
        # NEAR_EACH_RESULT: each tool result's call found above it (None: not there). An Entry (hashed
        # by identity) is its own key, the call the value: no tuple and no id object for each of the
        # hundreds of thousands of results a tree view's windows down a big session show; another
        # entry (a dict: unhashable) is keyed by its id, the value (entry, call)
        self._calls_above: dict[Any, Any] = {}
        self._session_calls: ToolCalls | None = None  # every call of the session, once read
        # the keys of the calls tool results' previews named from every call of the session (all:
        # None), which a call appended may change (see _keep_encoded_previews)
        self._named_from_session: set[Any] | None = set()
        # the levels of the last levels reply as they were encoded (see encode_tree_levels)
        self._encoded_levels: dict[tuple[Any, ...], EncodedLevel] = {}
        # the calls any preview this shape made named from every call of the session, never let
        # go: rows a client holds may show them (see names_session_calls)
        self.named_for_clients = NamedCalls()
        if previews:
            if calls is not CallReading.UP_FRONT:
                self.tool_calls = {}
            elif cache is None:
                self.tool_calls = collect_tool_calls(_walk_entries(roots))
            else:
                shows_most = mode in _MOSTLY_SHOWN and not search
                self.tool_calls = cache.collect_tool_calls(_walk_entries(roots), with_previews=shows_most)
            if cache is not None:
                self.preview = cache.previews()
        # the keys of the leaf path's entries; of a known path, made when first asked for (on_path)
        self._on_path = active_path_ids(entries_by_id, leaf_id) if path is None else None
        # the levels of the last pi/getTree ``levels`` (see tree_levels): (its key, the levels,
        # whether complete); and after an append below the leaf, the levels that stay the same
        # down to the leaf's new levels (see levels_before)
        self.kept_levels: tuple[Any, list[TreeLevel], bool] | None = None
        self._levels_before: tuple[Any, list[TreeLevel], TreeLevel] | None = None
        # while there is no leaf after a move to none: the path to the leaf before and the levels
        # kept down to it, which the next leaf's levels start from (see _keep_levels_from_last_leaf)
        self._levels_at_last_leaf: tuple[list[Any], tuple[Any, list[TreeLevel], bool]] | None = None

    def followed(self, manager: Any, appended: list[Any]) -> _TreeShape | None:
        """This shape made the shape of the session after pi appended ``appended`` below its leaf
        (the new leaf among them, its path this one's and some of them), as a shape made anew
        would be, keeping what the new entries do not change: the filter's answers, the shown
        children, the leaf's path. This shape is that one afterwards (the kept walks of the state
        before are not asked any more). None (then the caller makes one anew) when it cannot:
        the library's tree was made anew (not grown), the new leaf is not below an older entry,
        ids repeat, the tool calls were all read up front (a new call may name an older result's).
        The new leaf may be below another entry than the old leaf (pi's ``/tree``, then a turn):
        the leaf's path is then that entry's and the appended ones; with nothing appended it is
        another older entry (``pi/branch``), whose path is the leaf's, or no entry
        (``pi/resetLeaf``): no path. There may have been no leaf before either (no path then)."""
        from .library_tree import shown_tree  # (that module is built on this one)

        old_leaf = self.leaf_id
        path = self.leaf_path if self.has_leaf else []  # (no leaf: no path, whatever was given)
        node_of = self.roots.node_of if isinstance(self.roots, TreeRoots) else None
        if (
            type(path) is not list
            or (self.has_leaf and type(old_leaf) is not str)
            or node_of is None
            or not self._followable(manager)
        ):
            return None
        new_leaf = manager.get_leaf_id()
        found = appended_path(appended, new_leaf)
        if not appended and (type(new_leaf) is str or new_leaf is None):
            found = [], new_leaf  # the leaf moved alone (pi/branch, pi/resetLeaf): no new entry below it
        roots = shown_tree(manager)
        if found is None or not isinstance(roots, TreeRoots) or roots.node_of is None:
            return None
        # an entry this shape knows (the old leaf, else a root) has the same node in the tree now
        known = old_leaf if self.has_leaf else (_node_id(self.roots[0]) if self.roots else None)
        if type(known) is not str or roots.node_of(known) is not node_of(known):
            return None  # made anew: the nodes this shape knows are not the tree's
        tail, fork = found
        above = path if fork == old_leaf else [] if fork is None else manager.get_branch(fork)
        if fork is not None and (not above or above[-1].id != fork):
            return None
        # how many entries the old leaf's path and the new one share: all of the old one below the
        # old leaf (pi's turn; a long path is not compared with itself)
        shared = len(path) if above is path else shared_path_length(path, above)
        if len(path) + len(above) - 2 * shared > MOST_MOVED_ROWS:
            return None  # (every row that left or joined the path would be looked at again: a walk
            # anew of what is asked costs less, and a view told the move by `since` reloads)
        self._take_in(roots, manager.by_id, above, tail, appended, shared)
        return self

    def _take_in(
        self,
        roots: TreeRoots[Any],
        entries_by_id: Mapping[Any, Any],
        above: list[Any],
        tail: list[Any],
        appended: list[Any],
        shared: int,
    ) -> None:
        """:meth:`followed` once it found that it can: ``tail`` the new leaf's path below the
        older entry the last of ``above`` (the path down to it: the old leaf's, or another), of
        which the first ``shared`` are on the old leaf's path too."""
        node_of = roots.node_of
        assert node_of is not None  # (checked by followed)
        path = self.leaf_path if self.has_leaf else []
        assert type(path) is list
        old_leaf = self.leaf_id
        left, joined = path[shared:], above[shared:]  # off the path now; older ones on it now
        # and where the two part, if they do: another of its children is on the path
        parted = [path[shared - 1]] if shared and (left or joined) else []
        self.roots, self.entries_by_id = roots, entries_by_id
        self.leaf_path = [*above, *tail]
        self.leaf_id = self.leaf_path[-1].id if self.leaf_path else None
        self.has_leaf = bool(self.leaf_path)
        if self.visible is not None:  # the leaf's own answer depends on the leaf
            self.visible = node_filter(
                self._mode, self.leaf_id, self._search, self.cache, self._context_edits
            )
        self._move_path(shared, left, [*joined, *tail], node_of)
        self._around = None
        self._chain_lengths.clear()  # an appended entry can make any chain longer (or show a second child)
        if self.tool_calls is not None:
            # every call of the session read anew when needed (a new call may name an older
            # result's id); a result's call above it stays (appends add no entry above it)
            self._keep_encoded_previews(appended)
            self.tool_calls, self.calls_complete, self._session_calls = {}, False, None
        new_ids = {entry.id for entry in appended}
        # what changed is recorded only for levels that may be kept: a branch far from the leaf
        # moves hundreds of thousands of nodes, whose ids would be most of what following it holds
        kept = self._levels_to_keep(old_leaf, tail, appended)
        # to no leaf: no levels down to it are asked; those down to the old leaf wait for the next
        last_leaf = (path, kept) if kept is not None and not self.has_leaf else None
        if last_leaf is not None:
            kept = None
        changed: set[int] | None = None if kept is None else set()
        self._forget_changed(path[-1] if path else None, appended, new_ids, node_of, changed)
        if not tail and self.has_leaf:  # the new leaf is an older entry: shown otherwise as the leaf
            self._forget_leaf_row(node_of(self.leaf_id), node_of, changed)
        self._forget_moved_path([*left, *joined, *parted], node_of, changed)
        relabelled = self._forget_relabelled(appended, new_ids, node_of, changed)
        # the rows that joined the path hang below the row where the two paths part (or its shown
        # ancestor), which is in ``changed``: no level above the one that holds it is another, and
        # on another branch than the old leaf's they are in no level kept. From no leaf no row
        # parts them: the root that joined is in the top level, walked again
        if changed is not None and path:
            changed -= {id(node_of(entry.id)) for entry in joined}
        self._keep_levels_above(kept, changed)
        if not path and not appended and self._levels_at_last_leaf is not None:
            self._keep_levels_from_last_leaf(node_of)
        self._levels_at_last_leaf = last_leaf
        if self._levels_before is None and last_leaf is None:
            self._encoded_levels = {}  # (their rows are walked again)
        elif relabelled:
            self._forget_encoded_levels(relabelled)
        if not self._encoded_levels:
            self._named_from_session = set()

    def _forget_leaf_row(
        self, node: Any, node_of: Callable[[Any], Any], changed: set[int] | None, leaf_then: Any = ABSENT
    ) -> None:
        """``node`` became the leaf or stopped being it: whether it is shown is found again (pi's
        filters show a silent turn while it is the leaf); when it was shown or is, its row is
        another (``isLeaf``): recorded in ``changed``. ``leaf_then``: see :meth:`_shown_again`."""
        was_shown, shown = self._shown_again(node, node_of, changed, leaf_then)
        if was_shown is not False or shown:
            _record(changed, node)

    def _keep_levels_from_last_leaf(self, node_of: Callable[[Any], Any]) -> None:
        """After a move from no leaf to an older entry (nothing appended): the levels down to the
        leaf before the move to no leaf are kept as a move from that leaf straight to this one
        keeps them (see :meth:`_keep_levels_above`), what that move changes recorded as
        :meth:`_take_in` records it; whether the two leaves' rows were shown then is what the
        filter answers while the old one is the leaf (the answers kept are of no leaf since)."""
        assert self._levels_at_last_leaf is not None and type(self.leaf_path) is list
        path, kept = self._levels_at_last_leaf
        above = self.leaf_path
        shared = shared_path_length(path, above)
        left, joined = path[shared:], above[shared:]
        parted = [path[shared - 1]] if shared and (left or joined) else []
        changed: set[int] = set()
        for entry in (path[-1], above[-1]):  # the old leaf and the new
            self._forget_leaf_row(node_of(entry.id), node_of, changed, path[-1].id)
        self._forget_moved_path([*left, *joined, *parted], node_of, changed)
        changed -= {id(node_of(entry.id)) for entry in joined}  # (see _take_in)
        self._keep_levels_above(kept, changed)

    def _forget_relabelled(
        self,
        appended: list[Any],
        new_ids: set[Any],
        node_of: Callable[[Any], Any],
        changed: set[int] | None,
    ) -> set[int]:
        """The ``id`` of the older nodes whose label an appended label entry set (their rows show
        the label); whether each is shown is found again (``labeled-only`` and a search read the
        label), and when that changed, as for :meth:`_forget_changed` (recorded in ``changed``).
        ``new_ids``: the ids of ``appended``."""
        relabelled: set[int] = set()
        for entry in appended:
            if entry.type != "label":
                continue
            node = node_of(index_key(label_target(entry)))
            if node is None or node.entry.id in new_ids:
                continue  # (a new node's row is new)
            relabelled.add(id(node))
            was_shown, shown = self._shown_again(node, node_of, changed)
            if self.visible is not None and was_shown is not shown and (was_shown is not False or shown):
                _record(changed, node)
        return relabelled

    def _shown_again(
        self, node: Any, node_of: Callable[[Any], Any], changed: set[int] | None, leaf_then: Any = ABSENT
    ) -> tuple[bool | None, bool]:
        """Whether ``node`` was shown (None: never asked; given ``leaf_then``, while that was the
        leaf: the answer kept is of a state since) and whether it is, asked again; when that
        changed, its parent shows other children: forgotten (see :meth:`_forget_shown_children`,
        which records in ``changed``)."""
        was_shown = self._shown.pop(node.entry) if type(node.entry) is Entry else None
        if leaf_then is not ABSENT:
            was_shown = self.shown_as_leaf(node, leaf_then)
        shown = self.is_shown(node)
        if self.visible is not None and was_shown is not shown:
            self._forget_shown_children(node.entry.parent_id, node_of, changed)
        return was_shown, shown

    def _move_path(
        self, shared: int, left: list[Any], joined: list[Any], node_of: Callable[[Any], Any]
    ) -> None:
        """What is known of the leaf's path, once it is :attr:`leaf_path`, whose first ``shared``
        entries were on it before: the entries ``left`` are off it and ``joined`` on it."""
        assert type(self.leaf_path) is list
        if isinstance(self._path_entries, _EntriesOnPath):  # (ordered holds it: changed in place)
            self._path_entries.move(self.leaf_path, shared, left, joined)
        elif self._path_entries is None:  # made while there was no leaf: no path known then
            self._path_entries = _entries_on(self.leaf_path)
            if self.ordered is not None:
                self.ordered = _order_along(self._path_entries)
        if left:  # (made again when asked for)
            self._on_path = self._path_nodes = None
            return
        if self._on_path is not None:
            self._on_path.update(entry.id for entry in joined)
        if self._path_nodes is not None:
            self._path_nodes.update((entry.id, node_of(entry.id)) for entry in joined)

    def _forget_moved_path(
        self, moved: list[Any], node_of: Callable[[Any], Any], changed: set[int] | None
    ) -> None:
        """After a branch elsewhere: the older entries that left the leaf's path or joined it, and
        the one where the old and new paths part, show otherwise (``onLeafPath``, their
        children's order: the one on the path first); forget their shown children, the shown
        ones recorded in ``changed`` (by ``id``)."""
        for entry in moved:
            node = node_of(entry.id)
            if node is None:
                continue
            self._shown_children.pop(id(node), None)
            if self.is_shown(node):
                _record(changed, node)
            else:  # its children's order is its shown ancestor's shown children's
                self._forget_shown_children(entry.parent_id, node_of, changed)

    def _forget_encoded_levels(self, nodes: set[int]) -> None:
        """Let go of the encoded levels whose page shows one of ``nodes`` (by ``id``)."""
        self._encoded_levels = {
            key: known
            for key, known in self._encoded_levels.items()
            if not any(id(row.node) in nodes for row in known.rows[known.shown])
        }

    def _forget_changed(
        self,
        old_entry: Any | None,
        appended: list[Any],
        new_ids: set[Any],
        node_of: Callable[[Any], Any],
        changed: set[int] | None,
    ) -> None:
        """After ``appended`` (below the old leaf ``old_entry``, None: there was none, and
        elsewhere; ``new_ids`` their ids): forget what is kept of the older nodes that may show
        otherwise now; the ``id`` of the shown ones among them whose row may be another (see
        :meth:`_keep_levels_above`) recorded in ``changed``: the old leaf, and those whose shown
        children changed."""
        if old_entry is not None:
            self._forget_leaf_row(node_of(old_entry.id), node_of, changed)  # (no longer the leaf)
        for entry in appended:  # the older nodes that have new children
            if entry.parent_id is not None and entry.parent_id not in new_ids:
                self._forget_shown_children(entry.parent_id, node_of, changed)

    def levels_before(self, key: Any) -> tuple[list[TreeLevel], TreeLevel] | None:
        """For :func:`tree_levels` of ``key``: the first levels, as they were before the last
        append, and the level to walk again from (its window) if known."""
        known = self._levels_before
        return (known[1], known[2]) if known is not None and known[0] == key else None

    def encoded_level(self, level: TreeLevel, size: int) -> EncodedLevel | None:
        """``level`` as the last levels reply encoded it with pages of ``size`` rows, if it did.
        A level's rows (the list, by identity) are those of one state of the session, or of the
        levels an append below the leaf kept (see :meth:`_keep_levels_above`): none of their
        nodes is shown otherwise, shows other children or stopped being the leaf, a row's place,
        depth and order and whether it is on the leaf's path are as they were (the appended
        entries are below the old leaf), and so are the previews unless a call appended names a
        tool result's (see :meth:`_keep_encoded_previews`): the same JSON."""
        found = self._encoded_levels.get(_level_key(level, size))
        return found if found is not None and found.rows is level.rows else None

    def keep_encoded_levels(self, encoded: list[tuple[TreeLevel, int, EncodedLevel]]) -> None:
        """Keep the levels of a levels reply as encoded (those of the reply before let go)."""
        self._encoded_levels = {_level_key(level, size): known for level, size, known in encoded}

    def _keep_encoded_previews(self, appended: list[Any]) -> None:
        """After an append: let go of every encoded level when a call appended may be the one a
        tool result's preview names now (one that named a call of the whole session, of the
        same id: the last one a walk meets)."""
        if self._encoded_levels and self._names_a_call_of(self._named_from_session, appended):
            self._encoded_levels = {}

    def names_session_calls(self, appended: list[Any], named: NamedCalls) -> bool:
        """Whether a call of ``appended`` may be the one the preview of an older tool result names
        now whose row a client holds, the calls those previews named from the whole session
        ``named`` (this shape's :attr:`named_for_clients`, or another's of the same view): the
        preview named the call of that id a walk meets last, and would name another."""
        return self._names_a_call_of(named.keys, appended)

    def shown_as_leaf(self, node: Any, leaf_id: Any) -> bool:
        """Whether the filter shows ``node`` while the leaf is ``leaf_id`` (pi's filters show a
        silent assistant turn while it is the leaf)."""
        if self.visible is None:
            return True
        return node_filter(self._mode, leaf_id, self._search, self.cache, self._context_edits)(node)

    @property
    def reads_labels(self) -> bool:
        """Whether which nodes are shown depends on their labels (``labeled-only``, a search)."""
        return self._mode == "labeled-only" or bool(self._search)

    def label_of(self, entry_id: Any) -> tuple[Any, Any] | None:
        """(``label``, ``labelTimestamp``) of the entry's row, UNSET where it has none; None when
        the tree has no node for it."""
        node = self.find(entry_id)
        if node is None:
            return None
        label, stamp = node.label, node.label_timestamp
        return (UNSET if label is ABSENT else _safe(label), UNSET if stamp is ABSENT else _safe(stamp))

    def _names_a_call_of(self, named: set[Any] | None, appended: list[Any]) -> bool:
        """Whether an assistant message of ``appended`` holds a call whose key is in ``named``
        (None: every key)."""
        if named == set():
            return False
        calls_of = tool_calls_of if self.cache is None else self.cache.tool_calls_of
        for entry in appended:
            if not (type_of(entry) == "message" and role_of(entry) == "assistant"):
                continue
            if named is None or any(key in named for key, _call in calls_of(entry)):
                return True
        return False

    def _keep_levels_above(
        self, kept: tuple[Any, list[TreeLevel], bool] | None, changed: set[int] | None
    ) -> None:
        """After an append of only the new leaf's path below an older entry (the old leaf, or
        another), ``kept`` the levels down to the old leaf it may keep (see
        :meth:`_levels_to_keep`): those before the first that shows one of the nodes that
        ``changed`` (by ``id``: the old leaf, those whose shown children changed, those that left
        the leaf's path or joined it) are the first levels down to the new leaf, their windows
        aimed at it, and that level's window is walked again (and the levels below it): whether a
        node is shown, which children it shows in which order, and which is on the path are what
        a level's rows follow from. None are kept when a node that changed is in no level (a
        hidden root, whose shown children the top level lists)."""
        self.kept_levels = self._levels_before = None
        if kept is None or changed is None:
            return
        first = _first_level_holding(kept[1], changed)
        if first is None:
            return
        new_leaf = self.leaf_id
        aimed = [
            TreeLevel(level.kind, level.window.around(new_leaf), level.rows, level.around_index)
            for level in kept[1][: first + 1]
        ]
        self._levels_before = ((id_key(new_leaf), kept[0][1]), aimed[:-1], aimed[-1])

    def _levels_to_keep(
        self, old_leaf: Any, tail: list[Any], appended: list[Any]
    ) -> tuple[Any, list[TreeLevel], bool] | None:
        """The kept levels (complete, down to ``old_leaf``) whose first ones an append of only
        ``tail`` may keep (see :meth:`_keep_levels_above`), if any: what changed is recorded for
        them alone (see :meth:`_take_in`)."""
        kept = self.kept_levels
        if (
            kept is None
            or not kept[2]
            or kept[0][0] != id_key(old_leaf)
            or len(appended) != len(tail)
            or not kept[1]
        ):
            return None
        return kept

    def _followable(self, manager: Any) -> bool:
        """Whether what this shape kept can serve the session's next state (see :meth:`followed`)."""
        return (
            not (self.tool_calls is not None and self.calls is CallReading.UP_FRONT)
            and manager.has_unique_ids()
        )

    def _forget_shown_children(
        self, entry_id: Any, node_of: Callable[[Any], Any], forgotten: set[int] | None
    ) -> None:
        """Forget the kept shown children of the node of ``entry_id`` (its children changed, or
        whether one is shown), and of each ancestor that reaches them through hidden nodes; the
        ``id`` of the shown one they end at is recorded in ``forgotten`` (of a hidden root when
        there is none: the tops of the tree show other nodes)."""
        node = None
        while entry_id is not None:
            above = node_of(entry_id)
            if above is None:
                break
            node = above
            self._shown_children.pop(id(node), None)
            if self.is_shown(node):
                break  # its own shown children are what changed: its parent lists it alone
            entry_id = node.entry.parent_id
        if node is not None:
            _record(forgotten, node)

    @property
    def on_path(self) -> set[Any]:
        """The keys (``index_key``) of the ids of the entries on the leaf's path."""
        if self._on_path is None:
            self._on_path = _keys_on(self.leaf_path or ())
        return self._on_path

    def is_on_leaf_path(self, entry: Any, entry_id: Any) -> bool:
        """Whether ``entry`` (whose id is ``entry_id``) is on the leaf's path."""
        if not (entry_id if type(entry_id) is str else truthy(entry_id)):  # (most ids: no call)
            return False
        path_entries = self._path_entries
        return entry in path_entries if path_entries is not None else index_key(entry_id) in self.on_path

    def read_ahead(self, rows: list[Row]) -> None:
        """Make the previews of the rows a reply shows before it is encoded, those not known yet
        together (see ``PreviewCache.read_ahead``). A view that reads its calls near each result
        (a tree view's windows, each a reply of a few hundred rows) keeps the previews of its
        last replies only (``PreviewCache.hold_at_most``); the whole tree's walk (calls read up
        front) keeps every row's for its pages."""
        cache = self.cache
        if cache is not None and self.tool_calls is not None and rows:
            if self.calls is CallReading.NEAR_EACH_RESULT:
                cache.hold_at_most(_PREVIEWS_HELD)
                if len(self._calls_above) > _PREVIEWS_HELD:  # (each holds its call's arguments)
                    self._calls_above = {}
            cache.read_ahead([row.node.entry for row in rows])

    def _calls_for(self, entry: Any) -> ToolCalls:
        """The tool calls the preview of ``entry`` is made with (read as :attr:`calls` says)."""
        calls = self.tool_calls
        assert calls is not None
        if self.calls_complete:
            return calls
        call_id = self._call_id_of(entry)
        if not truthy(call_id):
            return calls  # not a tool result, or one whose preview names no call
        if self.calls is CallReading.NEAR_EACH_RESULT:
            wanted = index_key(call_id)
            call = self._call_above(entry, wanted)
            if call is not None:
                return {wanted: call}
            if self._named_from_session is not None:
                self._named_from_session.add(wanted)
            self.named_for_clients.add(wanted)
            return self.session_calls()
        self.tool_calls, self.calls_complete = self.session_calls(), True
        self._named_from_session = None  # (every result's from now on)
        self.named_for_clients.keys = None
        return self.tool_calls

    def session_calls(self) -> ToolCalls:
        """Every tool call of the session (only read: the calls ``every_call`` gives are shared)."""
        if self._session_calls is None:
            every_call = self._every_call
            self._session_calls = tree_tool_calls(self.roots) if every_call is None else every_call()
        return self._session_calls

    def _call_id_of(self, entry: Any) -> Any:
        """The call id a tool result names (ABSENT for any other entry)."""
        if type_of(entry) != "message" or role_of(entry) != "toolResult":
            return ABSENT
        cache = self.cache
        if cache is None:
            message = field(entry, "message")
            return message.get("toolCallId", ABSENT) if isinstance(message, dict) else ABSENT
        # the preview's part holds it: no read of the body (the preview needs the part anyway)
        return getattr(cache.part_of(entry), "call_id", ABSENT)

    def _call_above(self, entry: Any, wanted: Any) -> Any:
        """The call ``wanted`` (an index key) of the nearest assistant message a few entries above
        the tool result ``entry`` that holds one (its last of that id, as pi's tree selector reads
        a message), or None; found once per entry."""
        plain = type(entry) is Entry
        known = self._calls_above.get(entry if plain else id(entry), _NOT_LOOKED_FOR)
        if plain and known is not _NOT_LOOKED_FOR:
            return known
        if not plain and known is not _NOT_LOOKED_FOR and known[0] is entry:
            return known[1]
        calls_of = tool_calls_of if self.cache is None else self.cache.tool_calls_of
        found, current, seen = None, entry, {id(entry)}
        for _ in range(_CALL_SEARCH_STEPS):
            parent = parent_of(current)
            above = self.entries_by_id.get(index_key(parent)) if truthy(parent) else None
            if above is None or id(above) in seen:
                break
            seen.add(id(above))
            current = above
            if type_of(above) == "message" and role_of(above) == "assistant":
                for key, call in calls_of(above):
                    if key == wanted:
                        found = call
                if found is not None:
                    break
        if plain:
            self._calls_above[entry] = found
        else:
            self._calls_above[id(entry)] = (entry, found)
        return found

    def find(self, wanted_id: Any) -> Any:
        """:func:`find_node` without walking the tree each time: a tree view asks for a node at
        every level it opens. A tree that knows its nodes by id (:class:`TreeRoots`) is asked;
        else an index is made on first use (ids that repeat: no index); the nodes of a known leaf
        path (every id unique), where a tree view's levels start, are found first without it."""
        node_of = self.roots.node_of if isinstance(self.roots, TreeRoots) else None
        if node_of is not None:
            return node_of(index_key(wanted_id))
        if self.leaf_path is not None:
            found = self._node_on_leaf_path(wanted_id)
            if found is not None:
                return found
        if self._node_index is None:
            index: dict[Any, Any] = {}
            for node in _walk_nodes(self.roots):
                entry_id = id_of(node.entry)
                key = index_key(entry_id) if entry_id is not ABSENT else None
                if key is None or key in index:
                    index = {}
                    self._unique_ids = False
                    break
                index[key] = node
            else:
                self._unique_ids = True
            self._node_index = index
        if not self._unique_ids:
            return find_node(self.roots, wanted_id)
        return self._node_index.get(index_key(wanted_id))

    def _node_on_leaf_path(self, wanted_id: Any) -> Any:
        """The node of ``wanted_id`` if its entry is on :attr:`leaf_path`, else None (found by
        following the path down from the roots, once)."""
        if self._path_nodes is None:
            self._path_nodes = {
                index_key(id_of(node.entry)): node for node in nodes_along(self.roots, self.leaf_path or ())
            }
        return self._path_nodes.get(index_key(wanted_id))

    def path_keys(self, entry_id: Any) -> set[Any]:
        """:func:`active_path_ids` of an entry, kept for the next window asked for around it."""
        key = id_key(entry_id)
        if self._around is None or self._around[0] != key:
            same_as_leaf = self.has_leaf and key == id_key(self.leaf_id)
            if same_as_leaf:
                path = self.on_path
            elif self._branch_of is not None:
                path = _keys_on(self._branch_of(entry_id) or ())
            else:
                path = active_path_ids(self.entries_by_id, entry_id)
            self._around = (key, path)
        return self._around[1]

    def on_path_to(self, entry_id: Any) -> Callable[[Row], bool]:
        """Whether a row is on the path to ``entry_id`` (:func:`_on_path` of :meth:`path_keys`). To
        the leaf, when its path's entries are known (every id unique), by them: not a set of the
        keys of a path as long as the session besides."""
        path_entries = self._path_entries
        if path_entries is not None and self.has_leaf and id_key(entry_id) == id_key(self.leaf_id):

            def on_leaf_path(row: Row) -> bool:
                entry = row.node.entry
                return entry in path_entries and self.is_on_leaf_path(entry, _envelope(entry)[0])

            return on_leaf_path
        return partial(_on_path, path=self.path_keys(entry_id))

    def children_in_order(self, node: Any) -> list[Any]:
        children = node.children
        return children if self.ordered is None or not children else self.ordered(children)

    def is_shown(self, node: Any) -> bool:
        """Whether the filter shows ``node``, found once per entry whose body the filter reads: the
        walk asks for every node and each node of a page asks again for its children, and the
        filters read message bodies (an assistant turn without text is hidden; a search) from the
        file. What the envelope tells is not kept: the most entries of a session, and as quick
        to tell again as to look up."""
        visible = self.visible
        if visible is None:
            return True
        entry = node.entry
        if type(entry) is not Entry or not (self._search or entry.role == "assistant"):
            return visible(node)
        known = self._shown
        shown = known.get(entry)
        if shown is None:
            shown = visible(node)
            known.put(entry, shown)
        return shown

    def shown_children(self, node: Any) -> list[Any]:
        """The nodes that hang right under ``node`` in the result (through hidden ones), in order
        (not to be changed: it may be the node's own list); found once per node (a tree view's levels
        walk each chain, then send the rows of a page). A node whose only child is shown (most nodes
        of a chat) gives its own list: no list, nor an item of the cache, for every row of a tree,
        which the collector would walk after the request."""
        if self.visible is None:
            return self.children_in_order(node)
        children: list[Any] = node.children
        if len(children) == 1 and self.is_shown(children[0]):
            return children
        known = self._shown_children.get(id(node))
        if known is None:
            known = self._shown_children[id(node)] = self._find_shown_children(node)
        return known

    def _find_shown_children(self, node: Any) -> list[Any]:
        return shown_below(node, self.is_shown, self.children_in_order)

    def walk(self, tops: list[Any], max_depth: int | None) -> Iterator[Row]:
        """The :class:`Row` of every shown node, in preorder, down to ``max_depth``. Iterative: a
        200,000-entry chain is 200,000 levels deep."""
        stack: list[tuple[Any, Any, int]] = [(top, None, -1) for top in reversed(tops)]
        is_shown, push = self.is_shown, stack.append
        while stack:
            node, ancestor_id, ancestor_depth = stack.pop()
            while True:  # down a chain of single children without the stack (most nodes of a chat)
                if is_shown(node):
                    depth = ancestor_depth + 1
                    yield Row(node, ancestor_id, depth)
                    if max_depth is not None and depth >= max_depth:
                        break
                    ancestor_id, ancestor_depth = _node_id(node), depth
                children = node.children
                if len(children) != 1:
                    for child in reversed(self.children_in_order(node)):
                        push((child, ancestor_id, ancestor_depth))
                    break
                node = children[0]

    def walk_chain(self, tops: list[Any], max_depth: int | None) -> Iterator[Row]:
        """The rows of :attr:`TreeWindow.chain`: the shown top and its descendants while each has
        exactly one shown child (down to ``max_depth``); several shown tops: the tops alone."""
        level = self._chain_tops(tops)
        if len(level) != 1:
            yield from (Row(top, None, 0) for top in level)
            return
        yield from _chain_rows(self._chain_nodes(level[0], 0, max_depth), 0, None)

    def _chain_tops(self, tops: list[Any]) -> list[Any]:
        """The shown nodes a chain window of ``tops`` starts from (one: a chain; several: the
        tops alone)."""
        level: list[Any] = []
        for top in tops:
            level.extend([top] if self.is_shown(top) else self.shown_children(top))
        return level

    def _chain_nodes(self, node: Any, depth: int, max_depth: int | None) -> Iterator[Any]:
        """The nodes of a chain from its shown ``node`` (at ``depth``) down, while each has exactly
        one shown child (down to ``max_depth``): what :meth:`walk_chain` gives a row for, and
        what :meth:`chain_rows` keeps and :meth:`chain_length` counts without one."""
        is_shown, filtered = self.is_shown, self.visible is not None
        while True:
            yield node
            if max_depth is not None and depth >= max_depth:
                return
            children = node.children
            # (shown_children inline for a node whose only child is shown: most nodes of a chat)
            if not (filtered and len(children) == 1 and is_shown(children[0])):
                children = self.shown_children(node)
            if len(children) != 1:
                return
            node, depth = children[0], depth + 1

    def chain_rows(self, tops: list[Any], window: TreeWindow) -> Sequence[Row]:
        """The rows of :meth:`rows` as a sequence: a chain of one shown top as its nodes
        (:class:`ChainRows`, no row made for them), any other window a list of its rows."""
        if not window.chain:
            return list(self.walk(tops, window.depth))
        level = self._chain_tops(tops)
        if len(level) > 1:  # several tops: the tops alone
            return [Row(top, None, 0) for top in level]
        return ChainRows([*self._chain_nodes(level[0], 0, window.depth)] if level else [])

    @property
    def ids_unique(self) -> bool:
        """Whether every id of the session is known to be unique (the path to an entry is then
        ``getBranch(id)``, given as ``branch_of``): a node's ancestors are those of its entry."""
        return self._branch_of is not None

    def chain_length(self, last: Row, top: Any, max_depth: int | None) -> int:
        """How many rows :meth:`walk_chain` of the single shown ``top`` gives, ``last`` one of them
        (the walk goes on from it): counted once per top (and depth), without a row for each.
        A tree view pages through a long chain a window at a time, each window saying how many
        rows the chain has."""
        key = (id(top), max_depth)
        known = self._chain_lengths.get(key)
        if known is not None:
            return known[1]
        length = last.depth
        for _node in self._chain_nodes(last.node, last.depth, max_depth):
            length += 1
        self._chain_lengths[key] = (top, length)
        return length

    def rows(self, tops: list[Any], window: TreeWindow) -> Iterator[Row]:
        """The shown rows of ``window`` in order: its chain, or the walk of its subtree."""
        return self.walk_chain(tops, window.depth) if window.chain else self.walk(tops, window.depth)

    def node(
        self, node: Any, visible_parent_id: Any, depth: int, children: list[Any], branch_point: Any = UNSET
    ) -> FlatRow:
        """One node of the result, ``children`` its shown children's ids (or nodes: the nested form);
        ``branch_point``: its ``isBranchPoint`` (UNSET: set later, see :class:`FlatRow`)."""
        entry = node.entry
        if type(entry) is Entry:  # (most nodes: no tuple for the envelope)
            entry_id, parent_id, etype = entry.id, entry.parent_id, entry.type
            role, timestamp, line = entry.role, entry.timestamp, entry.line
        else:
            entry_id, parent_id, etype, role, timestamp, line = _envelope(entry)
        preview: Any = UNSET
        if self.tool_calls is not None:
            preview = self.preview(entry, self.tool_calls if self.calls_complete else self._calls_for(entry))
        label, label_timestamp = node.label, node.label_timestamp
        # made for every row of a whole tree: the strings most fields are pass without a call
        return FlatRow(
            entry_id if type(entry_id) is str else _wire_id(entry_id),
            parent_id if type(parent_id) is str else _member(parent_id),
            visible_parent_id,
            children,
            etype if type(etype) is str else _member(etype),
            role if type(role) is str else _member(role),
            UNSET if label is ABSENT else _safe(label),
            UNSET if label_timestamp is ABSENT else _safe(label_timestamp),
            preview,
            timestamp if type(timestamp) is str else _member(timestamp),
            line if line >= 0 else UNSET,
            depth,
            self.has_leaf and strict_equal(entry_id, self.leaf_id),  # (1 == True in Python, not in JS)
            self.is_on_leaf_path(entry, entry_id),
            branch_point,
        )


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


def _member(value: Any) -> Any:
    """A member of the envelope on the wire: UNSET (left out) when the entry has none."""
    return UNSET if value is ABSENT else _safe(value)


def _tops(roots: list[Any], shape: _TreeShape, window: TreeWindow) -> list[Any]:
    if window.root_id is ABSENT:
        return list(roots) if shape.ordered is None else shape.ordered(list(roots))
    top = shape.find(window.root_id)
    if top is None:
        raise RootNotFoundError(window.root_id)
    return [top]


class _FlatPage:
    """The flat form of one window, made one node at a time; ``total`` is known once exhausted.

    ``rows`` is the window's walk: a generator (walked as far as needed, once) or the list a
    :class:`FlatTree` keeps (then a page is a slice of it). Nodes outside the page are walked (to
    count them and to know each node's ancestors) but never built. Without a limit the page ends
    one node past ``max_nodes``: that node shows the result is too large, and nothing beyond it is
    built.
    """

    def __init__(
        self,
        shape: _TreeShape,
        rows: Iterable[Row],
        window: TreeWindow,
        max_nodes: int | None,
        around_index: int | None = None,
        total: int | None = None,
        first: int = 0,
    ):
        """``around_index``: where the row on the path to ``window.around_id`` is in ``rows``, when
        the caller found it already (else it is looked for). ``total``: how many rows the window
        has, when ``rows`` is a list of the first of them only (at least as far as the page ends)."""
        self.shape = shape
        self.window = window
        self.max_nodes = max_nodes
        self.start = window.offset
        self.around_index: int | None = None
        self.known_total = total
        self.first = first
        if window.around_id is not ABSENT:
            rows = rows if isinstance(rows, _INDEXED_ROWS) else list(rows)
            if around_index is None:
                around_index = _index_on_path(shape, rows, window.around_id)
            self.around_index = around_index
            if self.around_index is not None and window.limit is not None:
                page = window.limit if max_nodes is None else min(window.limit, max_nodes)
                every = len(rows) if total is None else total
                self.start = max(0, min(self.around_index - page // 2, every - page))
        self.rows = rows
        if window.limit is not None:
            size: int | None = window.limit if max_nodes is None else min(window.limit, max_nodes)
        else:
            size = None if max_nodes is None else max_nodes + 1
        self.end = None if size is None else self.start + size
        self.total = 0
        self._shown: list[Row] | None = None

    def shown_rows(self) -> list[Row]:
        """The rows of the page, when the window's rows are a list (else they are walked as the
        page is made): made once (a chain's rows are made from its nodes), for the read ahead of
        their previews and for the page."""
        if not isinstance(self.rows, _INDEXED_ROWS):
            return []
        if self._shown is None:
            end = None if self.end is None else self.end - self.first
            self._shown = self.rows[self.start - self.first : end]
        return self._shown

    def nodes(self) -> Iterator[FlatRow]:
        rows, start, end = self.rows, self.start, self.end
        if isinstance(rows, _INDEXED_ROWS):
            self.total = len(rows) if self.known_total is None else self.known_total
            yield from map(self._item, self.shown_rows())
            return
        index = -1
        for index, row in enumerate(rows):
            if index < start or (end is not None and index >= end):
                continue  # outside the page: counted, not built
            yield self._item(row)
        self.total = index + 1

    def _item(self, row: Row) -> FlatRow:
        node = row.node
        # all shown children, also those beyond `depth`: the client can ask for them by rootId
        children = self.shape.shown_children(node)
        if len(children) == 1:  # most nodes of a chat
            return self.shape.node(node, row.parent_id, row.depth, [_node_id(children[0])], False)
        ids = [_node_id(c) for c in children]
        return self.shape.node(node, row.parent_id, row.depth, ids, len(children) > 1)

    def check_size(self, returned: int) -> None:
        """Raise :class:`TreeTooLargeError` when a result without ``limit`` outgrew the maximum."""
        if self.window.limit is None and self.max_nodes is not None and returned > self.max_nodes:
            raise TreeTooLargeError(self.total, self.max_nodes)

    def paging_fields(self, returned: int) -> dict[str, Any]:
        """``total``/``hasMore``/``nextOffset`` of a paged result."""
        following = self.start + returned
        fields: dict[str, Any] = {"total": self.total, "hasMore": following < self.total}
        if following < self.total:
            fields["nextOffset"] = following
        if self.window.around_id is not ABSENT:
            fields["offset"] = self.start
            fields["aroundIndex"] = self.around_index
        return fields


def _index_on_path(shape: _TreeShape, rows: Sequence[Row], around_id: Any) -> int | None:
    """Where the row on the path to ``around_id`` is in ``rows``: the entry's own row, or its deepest
    shown ancestor's (in preorder an ancestor comes before its descendants, so that is the last row
    on the path). None when no row of the window is on it."""
    if index_key(around_id) not in shape.entries_by_id:
        raise RootNotFoundError(around_id, "aroundId")
    on_path = shape.on_path_to(around_id)
    for index in range(len(rows) - 1, -1, -1):  # the last one on the path: from the end
        if on_path(rows[index]):
            return index
    return None


def _node_id(node: Any) -> Any:
    entry = node.entry
    if type(entry) is Entry and type(entry.id) is str:  # most ids
        return entry.id
    return _wire_id(_envelope(entry)[0])


def _nested_nodes(
    shape: _TreeShape, tops: list[Any], window: TreeWindow, max_nodes: int | None
) -> list[dict[str, Any]]:
    """The nested form: the top nodes, each holding its shown children (down to ``window.depth``).

    A node whose shown children lie beyond ``depth`` has ``children: []`` and ``childrenOmitted``.
    """
    made: list[dict[str, Any]] = []
    tops_out: list[dict[str, Any]] = []
    path: list[tuple[int, dict[str, Any]]] = []  # (depth, node) from a top down to the last node made
    for row in shape.walk(tops, window.depth):
        node, visible_parent_id, depth = row.node, row.parent_id, row.depth
        if max_nodes is not None and len(made) >= max_nodes:
            raise TreeTooLargeError(sum(1 for _ in shape.walk(tops, window.depth)), max_nodes)
        item = shape.node(node, visible_parent_id, depth, []).to_json("children")
        while path and path[-1][0] >= depth:
            path.pop()
        if path:
            path[-1][1]["children"].append(item)
        else:
            tops_out.append(item)
        path.append((depth, item))
        if window.depth is not None and depth >= window.depth:
            shown = shape.shown_children(node)
            item["isBranchPoint"] = len(shown) > 1
            if shown:
                item["childrenOmitted"] = True
        made.append(item)
    for item in made:
        if "isBranchPoint" not in item:
            item["isBranchPoint"] = len(item["children"]) > 1
    return tops_out


# --- the results ---------------------------------------------------------------------------


def tree_view(
    roots: list[Any],
    leaf_id: Any,
    entries_by_id: dict[Any, Any],
    *,
    mode: str = "none",
    form: str = "flat",
    search: str | None = None,
    context_edits: bool = True,
    active_branch_first: bool = False,
    previews: bool = True,
    cache: PreviewCache | None = None,
    window: TreeWindow = WHOLE_TREE,
    max_nodes: int | None = None,
    leaf_path: Sequence[Any] | None = None,
    branch_of: Callable[[Any], Sequence[Any] | None] | None = None,
    every_call: Callable[[], ToolCalls] | None = None,
) -> dict[str, Any]:
    """``{"leafId", "nodes"}``: flat (preorder list with ``childIds``) or nested (``children``).

    ``window`` picks a subtree, a depth and (flat form) a page; a paged result adds ``total``,
    ``hasMore`` and ``nextOffset``. A result that would hold more than ``max_nodes`` nodes without
    a ``limit`` raises :class:`TreeTooLargeError` (so does a nested one in any case).
    ``leaf_path``, ``branch_of``, ``every_call``: as :func:`tree_shape` takes them.
    """
    shape = _window_shape(
        roots, leaf_id, entries_by_id, window, mode, search, active_branch_first, previews, cache,
        leaf_path=leaf_path, branch_of=branch_of, every_call=every_call, context_edits=context_edits,
    )  # fmt: skip
    tops = _tops(roots, shape, window)
    if form == "nested":
        return {"leafId": _wire_id(leaf_id), "nodes": _nested_nodes(shape, tops, window, max_nodes)}
    page = _FlatPage(shape, shape.rows(tops, window), window, max_nodes)
    nodes = [row.to_json() for row in page.nodes()]
    page.check_size(len(nodes))
    result: dict[str, Any] = {"leafId": _wire_id(leaf_id), "nodes": nodes}
    if window.paged:
        result.update(page.paging_fields(len(nodes)))
    return result


def _window_shape(
    roots: list[Any],
    leaf_id: Any,
    entries_by_id: dict[Any, Any],
    window: TreeWindow,
    mode: str,
    search: str | None,
    active_branch_first: bool,
    previews: bool,
    cache: PreviewCache | None,
    **known: Any,
) -> _TreeShape:
    """The shape both result forms of one window start from (``known``: what :func:`tree_shape`
    takes of what the session knows). A subtree (``rootId``) reads the session's tool calls only
    once it shows a tool result: a few rows of a big session would otherwise read every assistant
    message first."""
    return tree_shape(
        roots,
        leaf_id,
        entries_by_id,
        mode=mode,
        search=search,
        active_branch_first=active_branch_first,
        previews=previews,
        cache=cache,
        calls=CallReading.AT_FIRST_RESULT if window.root_id is not ABSENT else CallReading.UP_FRONT,
        **known,
    )


def encode_flat_tree_view(
    roots: list[Any],
    leaf_id: Any,
    entries_by_id: dict[Any, Any],
    *,
    mode: str = "none",
    search: str | None = None,
    context_edits: bool = True,
    active_branch_first: bool = False,
    previews: bool = True,
    cache: PreviewCache | None = None,
    window: TreeWindow = WHOLE_TREE,
    max_nodes: int | None = None,
    leaf_path: Sequence[Any] | None = None,
    branch_of: Callable[[Any], Sequence[Any] | None] | None = None,
    every_call: Callable[[], ToolCalls] | None = None,
) -> bytes:
    """The JSON of ``tree_view(..., form="flat")``, encoded one node at a time.

    A node is a dict only while it is encoded, so a result costs its JSON bytes, not a dict per
    node (several times as much).
    """
    shape = _window_shape(
        roots, leaf_id, entries_by_id, window, mode, search, active_branch_first, previews, cache,
        leaf_path=leaf_path, branch_of=branch_of, every_call=every_call, context_edits=context_edits,
    )  # fmt: skip
    tops = _tops(roots, shape, window)
    return _encode_flat(leaf_id, _FlatPage(shape, shape.rows(tops, window), window, max_nodes))[0]


class FlatTree:
    """The rows of one window of the flat form, walked once and paged many times.

    A front end reads a big tree in pages (at most ``MAX_TREE_NODES`` per reply). Walking the whole tree
    for every page (to count it and to reach the page), with the filter, the leaf's path and the tool
    calls made anew each time, was most of a page's cost. The rows (``_TreeShape.walk`` of the window's
    top nodes) depend on the session and on the filter, search, order, previews, ``rootId`` and
    ``depth``, not on ``offset`` or ``limit``.
    """

    __slots__ = ("leaf_id", "rows", "shape")

    def __init__(self, shape: _TreeShape, leaf_id: Any, rows: list[Row]) -> None:
        self.shape = shape
        self.leaf_id = leaf_id
        self.rows = rows


def flat_tree(
    roots: list[Any],
    leaf_id: Any,
    entries_by_id: dict[Any, Any],
    *,
    mode: str = "none",
    search: str | None = None,
    context_edits: bool = True,
    active_branch_first: bool = False,
    previews: bool = True,
    cache: PreviewCache | None = None,
    window: TreeWindow = WHOLE_TREE,
) -> FlatTree:
    """The rows of ``window`` (its ``rootId`` and ``depth``; pages are cut by :func:`encode_flat_page`)."""
    shape = tree_shape(
        roots,
        leaf_id,
        entries_by_id,
        mode=mode,
        search=search,
        context_edits=context_edits,
        active_branch_first=active_branch_first,
        previews=previews,
        cache=cache,
    )
    return window_tree(shape, window)


def tree_shape(
    roots: list[Any],
    leaf_id: Any,
    entries_by_id: Mapping[Any, Any],
    *,
    mode: str = "none",
    search: str | None = None,
    context_edits: bool = True,
    active_branch_first: bool = False,
    previews: bool = True,
    cache: PreviewCache | None = None,
    calls: CallReading = CallReading.UP_FRONT,
    leaf_path: Sequence[Any] | None = None,
    branch_of: Callable[[Any], Sequence[Any] | None] | None = None,
    every_call: Callable[[], ToolCalls] | None = None,
) -> _TreeShape:
    """What every window of one view of the tree shares (the filter, the order, the leaf's path, the
    tool calls for previews): made once per session state and kept while a tree view opens level
    after level (each level is a window with its own ``rootId``).

    ``calls``: how the tool calls the previews of tool results name are read (see
    :class:`CallReading`).

    ``leaf_path``: the entries from the leaf's root down to the leaf (``getBranch()``), when every
    id is unique (these entries, the same objects as the tree's): the leaf's path and the order of
    ``active_branch_first`` then come from it without a walk of the whole tree.

    ``branch_of``: ``getBranch(id)`` (None or empty when no entry has the id), when every id is
    unique: the path to an ``aroundId`` then comes from it, not from a walk up entry by entry.

    ``every_call``: :func:`tree_tool_calls` of the whole tree, for a tool result whose call is
    read from every assistant message (see ``calls``): kept with the session (a window of a
    subtree then reads them once), and over the library's tree when ``roots`` are nodes made as a
    walk reaches them (the index's rows): a walk of those for them would make every node.

    A tree that knows its nodes by id (:class:`~pi_session_server.session.tree.TreeRoots`) gives
    a window's top without a walk: with ``leaf_path`` and ``branch_of``, a window of a subtree
    costs what it shows (and the tool calls, when a tool result's call is not found above it)."""
    return _TreeShape(
        roots,
        leaf_id,
        entries_by_id,
        mode=mode,
        search=search,
        context_edits=context_edits,
        active_branch_first=active_branch_first,
        previews=previews,
        cache=cache,
        calls=calls,
        leaf_path=leaf_path,
        branch_of=branch_of,
        every_call=every_call,
    )


def window_tree(shape: _TreeShape, window: TreeWindow, children_now: bool = False) -> FlatTree:
    """:func:`flat_tree` of ``window`` over a kept :func:`tree_shape`. ``children_now``: the shown
    children of every row (which each row of a page lists) are found now: a tree whose nodes are
    made as a walk reaches them (``RowTree``) gives up here if at all, not while a page is sent."""
    rows = list(shape.rows(_tops(shape.roots, shape, window), window))
    if children_now:
        for row in rows:
            shape.shown_children(row.node)
    return FlatTree(shape, shape.leaf_id, rows)


def encode_flat_page(tree: FlatTree, window: TreeWindow, max_nodes: int | None = None) -> tuple[bytes, bool]:
    """(the JSON ``encode_flat_tree_view`` gives for ``window``, whether pages follow this one)."""
    page = _FlatPage(tree.shape, tree.rows, window, max_nodes)
    tree.shape.read_ahead(page.shown_rows())
    return _encode_flat(tree.leaf_id, page)


def encode_chain_page(shape: _TreeShape, window: TreeWindow, max_nodes: int) -> tuple[bytes, bool] | None:
    """:func:`encode_flat_page` of a paged window of a chain (``window.chain`` with a ``limit``) of
    one shown top, walked only as far as its page (and the row on the path to ``aroundId``), a row
    made for the page's nodes only, the chain counted once for the shape
    (:meth:`_TreeShape.chain_length`): a tree view's windows of a chain of a million entries do
    not each make a row for every entry. None when the window's top is several rows (the tops
    alone: short), or its rows on the path to ``aroundId`` cannot be found this way (ids that
    repeat); the caller walks the whole window then."""
    assert window.chain and window.limit is not None
    tops = _tops(shape.roots, shape, window)
    rows = shape.walk_chain(tops, window.depth)
    head = list(islice(rows, 2))
    if not head or (len(head) == 2 and head[1].depth == 0):
        return None  # no row, or several tops: the tops alone
    page = min(window.limit, max_nodes)
    around_index: int | None = None
    walked: list[Row]
    if window.around_id is ABSENT:
        first = window.offset
        walked = list(islice(itertools.chain(head, rows), first, first + page))
        last = walked[-1] if walked else None
    else:
        if not shape.ids_unique:
            return None
        if index_key(window.around_id) not in shape.entries_by_id:
            raise RootNotFoundError(window.around_id, "aroundId")
        # each row of a chain is an ancestor of the next: the rows on the path are its first ones,
        # found a stretch of rows at a time (the last of a stretch on the path: all of it is)
        row_on_path = shape.on_path_to(window.around_id)
        walked, stretch = [], head
        while stretch:
            if row_on_path(stretch[-1]):
                walked = [*walked, *stretch][-page - 1 :]  # the page starts at most a page before
                stretch = list(islice(rows, _CHAIN_STRETCH))
                continue
            walked.extend(stretch)  # the last row on the path is among these
            break
        on_path = [row for row in walked if row_on_path(row)]
        around_index = on_path[-1].depth if on_path else None
        if around_index is None:  # no row on the path: the page at `offset`
            first = window.offset
            walked = list(islice(shape.walk_chain(tops, window.depth), first, first + page))
            last = walked[-1] if walked else None
        else:
            walked.extend(islice(rows, page))
            last = walked[-1]
            first = last.depth + 1 - len(walked)
    total = shape.chain_length(last if last is not None else head[-1], head[0].node, window.depth)
    flat = _FlatPage(shape, list(walked), window, max_nodes, around_index, total, first)
    shape.read_ahead(flat.shown_rows())
    return _encode_flat(shape.leaf_id, flat)


_CHAIN_STRETCH = 4096  # rows of a chain walked together while its rows on a path are looked for


def _on_path(row: Row, path: Container[Any]) -> bool:
    """Whether ``row``'s entry is on ``path`` (the keys of the ids on it)."""
    entry = row.node.entry
    if type(entry) is Entry and type(entry.id) is str:  # most ids: their own key
        return entry.id != "" and entry.id in path
    entry_id = _envelope(entry)[0]
    return truthy(entry_id) and index_key(entry_id) in path


_ENCODED_TOGETHER = 512  # nodes encoded in one call (one each cost a call per node; all: their memory)


def _encode_flat(leaf_id: Any, page: _FlatPage) -> tuple[bytes, bool]:
    out = bytearray(b'{"leafId":' + encode_rows(_wire_id(leaf_id)) + b",")
    more = _encode_page_into(page, out)
    out += b"}"
    return bytes(out), more


def _encode_page_into(page: _FlatPage, out: bytearray) -> bool:
    """Append the members of a flat result after ``leafId`` (``"nodes":[...]`` and the paging
    fields) to ``out``; whether pages follow. The nodes' array is written a batch at a time into
    ``out`` itself: each batch's array starts over the ``]`` of the one before, which becomes a
    comma (a whole tree's JSON is copied once, not per batch and again per join)."""
    out += b'"nodes":'
    returned = 0
    items = page.nodes()
    while batch := list(islice(items, _ENCODED_TOGETHER)):
        at = len(out) - 1 if returned else len(out)
        encode_rows_into(batch, out, at)
        if returned:
            out[at] = _COMMA
        returned += len(batch)
    if not returned:
        out += b"[]"
    page.check_size(returned)
    fields = page.paging_fields(returned)
    if page.window.paged:
        out += b"," + encode_rows(fields)[1:-1]
    more: bool = fields["hasMore"]
    return more


_COMMA: Final = ord(",")


# --- the levels of the layout down to an entry ------------------------------------------------


@dataclass(frozen=True, slots=True)
class TreeLevel:
    """One list of pi's ``/tree`` layout on the way down to an entry, as a tree view nests them:

    * ``top``: the window ``{chain}``: the root's chain, or the roots when there are several (each
      the head of a branch);
    * ``branches``: ``{rootId: a branch point, depth: 1}``: the branch point's row, then its shown
      children, each the head of a branch;
    * ``chain``: ``{rootId, chain}``: a branch's continuation, the chain from its head's only child.

    ``rows`` are the window's; ``around_index`` is where the row on the path is (None: none is)."""

    kind: str
    window: TreeWindow
    rows: Sequence[Row]
    around_index: int | None


def _first_level_holding(levels: list[TreeLevel], nodes: set[int]) -> int | None:
    """The index of the first of ``levels`` (those down to the leaf) a row of which is one of
    ``nodes`` (by ``id``), the last level's if none; None when one of them is in no level. A row
    is in one level but a branch point's, also the first row of the branches level below it."""
    found: set[int] = set()
    first = len(levels) - 1
    for at in range(len(levels) - 1, -1, -1):  # (the nodes that changed are most often in the last)
        if len(found) == len(nodes):
            break
        level = levels[at]
        for index, node in enumerate(row_nodes(level.rows)):
            if id(node) in nodes:
                found.add(id(node))
                first = min(first, at - 1 if index == 0 and level.kind == "branches" else at)
    return max(first, 0) if len(found) == len(nodes) else None


class EncodedLevel(NamedTuple):
    """A level of a levels reply as it was encoded (see :func:`encode_tree_levels`): the level's
    rows (its key holds their ``id``: kept alive here), those of its page (a slice of them) and
    its JSON."""

    rows: Sequence[Row]
    shown: slice
    encoded: bytes


def _level_key(level: TreeLevel, size: int) -> tuple[Any, ...]:
    """What a level's encoding in pages of ``size`` rows depends on besides its rows' nodes."""
    window = level.window
    return (id(level.rows), level.kind, window.chain, window.depth, level.around_index, size)


def tree_levels(
    shape: _TreeShape, around_id: Any, max_levels: int | None = None
) -> tuple[list[TreeLevel], bool]:
    """(the levels from the top down to the row of ``around_id``, or of its deepest shown ancestor,
    whether they reach it). Each level is what a tree view gets for the window of the list under
    the path's row one level up: a branch point's branches, a head's chain (a head: a row of a
    ``branches`` level, or of a ``top`` level of several roots). At most ``max_levels``.
    Raises :class:`RootNotFoundError` when no entry has that id."""
    key = (id_key(around_id), max_levels)
    kept = shape.kept_levels
    if kept is not None and kept[0] == key:
        return list(kept[1]), kept[2]
    levels, complete = _levels_from(shape, around_id, max_levels, shape.levels_before(key))
    shape.kept_levels = (key, levels, complete)
    return list(levels), complete


def levels_hung_under(levels: list[TreeLevel]) -> list[Any]:
    """The id of the row each of ``levels`` hangs under in a tree view (the row on the path one
    level up: a branch point, a head), None for the top list."""
    hung: list[Any] = [None]
    for level in levels[:-1]:
        at = level.around_index
        hung.append(None if at is None else _node_id(level.rows[at].node))
    return hung


def _levels_from(
    shape: _TreeShape,
    around_id: Any,
    max_levels: int | None,
    before: tuple[list[TreeLevel], TreeLevel] | None,
) -> tuple[list[TreeLevel], bool]:
    """:func:`tree_levels`, from the window of the last of ``before`` (levels known to be the
    first ones, then the one whose window to walk again) if given."""
    levels: list[TreeLevel] = []
    kind, window = "top", TreeWindow(chain=True, around_id=around_id, paged=True)
    if before is not None:
        levels, kind, window = list(before[0]), before[1].kind, before[1].window
    wanted = index_key(around_id)
    while True:
        if max_levels is not None and len(levels) >= max_levels:
            return levels, False
        rows = shape.chain_rows(_tops(shape.roots, shape, window), window)
        index = _index_on_path(shape, rows, around_id)
        levels.append(TreeLevel(kind, window, rows, index))
        if index is None or (kind == "branches" and index == 0):  # nothing of the path below
            return levels, True
        node = rows[index].node
        entry_id = _envelope(node.entry)[0]
        if truthy(entry_id) and index_key(entry_id) == wanted:
            return levels, True
        head = kind == "branches" or (kind == "top" and len(rows) > 1 and rows[1].depth == 0)
        children = shape.shown_children(node)
        if len(children) > 1:
            kind = "branches"
            window = TreeWindow(root_id=_node_id(node), depth=1, around_id=around_id, paged=True)
        elif head and len(children) == 1:
            kind = "chain"
            window = TreeWindow(root_id=_node_id(children[0]), chain=True, around_id=around_id, paged=True)
        else:
            return levels, True


def encode_tree_levels(
    shape: _TreeShape, levels: list[TreeLevel], complete: bool, limit: int, max_nodes: int
) -> bytes:
    """``{"leafId", "levels": [...], "complete"}``: each level the result of its window (as pi/getTree
    answers it with ``aroundId``) with its ``kind``, ``rootId``, ``chain`` or ``depth`` (see
    :func:`encoded_tree_levels`), in one piece."""
    return bytes(levels_reply(shape.leaf_id, encoded_tree_levels(shape, levels, limit, max_nodes), complete))


def encoded_tree_levels(
    shape: _TreeShape, levels: list[TreeLevel], limit: int, max_nodes: int
) -> list[bytes]:
    """The JSON of each level of a levels reply: the result of its window (as pi/getTree answers it
    with ``aroundId``) with its ``kind``, ``rootId``, ``chain`` or ``depth``. A level holds ``limit``
    rows around the path's row (a ``branches`` level one more: the branch point's own row), fewer
    when the levels are many: the reply holds at most about ``max_nodes`` nodes.

    A level encoded for the shape's last levels reply is not encoded again (see
    :meth:`_TreeShape.encoded_level`): a tree view that follows a session pi writes to asks for
    the levels down to each new leaf, and most of them are those down to the leaf before. Such a
    level's JSON is the very object given before, which tells a client the level is as it has it
    (see ``tree_since``)."""
    branch_points = sum(1 for level in levels if level.kind == "branches")
    per_level = min(limit, max(1, (max_nodes - branch_points) // max(1, len(levels))))
    pages: list[tuple[TreeLevel, int, _FlatPage | EncodedLevel]] = []
    for level in levels:
        size = per_level + (1 if level.kind == "branches" else 0)
        known = shape.encoded_level(level, size)
        if known is not None:
            pages.append((level, size, known))
            continue
        window = TreeWindow(
            root_id=level.window.root_id,
            depth=level.window.depth,
            limit=size,
            paged=True,
            chain=level.window.chain,
            around_id=level.window.around_id,
        )
        pages.append((level, size, _FlatPage(shape, level.rows, window, None, level.around_index)))
    # the rows of every level together: how many previews the reply needs is known before any
    new_pages = [page for _level, _size, page in pages if isinstance(page, _FlatPage)]
    shape.read_ahead([row for page in new_pages for row in page.shown_rows()])
    encoded: list[tuple[TreeLevel, int, EncodedLevel]] = []
    for level, size, page in pages:
        if isinstance(page, EncodedLevel):
            encoded.append((level, size, page))
            continue
        out = bytearray()
        _encode_level_into(level, page, out)
        encoded.append((level, size, EncodedLevel(level.rows, slice(page.start, page.end), bytes(out))))
    shape.keep_encoded_levels(encoded)
    return [known.encoded for _level, _size, known in encoded]


def levels_reply(leaf_id: Any, levels: Sequence[bytes], complete: bool, more: bytes = b"") -> RawParts:
    """``{"leafId", "levels": [...], "complete"}`` of the levels' JSON (see
    :func:`encoded_tree_levels`), then ``more`` (members of their own, each after a comma): the
    levels as they are among its parts, not joined (they are kept for the next reply too)."""
    parts: list[bytes] = [b'{"leafId":', encode_rows(_wire_id(leaf_id)), b',"levels":[']
    for index, level in enumerate(levels):
        if index:
            parts.append(b",")
        parts.append(level)
    parts += (b'],"complete":', b"true" if complete else b"false", more, b"}")
    return RawParts(parts)


def _encode_level_into(level: TreeLevel, page: _FlatPage, out: bytearray) -> None:
    """Append one level of a levels reply (its window's head, then its page) to ``out``."""
    window = page.window
    head: dict[str, Any] = {"kind": level.kind}
    if window.root_id is not ABSENT:
        head["rootId"] = _wire_id(window.root_id)
    if window.chain:
        head["chain"] = True
    if window.depth is not None:
        head["depth"] = window.depth
    out += encode_rows(head)[:-1] + b","
    _encode_page_into(page, out)
    out += b"}"


def tree_tool_calls(roots: list[Any]) -> ToolCalls:
    """Every tool call of the tree, as a walk of it meets them (a later call with an id wins)."""
    return collect_tool_calls(_walk_entries(roots))


def _walk_entries(roots: list[Any]) -> Iterable[Any]:
    """Every node's entry, each node once (nodes can be shared with duplicate ids), in the order of
    a walk: from the tree's builder when it knows it (``TreeRoots.in_walk_order``)."""
    in_walk_order = roots.in_walk_order if isinstance(roots, TreeRoots) else None
    if in_walk_order is not None:
        return in_walk_order()
    return (node.entry for node in _walk_nodes(roots))


def _walk_nodes(roots: list[Any]) -> Iterable[Any]:
    """Every node, each once."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(node.children)
