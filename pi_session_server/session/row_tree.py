"""``getTree`` over the index's rows, each node made when a walk reaches it.

A reopen from the file's index holds rows (:mod:`.index_rows`), not entries. ``getTree`` makes every
entry and every node, while a tree view's first window shows a few hundred rows from the top: a
:class:`RowTree` gives the same tree, a node (and its entry) made only when asked for. The shape is
:func:`.tree.build_tree`'s for the manager's own entries (every id a distinct string; the entry
after an entry in its chain is its child, in file order before any other child; a chain start hangs
under the row its parent is, which comes before it; siblings sorted by time): when a row does not
fit that (a parent missing or further down), there is no row tree and the caller builds the tree.

The conversation view reads a path of it the same way (:meth:`RowTree.path_to`,
:meth:`RowTree.path_down`, :meth:`RowTree.nodes_on`): the rows of a path are runs, and a page of
it makes the nodes it shows. It does so for a session read from its file too, whose entries are
read as rows by their chains (:mod:`.entry_rows`): a page of a path makes the nodes it shows, not
the library's tree of every entry.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from typing import Any

from ..format.dates import ms
from ..format.entry import Entry
from ..format.jsvalue import ABSENT
from .fields import timestamp_of
from .index_rows import ChainRows, MadeByRow, RowPath
from .tree import TreeRoots, sort_siblings

# A node made on its own costs several times one of getTree's, made with all the others: a row tree
# makes at most this share of the rows' nodes (and a few hundred in any case) before it gives up.
NODES_SHARE = 8
MIN_NODES = 256


class RowTreeOutgrown(Exception):
    """A walk of a :class:`RowTree` reached more nodes than the tree makes (see NODES_SHARE): a
    walk that goes that far costs less over the tree built at once."""


class RowNode:
    """A node of :class:`RowTree`: ``TreeNode``'s members, found when read."""

    __slots__ = ("_children", "_tree", "row")

    def __init__(self, tree: RowTree, row: int) -> None:
        self._tree = tree
        self.row = row
        self._children: list[RowNode] | None = None

    @property
    def entry(self) -> Entry:
        return self._tree.rows.entry(self.row)

    @property
    def children(self) -> list[RowNode]:
        if self._children is None:
            self._children = self._tree.children_of(self.row)
        return self._children

    @property
    def label(self) -> Any:
        return self._tree.labels.get(self._tree.rows.id_at(self.row), ABSENT)

    @property
    def label_timestamp(self) -> Any:
        return self._tree.label_timestamps.get(self._tree.rows.id_at(self.row), ABSENT)

    @property
    def time_ms(self) -> float:
        return ms(timestamp_of(self.entry))


class RowTree:
    """The tree of an index's rows: ``roots``, the entries by id (:attr:`by_id`) and the leaf's
    path (:attr:`leaf_path`), each node made once, when first reached. Making more
    nodes than a share of the rows raises :class:`RowTreeOutgrown`."""

    __slots__ = (
        "_branch_rows",
        "_max_nodes",
        "_nodes",
        "_starts",
        "_starts_under",
        "by_id",
        "label_timestamps",
        "labels",
        "leaf_path",
        "roots",
        "rows",
    )

    def __init__(
        self,
        rows: ChainRows,
        roots: list[int],
        starts_under: dict[int, list[int]],
        leaf_path: RowPath,
        labels: dict[Any, Any],
        label_timestamps: dict[Any, Any],
    ) -> None:
        self.rows = rows
        self._starts = frozenset(rows.columns.chain_starts)
        self._starts_under = starts_under  # row -> the chain starts whose parent it is
        self._branch_rows: list[int] | None = None  # the keys of _starts_under, sorted
        self._nodes: dict[int, RowNode] = {}
        self._max_nodes = max(MIN_NODES, rows.count // NODES_SHARE)
        self.labels = labels
        self.label_timestamps = label_timestamps
        self.leaf_path = leaf_path
        self.by_id = RowEntries(rows)
        self.roots = TreeRoots([self.node(row) for row in roots], self.node_of)

    def node(self, row: int) -> RowNode:
        """The node of ``row``, the same object each time."""
        node = self._nodes.get(row)
        if node is None:
            if len(self._nodes) >= self._max_nodes:
                raise RowTreeOutgrown
            node = self._nodes[row] = RowNode(self, row)
        return node

    def node_of(self, key: Any) -> RowNode | None:
        """The node of the entry whose id has the index key ``key`` (every id is a distinct string,
        its own key), or None."""
        row = self.rows.row_of_id(key) if type(key) is str else -1
        return self.node(row) if row >= 0 else None

    def children_of(self, row: int) -> list[RowNode]:
        """The children of ``row`` in ``build_tree``'s order: the next row when it goes on the
        chain, then the chain starts under ``row`` in file order, sorted by time when several."""
        following = row + 1
        children = [] if following >= self.rows.count or following in self._starts else [following]
        children.extend(self._starts_under.get(row, ()))
        nodes = [self.node(child) for child in children]
        if len(nodes) > 1:
            sort_siblings(nodes)
        return nodes

    def path_to(self, entry_id: Any) -> RowPath | None:
        """``getBranch(entry_id)`` as rows, or None when no row has that id."""
        row = self.rows.row_of_id(entry_id)
        return self.rows.path_to_root(row) if row >= 0 else None

    def path_down(self, path: RowPath) -> RowPath:
        """``path`` (not empty) continued below its last row down to a leaf: at a branch point
        through the child on :attr:`leaf_path`, else through the last child in ``build_tree``'s
        order (the newest). Rows are followed a stretch at a time: within a chain, every row up to
        the next one with a chain start under it has the next row as its only child."""
        rows = self.rows
        starts = rows.columns.chain_starts
        if self._branch_rows is None:
            self._branch_rows = sorted(self._starts_under)
        branch_rows = self._branch_rows
        runs = path.runs
        at = path.row_of(-1)
        while True:
            if at in self._starts_under:
                children = self.children_of(at)
                row = next((c.row for c in children if self.leaf_path.has_row(c.row)), children[-1].row)
                stop = row
            else:
                row = at + 1
                if row >= rows.count or row in self._starts:
                    break
                chain_end = starts[bisect_right(starts, at)] if starts and starts[-1] > at else rows.count
                branch = bisect_left(branch_rows, row)
                stop = min(chain_end - 1, branch_rows[branch] if branch < len(branch_rows) else rows.count)
            if runs[-1][1] == row:  # rows go forward: a child is always below its parent
                runs[-1] = (runs[-1][0], stop + 1)
            else:
                runs.append((row, stop + 1))
            at = stop
        return RowPath(rows, runs)

    def nodes_on(self, path: RowPath) -> NodesOnPath:
        """The nodes of ``path``'s rows, each made when looked at."""
        return NodesOnPath(self, path)


class NodesOnPath(MadeByRow[RowNode]):
    """The nodes of a path of a :class:`RowTree`, made as they are looked at (a viewer shows a page
    of a path that can be most of the session)."""

    __slots__ = ("path", "tree")

    def __init__(self, tree: RowTree, path: RowPath) -> None:
        self.tree = tree
        self.path = path

    def __len__(self) -> int:
        return len(self.path)

    def row_of(self, index: int) -> int:
        return self.path.row_of(index)

    def made(self, row: int) -> RowNode:
        return self.tree.node(row)


def row_tree(
    rows: ChainRows, labels: dict[Any, Any], label_timestamps: dict[Any, Any], leaf: int
) -> RowTree | None:
    """The tree of ``rows`` (every id a distinct string: see scan_index._lazy_allowed) whose leaf is
    row ``leaf``, or None when a chain start's parent is not a row before it (``build_tree`` builds
    that tree another way)."""
    columns = rows.columns
    roots: list[int] = []
    starts_under: dict[int, list[int]] = {}
    for start in columns.chain_starts:
        parent = columns.parents.get(start, ABSENT)
        if start not in columns.parents:
            if not start:
                return None  # the first row without parentId
            above = start - 1
        elif parent is None:
            roots.append(start)
            continue
        else:
            above = columns.parent_rows.get(start, -1)
            if type(parent) is not str or not 0 <= above < start:
                return None
        starts_under.setdefault(above, []).append(start)
    path = rows.path_to_root(leaf) if 0 <= leaf < rows.count else None
    if path is None:
        return None
    return RowTree(rows, roots, starts_under, path, labels, label_timestamps)


class RowEntries(Mapping[Any, Entry]):
    """The entries of rows by id, each looked up in the ids column: for the few entries a window
    looks up (a tool result's call above it), not for a walk of every entry."""

    __slots__ = ("rows",)

    def __init__(self, rows: ChainRows) -> None:
        self.rows = rows

    def __getitem__(self, key: Any) -> Entry:
        entry = self.rows.entry_of_id(key)
        if entry is None:
            raise KeyError(key)
        return entry

    def __iter__(self) -> Iterator[Any]:
        return map(self.rows.id_at, range(self.rows.count))

    def __len__(self) -> int:
        return self.rows.count
