"""The leaf's path in a tree view: which entries are on it (each row's ``onLeafPath``), and pi's
``/tree`` order that lists, at every level, the child holding the leaf first.

A path can be as long as the session (a 200,000-entry linear session is a 200,000-level tree): what
is on it is found without a walk of the tree or a key per entry where the entries allow.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Callable, Container, Mapping, Sequence
from itertools import islice
from operator import attrgetter
from typing import Any, Final

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key, strict_equal, truthy
from pi_session_server.session.fields import id_of, parent_of
from pi_session_server.session.index_rows import RowPath


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


def order_active_first(roots: list[Any], leaf_id: Any) -> Callable[[list[Any]], list[Any]]:
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


def order_along(on_path: Container[Any]) -> Callable[[list[Any]], list[Any]]:
    """:func:`order_active_first` when the entries from the leaf's root down to the leaf are
    known (``on_path``: them, see :func:`entries_on`) and every id is unique: a node holds the
    leaf exactly when its entry is one of them, so no walk of the tree is needed."""

    def ordered(nodes: list[Any]) -> list[Any]:
        if len(nodes) < 2:
            return nodes
        return [n for n in nodes if n.entry in on_path] + [n for n in nodes if n.entry not in on_path]

    return ordered


def entries_on(path: Sequence[Any]) -> Container[Any]:
    """The entries of a leaf's path, for ``in`` by identity: a path of the index's rows finds an
    entry by its row (its entries are not all made), a list by its entries' lines
    (:class:`EntriesOnPath`)."""
    return path if isinstance(path, RowPath) else EntriesOnPath(path)


_LINE: Final = attrgetter("line")


class EntriesOnPath(Container[Any]):
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


def keys_on(path: Sequence[Any]) -> set[Any]:
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


def whole_leaf_path(path: Sequence[Any], leaf_id: Any) -> bool:
    """Whether ``path`` runs from a root (parentId null) down to the entry ``leaf_id``."""
    if not path:
        return False
    last_id = id_of(path[-1])
    return parent_of(path[0]) is None and last_id is not ABSENT and strict_equal(last_id, leaf_id)
