"""pi/getPath: the conversation a session viewer shows, in pages.

A viewer shows the path from the root to an entry (the leaf, or one picked in the tree) as a
conversation, with a branch switcher where the path passes a branch point. ``getBranch`` gives that
path in one reply with every body, which for a long session is the whole file; this answers it a
page at a time (``offset``/``limit``, and never much more than :data:`PAGE_BYTES` of entries), each
entry with what the switcher needs: its children and, where its parent has several, its siblings
(ids in ``getTree`` order: oldest first).

``descend`` continues the path below the entry down to a leaf: through the child on the way to the
session's leaf when there is one, else through the newest child. Switching to another branch is
asking for the path through one of the siblings with ``descend``.

The path is kept (``tree_pages.FlatTreePages``) while the viewer pages through it and the session
stays the same. It is a path of the tree of rows (``session.row_tree``: an index's rows, or the
entries of a session read from its file, told by their chains), whose nodes are made as the pages
reach them, so that opening a viewer on a huge session does not build its whole tree for one page
(nor hold it while the viewer is open); a session whose rows do not give the tree (ids that repeat,
a parent below its child) has a path of the library's tree nodes, made once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key, truthy
from pi_session_server.session.row_tree import RowTreeOutgrown

from .library_tree import library_tree
from .params import id_key
from .tree_leaf_path import active_path_ids
from .tree_pages import FlatTreePages
from .tree_window import RootNotFoundError, nodes_along
from .wire import encode_result

MAX_PATH_ITEMS = 1_000
DEFAULT_PATH_ITEMS = 100
PAGE_BYTES = 4 * 1024 * 1024  # a page ends once its entries' lines hold this many bytes (one at least)


class PathNodes:
    """The tree nodes of one path, root first, and the roots (the siblings of the first)."""

    __slots__ = ("nodes", "roots")

    def __init__(self, nodes: Sequence[Any], roots: list[Any]) -> None:
        self.nodes = nodes
        self.roots = roots


def path_nodes(manager: Any, entry_id: Any, descend: bool) -> PathNodes:
    """The path to ``entry_id`` (ABSENT: the leaf), and below it with ``descend``: over the tree
    of rows (the index's while the session is a reopen whose entries are not made, else its
    entries' chains: ``manager.chain_tree``), its nodes made as the pages reach them (see
    :func:`get_path`), else, when the rows do not give the tree, over the library's tree.

    Raises :class:`RootNotFoundError` when ``entry_id`` names no entry, RowTreeOutgrown when the
    walk down reaches more of the rows' nodes than a tree of them is worth."""
    if entry_id is not ABSENT and manager.get_entry(entry_id) is ABSENT:
        raise RootNotFoundError(entry_id, "entryId")
    path = _row_path_nodes(manager, entry_id, descend)
    return path if path is not None else _library_path_nodes(manager, entry_id, descend)


def _row_path_nodes(manager: Any, entry_id: Any, descend: bool) -> PathNodes | None:
    tree = manager.chain_tree()
    if tree is None:
        return None
    path = tree.leaf_path if entry_id is ABSENT else tree.path_to(entry_id)
    if path is None or not len(path):
        return None
    return PathNodes(tree.nodes_on(tree.path_down(path) if descend else path), tree.roots)


def _library_path_nodes(manager: Any, entry_id: Any, descend: bool) -> PathNodes:
    end = manager.get_leaf_id() if entry_id is ABSENT else entry_id
    roots = library_tree(manager)
    nodes = list(nodes_along(roots, manager.get_branch(end) if truthy(end) else ()))
    if descend:
        # the leaf's path decides only between siblings: found at the first branch point, if any
        on_leaf_path: set[Any] | None = None
        level = nodes[-1].children if nodes else roots
        while level:
            if len(level) == 1:
                node = level[0]
            else:
                if on_leaf_path is None:
                    on_leaf_path = active_path_ids(manager.by_id, manager.get_leaf_id())
                node = next((n for n in level if _key(n.entry) in on_leaf_path), level[-1])
            nodes.append(node)
            level = node.children
    return PathNodes(nodes, roots)


def _key(entry: Any) -> Any:
    entry_id = entry.id if type(entry) is Entry else ABSENT
    return index_key(entry_id) if truthy(entry_id) else None


def _wire_id(entry: Any) -> Any:
    entry_id = entry.id if type(entry) is Entry else entry.get("id", ABSENT)
    return None if entry_id is ABSENT else entry_id


def path_page(
    path: PathNodes, leaf_id: Any, offset: int, limit: int, page_bytes: int = PAGE_BYTES
) -> msgspec.Raw:
    """One page of ``path`` as pi/getPath answers it (entries as the file holds them), encoded an
    item at a time so that the page ends once it holds ``page_bytes`` (one item at least)."""
    nodes = path.nodes
    total = len(nodes)
    start = min(offset, total)
    items: list[bytes] = []
    size = 0
    index = start
    while index < total and len(items) < limit and (not items or size < page_bytes):
        node = nodes[index]
        entry = node.entry
        item: dict[str, Any] = {"entry": entry, "childIds": [_wire_id(c.entry) for c in node.children]}
        siblings = nodes[index - 1].children if index > 0 else path.roots
        if len(siblings) > 1:
            item["siblingIds"] = [_wire_id(s.entry) for s in siblings]
        if node.label is not ABSENT:
            item["label"] = node.label
        if node.label_timestamp is not ABSENT:
            item["labelTimestamp"] = node.label_timestamp
        line = entry.line if type(entry) is Entry else -1
        if isinstance(line, int) and line >= 0:
            item["line"] = line
        encoded = encode_result(item)
        items.append(encoded)
        size += len(encoded)
        index += 1
    fields: dict[str, Any] = {
        "leafId": None if leaf_id is ABSENT else leaf_id,
        "endId": _wire_id(nodes[-1].entry) if nodes else None,
        "total": total,
        "offset": start,
        "hasMore": index < total,
    }
    if index < total:
        fields["nextOffset"] = index
    head = encode_result(fields)
    return msgspec.Raw(head[:-1] + b',"items":[' + b",".join(items) + b"]}")


_kept_paths: FlatTreePages[PathNodes] = FlatTreePages()


def get_path(
    manager: Any, entry_id: Any, descend: bool, offset: int, limit: int, *, keep: bool = True
) -> msgspec.Raw:
    """pi/getPath: a page of the path, cut from the path kept while the session stays the same."""
    key = (id_key(entry_id), descend)

    def page(build: Callable[[], PathNodes]) -> msgspec.Raw:
        path = _kept_paths.tree(manager, key, build) if keep else build()
        return path_page(path, manager.get_leaf_id(), offset, min(limit, MAX_PATH_ITEMS))

    try:
        return page(lambda: path_nodes(manager, entry_id, descend))
    except RowTreeOutgrown:
        # the walk down, or the pages read so far, made more of the rows' nodes than a tree of
        # them is worth: the path is served from the library's tree, built at once
        _kept_paths.forget(manager)
        return page(lambda: _library_path_nodes(manager, entry_id, descend))
