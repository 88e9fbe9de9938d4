"""Which part of the tree a request wants (:class:`TreeWindow`), the nodes it starts from, and the
refusals of a window (:class:`TreeTooLargeError`, :class:`RootNotFoundError`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pi_session_server.format.jsvalue import ABSENT, index_key, js_string_of
from pi_session_server.session.fields import id_of

from .tree_rows import Row

if TYPE_CHECKING:
    from .tree_shape import TreeShape


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
    for node in walk_nodes(roots):
        entry_id = id_of(node.entry)
        if entry_id is not ABSENT and index_key(entry_id) == wanted:
            return node
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


def walk_nodes(roots: list[Any]) -> Iterable[Any]:
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


def window_tops(roots: list[Any], shape: TreeShape, window: TreeWindow) -> list[Any]:
    if window.root_id is ABSENT:
        return list(roots) if shape.ordered is None else shape.ordered(list(roots))
    top = shape.find(window.root_id)
    if top is None:
        raise RootNotFoundError(window.root_id)
    return [top]


def index_on_path(shape: TreeShape, rows: Sequence[Row], around_id: Any) -> int | None:
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
