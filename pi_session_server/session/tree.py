"""``getTree``: entries arranged by parentId, children sorted by timestamp (docs/API.md §6.8, D2).

Everything is iterative: a 200,000-entry chain is 200,000 levels deep.
"""

from __future__ import annotations

import functools
import math
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cmp_to_key
from itertools import compress
from operator import attrgetter, is_not, itemgetter
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from ..format.dates import ms
from ..format.entry import Entry
from ..format.jsvalue import ABSENT, index_key, strict_equal
from .chains import Positions
from .fields import id_of, parent_of, timestamp_of, value_of


class TreeNode(msgspec.Struct, eq=False, gc=False):
    """``{entry, children, label, labelTimestamp}`` of the reference.

    A Struct: built in C with one positional call, which matters when getTree makes one per entry.
    ``gc=False``: the collector would otherwise traverse every node of a big tree after each
    getTree. Nodes then must not form cycles the collector cannot see: the builders only link
    nodes reachable from a root without cycles, and cut the children of every other node.
    """

    entry: Any
    children: list[TreeNode] = msgspec.field(default_factory=list)
    label: Any = ABSENT
    label_timestamp: Any = ABSENT

    @property
    def time_ms(self) -> float:
        """The entry's time as the reference's sort compares it (NaN when it does not parse)."""
        return ms(timestamp_of(self.entry))

    def to_json(self) -> dict[str, Any]:
        """The nested JSON value (built without recursion)."""
        return tree_to_json([self])[0]

    def __repr__(self) -> str:
        return f"TreeNode({self.entry!r}, children={len(self.children)})"


_Node = TypeVar("_Node")


class TreeRoots(list[_Node], Generic[_Node]):
    """The roots of a tree, and the node of an entry by the index key of its id (``node_of``)
    when the builder knows it for every node: every id unique and every node reached from a root
    (else None). A tree view opens a subtree by the id of its top: found this way, not by a walk
    of the whole tree or an index of every node made for it.

    ``in_walk_order``: every entry of the tree in the order a walk meets them (each node, then its
    children, the last one first: a stack), when the builder can tell without the walk (else
    None): the tool calls of a session are read in that order (a later call with an id wins)."""

    __slots__ = ("in_walk_order", "node_of")

    def __init__(
        self,
        roots: Iterable[_Node],
        node_of: Callable[[Any], _Node | None] | None,
        in_walk_order: Callable[[], list[Any]] | None = None,
    ) -> None:
        super().__init__(roots)
        self.node_of = node_of
        self.in_walk_order = in_walk_order


def build_tree(
    entries: list[Any],
    labels: dict[Any, Any],
    label_timestamps: dict[Any, Any],
    *,
    plain_index: bool = False,
    by_id: dict[Any, Any] | None = None,
    chain_starts: list[int] | None = None,
) -> TreeRoots[TreeNode]:
    """The reference's getTree over ``entries`` (the non-header file entries in file order).

    ``plain_index``: every entry is an :class:`Entry` whose id is a non-empty string (what the
    manager knows of its own entries; see ``context.is_plain_index``); ``by_id``: the manager's
    index of exactly these entries; ``chain_starts``: where chains start in them (see
    :mod:`.chains`), when known.
    """
    if plain_index and by_id is not None and len(by_id) == len(entries):  # unique ids
        built = _build_by_chains(entries, by_id, chain_starts)
    elif plain_index and by_id is not None:
        built = None  # an index of these entries that is smaller than them: duplicate ids
    else:
        built = _build_parents_first(entries)
    # the one-pass builders reach every node from a root, each id once: their lookup finds nodes
    found: Callable[[Any], TreeNode | None] | None = None
    in_walk_order: Callable[[], list[Any]] | None = None
    if built is not None:
        roots, node_of, branch_points, in_walk_order = built
        for node in branch_points:
            sort_siblings(node.children)
        found = node_of
    else:
        roots, nodes = _build_any_order(entries)
        node_of = nodes.get
    for key, label in labels.items():
        labelled = node_of(key)
        if labelled is not None:
            labelled.label = label
    for key, timestamp in label_timestamps.items():
        labelled = node_of(key)
        if labelled is not None:
            labelled.label_timestamp = timestamp
    return TreeRoots(roots, found, in_walk_order)


def grown_tree(
    roots: TreeRoots[TreeNode], appended: list[Any], label_of: Callable[[Any], tuple[Any, Any]]
) -> TreeRoots[TreeNode] | None:
    """The tree of :func:`build_tree` once ``appended`` (entries after those ``roots`` was built
    from, in file order) are added, made by adding their nodes to ``roots``' (which then serve the
    new tree only) instead of building every node again; None, with ``roots`` left as it was,
    when that cannot give the same tree (the caller builds it anew): ``roots`` without a lookup of
    its nodes (ids that repeat), an appended entry that is not one of the manager's own with a
    string id (the caller makes sure no older entry has it), a parent that is not an earlier entry
    of the tree, siblings whose times do not all parse (the order of a full sort is then not one
    more insertion). ``label_of``: the label and label time of an id's key (a label may name an
    entry before the entry is written); an appended label entry sets them anew on the node it
    names (see :func:`label_target`)."""
    base = roots.node_of
    if base is None or not all(type(e) is Entry and type(e.id) is str for e in appended):
        return None
    grown = base if isinstance(base, _GrownLookup) else _GrownLookup(base)
    placed = _placed(appended, grown)
    if placed is None or not all(_sorts_by_one_more(p.children, new) for p, new in placed[2].values()):
        return None
    new, tops, under = placed
    for parent, children in under.values():
        parent.children += children
        if len(parent.children) > 1:  # siblings: sorted by time, as the builder does
            sort_siblings(parent.children)
    for key, node in new.items():
        node.label, node.label_timestamp = label_of(key)
    grown.added.update(new)
    for entry in appended:
        if entry.type == "label":
            key = index_key(label_target(entry))
            labelled = grown(key)
            if labelled is not None:
                labelled.label, labelled.label_timestamp = label_of(key)
    return TreeRoots([*roots, *tops], grown, None)


def shared_path_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many items, from the root, two paths from a root of one tree share (the very objects).
    Found by halves: an item at the same place in both has the same items above it, so paths of
    tens of thousands of entries are not walked down."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high) // 2
        if a[middle] is b[middle]:
            low = middle + 1
        else:
            high = middle
    return low


def label_target(entry: Entry) -> Any:
    """The ``targetId`` of a label entry (the id whose label it sets)."""
    aux = entry.aux
    return aux[0] if aux is not None else ABSENT


_Placed = tuple[dict[Any, TreeNode], list[TreeNode], dict[int, tuple[TreeNode, list[TreeNode]]]]


def _placed(appended: list[Entry], node_of: Callable[[Any], TreeNode | None]) -> _Placed | None:
    """(a node for each of ``appended`` by id, those that are roots, the new children of each
    parent by its identity), nothing linked yet; None when one does not hang under an earlier
    entry of the tree or of ``appended``, or repeats an id among them."""
    later = {entry.id for entry in appended}  # not yet made while a parent is looked up
    new: dict[Any, TreeNode] = {}
    tops: list[TreeNode] = []
    under: dict[int, tuple[TreeNode, list[TreeNode]]] = {}
    for entry in appended:
        if entry.id in new:  # (an id of an older entry: the caller tells, by the manager's count of ids)
            return None
        parent_id = entry.parent_id
        node = TreeNode(entry, [])
        if parent_id is None:
            tops.append(node)
        elif type(parent_id) is not str or parent_id in later:
            return None  # itself, a parent below, or an id of another type: the general builder decides
        else:
            parent = new[parent_id] if parent_id in new else node_of(parent_id)
            if parent is None:
                return None  # an orphan
            under.setdefault(id(parent), (parent, []))[1].append(node)
        later.discard(entry.id)
        new[entry.id] = node
    return new, tops, under


def _sorts_by_one_more(children: list[TreeNode], new: list[TreeNode]) -> bool:
    """Whether sorting ``children`` (sorted) with ``new`` after them gives the order a sort of them
    all in file order gives: when every time parses (a stable sort by a total order)."""
    if not children and len(new) < 2:
        return True
    return not any(math.isnan(c.time_ms) for c in (*children, *new))


class _GrownLookup:
    """The node of an index key in a tree that :func:`grown_tree` added nodes to: the builder's
    lookup, then the nodes added since (one dict for every growth, not a lookup per append)."""

    __slots__ = ("added", "built")

    def __init__(self, built: Callable[[Any], TreeNode | None]) -> None:
        self.built = built
        self.added: dict[Any, TreeNode] = {}

    def __call__(self, key: Any) -> TreeNode | None:
        found = self.added.get(key)
        return found if found is not None else self.built(key)


_Built = tuple[
    list[TreeNode], Callable[[Any], "TreeNode | None"], list[TreeNode], "Callable[[], list[Any]] | None"
]
"""(roots, node of an index key, nodes with several children, the entries in walk order (see
TreeRoots) if known): what a one-pass builder returns."""


def _build_parents_first(entries: list[Any]) -> _Built | None:
    """One pass for the files pi writes: unique ids, every parent before its children. Gives up
    (None) on anything else: a duplicate id, a parent further down or missing. Every node is then
    reachable from a root and no cycle is possible, so only nodes with several children need
    sorting."""
    nodes: dict[Any, TreeNode] = {}
    roots: list[TreeNode] = []
    branch_points: list[TreeNode] = []
    lookup = nodes.get
    previous_id: Any = ABSENT
    previous: Any = None
    for e in entries:  # the id/key lines repeat _build_any_order's: no helper call in a loop run per entry
        if type(e) is Entry:
            entry_id, parent_id = e.id, e.parent_id
        else:
            entry_id, parent_id = id_of(e), parent_of(e)
        node = TreeNode(e, [])
        if parent_id is None:
            roots.append(node)
        else:
            if type(parent_id) is str and parent_id == previous_id:
                parent = previous  # most entries answer the one before them: no lookup
            else:
                # looked up before this node is in ``nodes``, so a self-parent gives up too
                parent = lookup(parent_id if type(parent_id) is str else index_key(parent_id))
                if parent is None:
                    return None
            siblings = parent.children
            siblings.append(node)
            if len(siblings) == 2:
                branch_points.append(parent)
        nodes[entry_id if type(entry_id) is str else index_key(entry_id)] = node
        previous_id, previous = entry_id, node
    if len(nodes) != len(entries):  # a duplicate id: its children may hang under the wrong node
        return None
    return roots, nodes.get, branch_points, None


def _build_by_chains(
    entries: list[Entry], by_id: dict[Any, Entry], chain_starts: list[int] | None
) -> _Built | None:
    """:func:`_build_parents_first` for the manager's own entries (string ids, unique), mostly in C.

    Inside a chain every entry is the child of the one before it, so the nodes are made with one
    ``map`` and each chain is linked with another (getTree of a long chat was tens of thousands of
    Python steps); only the first entry of a chain looks its parent up, by id in the manager's
    index and then by position. Chains come from the scanner and the manager; without them they
    are found here (an entry whose parentId is not the very id object of the entry before starts
    one: too many starts only cost time). None when a parent is not an earlier entry (the
    general builder decides then).

    Children end up in file order before sorting, as the reference has them: the child in the
    same chain comes right after its parent, any other child later.
    """
    count = len(entries)
    if count == 0:
        return [], {}.get, [], list
    chain_starts = _usable_chain_starts(entries, chain_starts)
    if chain_starts is None:
        return None
    nodes = list(map(TreeNode, entries))
    link = deque[Any](maxlen=0).extend
    ends = [*chain_starts[1:], count]
    for first, end in zip(chain_starts, ends, strict=True):
        if end - first > 1:
            # extended by a 1-tuple, a list holds room for one or two children; an append would
            # make room for four in every node of a chain (most nodes of a session)
            link(map(list.extend, map(_CHILDREN, nodes[first : end - 1]), zip(nodes[first + 1 : end])))
    positions = Positions(entries)
    roots: list[TreeNode] = []
    branch_points: list[TreeNode] = []
    parents: list[int] = []  # where a chain start hangs, for each one that is not a root
    for first in chain_starts:
        parent_id = entries[first].parent_id
        if parent_id is None:
            roots.append(nodes[first])
            continue
        parent_entry = by_id.get(parent_id) if type(parent_id) is str else None
        at = -1 if parent_entry is None else positions.of(parent_entry, first)
        if at < 0:
            return None
        siblings = nodes[at].children
        siblings.append(nodes[first])
        parents.append(at)
        if len(siblings) == 2:
            branch_points.append(nodes[at])

    def node_of(key: Any) -> TreeNode | None:
        entry = by_id.get(key)
        at = -1 if entry is None else positions.of(entry, count)
        return nodes[at] if at >= 0 else None

    stops = [end - 1 for end in ends] + parents
    in_walk_order = functools.partial(_in_walk_order, entries, nodes, roots, chain_starts, stops)
    return roots, node_of, branch_points, in_walk_order


def _in_walk_order(
    entries: list[Entry],
    nodes: list[TreeNode],
    roots: list[TreeNode],
    chain_starts: list[int],
    stops: list[int],
) -> list[Entry]:
    """The entries of a tree :func:`_build_by_chains` built (``nodes``, one per entry) in the order
    of a walk (see TreeRoots). Every entry but a ``stop`` (a chain's last entry, or one another
    chain hangs under) has one child, the next entry: the walk goes down such a run a slice at a
    time, with a step per chain, not per entry."""
    start_of = {id(nodes[first]): first for first in chain_starts}
    ordered_stops = sorted(set(stops))
    order: list[Entry] = []
    stack = [start_of[id(root)] for root in roots]
    while stack:
        at = stack.pop()
        stop = ordered_stops[bisect_left(ordered_stops, at)]
        order += entries[at : stop + 1]
        stack.extend(start_of.get(id(child), stop + 1) for child in nodes[stop].children)
    return order


def _usable_chain_starts(entries: list[Entry], chain_starts: list[int] | None) -> list[int] | None:
    """Where the chains of ``entries`` start: found here when not given; None when those given
    cannot be (the first entry does not start one)."""
    count = len(entries)
    if chain_starts is None:
        return [
            0,
            *compress(range(1, count), map(is_not, map(_PARENT, entries[1:]), map(_ID, entries))),
        ]
    if not chain_starts or chain_starts[0] != 0:
        return None
    if chain_starts[-1] >= count:  # some left by appends taken back after a failed write
        return [first for first in chain_starts if first < count]
    return chain_starts


_ID = attrgetter("id")
_PARENT = attrgetter("parent_id")
_CHILDREN = attrgetter("children")


def _build_any_order(entries: list[Any]) -> tuple[list[TreeNode], dict[Any, TreeNode]]:
    """The reference's two passes: every node first (the LAST entry of an id owns it), then links."""
    nodes: dict[Any, TreeNode] = {}
    placed: list[tuple[Any, Any, Any]] = []  # (index key of the id, entry id, parentId), file order
    duplicated: set[Any] = set()  # keys of ids more than one entry has
    for e in entries:
        if type(e) is Entry:
            entry_id, parent_id = e.id, e.parent_id
        else:
            entry_id, parent_id = id_of(e), parent_of(e)
        key = entry_id if type(entry_id) is str else index_key(entry_id)
        if key in nodes:
            duplicated.add(key)
        nodes[key] = TreeNode(e, [])
        placed.append((key, entry_id, parent_id))
    roots: list[TreeNode] = []
    lookup = nodes.get
    parents_of_shared: dict[Any, list[TreeNode | None]] = {key: [] for key in duplicated}
    for key, entry_id, parent_id in placed:
        node = nodes[key]  # the node of the LAST entry with this id (duplicates share it)
        parent = _parent_node(entry_id, parent_id, lookup)
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)
        if key in parents_of_shared:
            parents_of_shared[key].append(parent)
    for node in nodes.values():  # every node once; what no root reaches is cut below anyway
        if len(node.children) > 1:
            sort_siblings(node.children)
    # Without duplicate ids every node has at most one parent, so no cycle is reachable from a
    # root and the D2 walk would change nothing; with them it only can if one goes through them.
    if duplicated and _shared_nodes_in_a_cycle(nodes, parents_of_shared):
        _remove_cycle_edges(roots)
    _cut_unreachable(roots, nodes)
    return roots, nodes


def _parent_node(entry_id: Any, parent_id: Any, lookup: Callable[[Any], TreeNode | None]) -> TreeNode | None:
    """The node an entry hangs under in the reference's getTree (None: it is a root)."""
    if parent_id is None or (parent_id == entry_id and strict_equal(parent_id, entry_id)):
        return None
    return lookup(parent_id if type(parent_id) is str else index_key(parent_id))


_WALKING = object()
_UNSEEN = object()


def _shared_nodes_in_a_cycle(
    nodes: dict[Any, TreeNode], parents_of_shared: dict[Any, list[TreeNode | None]]
) -> bool:
    """Can the D2 walk meet a cycle? Only through a node several entries share (a duplicate id):
    every other node has one parent, so a cycle of those alone has no way in from a root. Each
    shared node's parents are followed up to the first shared node above them (the nodes passed
    on the way remember what they lead to, so each is climbed once), and the small graph of shared
    nodes is searched for a cycle. A 2 GB session with a few duplicated ids would otherwise be
    walked node by node for nothing (seconds)."""
    return _has_cycle(_shared_below(nodes, parents_of_shared))


def _shared_below(
    nodes: dict[Any, TreeNode], parents_of_shared: dict[Any, list[TreeNode | None]]
) -> dict[int, list[int]]:
    """The graph of the shared nodes: each one's id -> the ids of the shared nodes right under it."""
    shared = {id(nodes[key]) for key in parents_of_shared}
    lookup = nodes.get
    above: dict[int, Any] = {}  # id(node) -> the first shared node above it, or None

    def first_shared_above(start: TreeNode | None) -> TreeNode | None:
        climbed: list[int] = []
        node = start
        found: TreeNode | None = None
        while node is not None:
            key = id(node)
            if key in shared:
                found = node
                break
            known = above.get(key, _UNSEEN)
            if known is not _UNSEEN:
                found = None if known is _WALKING else known  # _WALKING: a cycle no root reaches
                break
            above[key] = _WALKING
            climbed.append(key)
            entry = node.entry
            if type(entry) is Entry:
                node = _parent_node(entry.id, entry.parent_id, lookup)
            else:
                node = _parent_node(id_of(entry), parent_of(entry), lookup)
        above.update(dict.fromkeys(climbed, found))
        return found

    below: dict[int, list[int]] = {}  # shared node -> the shared nodes right under it
    for key, parents in parents_of_shared.items():
        for parent in parents:
            top = first_shared_above(parent)
            if top is not None:
                below.setdefault(id(top), []).append(id(nodes[key]))
    return below


def _has_cycle(below: dict[int, list[int]]) -> bool:
    """Whether the graph ``below`` (node -> the nodes right under it) has a cycle."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in below:
        if start in state:
            continue
        state[start] = 1
        walk: list[tuple[int, Iterator[int]]] = [(start, iter(below.get(start, ())))]
        while walk:
            node_id, rest = walk[-1]
            step = next(rest, None)
            if step is None:
                state[node_id] = 2
                walk.pop()
            elif state.get(step) == 1:
                return True
            elif step not in state:
                state[step] = 1
                walk.append((step, iter(below.get(step, ()))))
    return False


def _cut_unreachable(roots: list[TreeNode], nodes: dict[Any, TreeNode]) -> None:
    """Empty the children of every node no root reaches. Nobody can see those nodes, and a parent
    cycle among them would keep them alive for good (TreeNodes are invisible to the collector)."""
    reached: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) not in reached:
            reached.add(id(node))
            stack.extend(node.children)
    if len(reached) < len(nodes):
        for node in nodes.values():
            if id(node) not in reached:
                node.children.clear()


def _by_time(a: tuple[float, Any], b: tuple[float, Any]) -> float:
    return a[0] - b[0]


_BY_TIME_KEY = cmp_to_key(_by_time)  # type: ignore[arg-type]  # NaN results are the point


class _Timed(Protocol):
    @property
    def time_ms(self) -> float: ...


_T = TypeVar("_T", bound=_Timed)  # a tree's node: TreeNode, or row_tree's


def sort_siblings(children: list[_T]) -> None:
    """Sort in place by time, as V8's stable sort does with the reference's NaN-yielding comparator.

    When every timestamp parses, any stable sort by time agrees; with unparsable ones the comparator
    returns NaN, which V8 (TimSort) treats as "not less": CPython <= 3.12's list.sort with the same
    comparator gives the identical order. Each time is computed once per sort (nodes do not keep
    it: a field more in every node of a big tree for the few that have siblings)."""
    timed = [(c.time_ms, c) for c in children]
    if any(math.isnan(t) for t, _ in timed):
        timed.sort(key=_BY_TIME_KEY)
    else:
        timed.sort(key=_FIRST)
    children[:] = [c for _, c in timed]


_FIRST = itemgetter(0)


def _remove_cycle_edges(roots: list[TreeNode]) -> None:
    """D2: depth-first from each root; drop child edges that lead back to an open node."""
    open_, done = 1, 2
    state: dict[int, int] = {}
    for root in roots:
        if id(root) in state:
            continue
        state[id(root)] = open_
        walk: list[list[Any]] = [[root, 0]]
        while walk:
            top = walk[-1]
            node, i = top[0], top[1]
            if i >= len(node.children):
                state[id(node)] = done
                walk.pop()
                continue
            child = node.children[i]
            child_state = state.get(id(child))
            if child_state == open_:
                del node.children[i]
                continue
            top[1] = i + 1
            if child_state == done:
                continue
            state[id(child)] = open_
            walk.append([child, 0])


def tree_to_json(roots: list[TreeNode]) -> list[dict[str, Any]]:
    """Nested JSON of the tree (``{"entry", "children", "label"?, "labelTimestamp"?}``), iteratively."""
    out: list[dict[str, Any]] = []
    stack: list[tuple[TreeNode, list[dict[str, Any]]]] = [(r, out) for r in reversed(roots)]
    while stack:
        node, into = stack.pop()
        children: list[dict[str, Any]] = []
        obj: dict[str, Any] = {"entry": value_of(node.entry), "children": children}
        if node.label is not ABSENT:
            obj["label"] = node.label
        if node.label_timestamp is not ABSENT:
            obj["labelTimestamp"] = node.label_timestamp
        into.append(obj)
        for child in reversed(node.children):
            stack.append((child, children))
    return out


def shares_nodes(roots: list[TreeNode]) -> bool:
    """Whether a node of the tree hangs in more than one place (duplicate ids: see
    :func:`expanded_once`)."""
    seen: set[int] = set()
    pending = [roots]
    while pending:
        for node in pending.pop():
            if id(node) in seen:
                return True
            seen.add(id(node))
            if node.children:
                pending.append(node.children)
    return False


def expanded_once(roots: list[TreeNode]) -> list[TreeNode]:
    """``roots`` with each node's subtree in one place only, for what walks a tree to show it.

    pi's getTree links the node of an id once per entry with that id: with duplicate ids a node
    hangs in several places, each with the whole subtree below it, and a walk that goes down every
    place goes down 2^k times through k nested duplicates (a block of lines copied twice: pi's own
    tree selector never ends; docs/DEVIATIONS.md D23). The first place found, level by level,
    keeps the subtree; the others get a copy of the node without children. The lists are changed
    in place (a tree from get_tree() is its caller's); nothing is copied when no node is shared."""
    seen: set[int] = set()
    pending = [roots]
    while pending:
        siblings = pending.pop()
        for at, node in enumerate(siblings):
            if id(node) in seen:
                siblings[at] = TreeNode(node.entry, [], node.label, node.label_timestamp)
                continue
            seen.add(id(node))
            if node.children:
                pending.append(node.children)
    return roots


def preorder(roots: list[TreeNode]) -> list[tuple[int, TreeNode]]:
    """(depth, node) in preorder: roots in order, each node then its children in order."""
    result: list[tuple[int, TreeNode]] = []
    stack = [(r, 0) for r in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        result.append((depth, node))
        for child in reversed(node.children):
            stack.append((child, depth + 1))
    return result
