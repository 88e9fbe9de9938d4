"""What a change of the session does to the rows a tree view holds outside the levels sent again.

A levels reply with ``since`` (``tree_since``) sends again the levels that changed; a view holds
more rows than those: lists it scrolled, branches it opened. A change that reaches such rows is
told so that the view changes them in place, or drops the lists that hold them:

* a move of the leaf (pi's ``/tree`` or ``pi/branch`` to an older entry, with a turn there or not,
  ``pi/resetLeaf``) moves the leaf's path: the older rows that left it (``leftLeafPath``: neither
  on it nor the leaf any more) and those that joined it (``joinedLeafPath``) are named by id. The
  branches under a row that left it lose their order (the branch on the path came first): their
  lists are stale;
* a row that a label (in a filter that reads labels: ``labeled-only``, a search) or the move of
  the leaf (pi's filters show a silent turn while it is the leaf) shows or hides: the rows around
  it are others (its shown parent's children, the list that holds that parent). The list under
  its nearest shown ancestor and the list that holds that ancestor are stale.

A stale list is named by the id of the row it hangs under (:data:`TOP`: the view's top list,
which only a level sent again replaces); the view drops what it holds of it, loaded anew when
it is shown again.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from pi_session_server.format.jsvalue import index_key, truthy
from pi_session_server.session.fields import id_of, parent_of
from pi_session_server.session.tree import shared_path_length

# the view's top list, among stale lists: the row it hangs under is none
TOP: Final = object()
# the most rows a branch move names (on the leaf's path now, or no longer): a move further up a
# long session than that loads the view anew (the ids would be as many bytes as its levels), and
# the server walks the view anew too, not following the move row by row (tree_following)
MOST_MOVED_ROWS: Final = 20_000


class PathMove(msgspec.Struct):
    """The older rows a move of the leaf's path changed (their ids, as the wire has them) and the
    lists it made stale (the ids of the rows they hang under, or :data:`TOP`)."""

    left: list[Any]
    joined: list[Any]
    stale: dict[Any, Any]


def path_move(shape: Any, manager: Any, old_leaf: Any, appended: int) -> PathMove | None:
    """What the branch from the path of ``old_leaf`` to the leaf's path now (whose last
    ``appended`` entries are new) changed of the older rows; None when too many rows moved."""
    # (no leaf: no path, not the leaf's path now, which is what get_branch gives for it)
    old_path = manager.get_branch(old_leaf) if truthy(old_leaf) else []
    new_path = manager.get_branch()
    shared = shared_path_length(old_path, new_path)
    left, joined = old_path[shared:], new_path[shared : len(new_path) - appended]
    if len(left) + len(joined) > MOST_MOVED_ROWS:
        return None
    # an entry at or above one that left the path is on the new one unless it left it too
    off_new_path = {entry.id for entry in left}
    stale: dict[Any, Any] = {}
    for entry in left:
        node = _shown_at_or_above(shape, shape.find(entry.id))
        # its branches lose their order (the one on the path came first): its row (childIds) and
        # the list under it
        if (
            shape.ordered is not None
            and node is not None
            and id_of(node.entry) in off_new_path
            and len(shape.shown_children(node)) > 1
        ):
            _add(stale, node)
            stale.update(_list_holding(shape, node))
    # (the new leaf, when an older row, is on the path: the lists around it are levels, sent again
    # when they changed)
    old_node = shape.find(old_leaf)
    if old_node is not None and shape.shown_as_leaf(old_node, old_leaf) is not shape.is_shown(old_node):
        stale.update(lists_around(shape, old_node))
    return PathMove(_shown_ids(shape, left), _shown_ids(shape, joined), stale)


def lists_around(shape: Any, node: Any) -> dict[Any, Any]:
    """The lists stale once ``node`` is shown or hidden (by the key of the id of the row each
    hangs under, or :data:`TOP`): the one under its nearest shown ancestor, and the one that
    holds that ancestor's row."""
    stale: dict[Any, Any] = {}
    above = _shown_at_or_above(shape, _parent(shape, node))
    if above is None:
        stale[TOP] = TOP
        return stale
    _add(stale, above)
    stale.update(_list_holding(shape, above))
    return stale


def _list_holding(shape: Any, node: Any) -> dict[Any, Any]:
    """The list that holds the row of the shown ``node``: the branches of its shown parent, the
    chain under the head of its chain, or the top list. At the top, where a row may be the head
    of a chain of its own (several roots), both that chain and the top list."""
    while True:
        parent = _shown_at_or_above(shape, _parent(shape, node))
        if parent is None:
            return {TOP: TOP}
        if len(shape.shown_children(parent)) > 1:
            return _keyed(parent)
        grand = _shown_at_or_above(shape, _parent(shape, parent))
        if grand is None:
            return {**_keyed(parent), TOP: TOP}
        if len(shape.shown_children(grand)) > 1:
            return _keyed(parent)  # a head: its chain hangs under it
        node = parent


def _parent(shape: Any, node: Any) -> Any:
    if node is None:
        return None
    parent_id = parent_of(node.entry)
    return shape.find(parent_id) if truthy(parent_id) else None


def _shown_at_or_above(shape: Any, node: Any) -> Any:
    """``node`` if shown, else its nearest shown ancestor (None: none is)."""
    while node is not None and not shape.is_shown(node):
        node = _parent(shape, node)
    return node


def _keyed(node: Any) -> dict[Any, Any]:
    entry_id = id_of(node.entry)
    return {index_key(entry_id): entry_id}


def _add(stale: dict[Any, Any], node: Any) -> None:
    stale.update(_keyed(node))


def _shown_ids(shape: Any, entries: list[Any]) -> list[Any]:
    """The ids of those of ``entries`` whose rows the view shows."""
    ids = []
    for entry in entries:
        node = shape.find(entry.id)
        if node is not None and shape.is_shown(node):
            ids.append(entry.id)
    return ids


def stale_ids(stale: dict[Any, Any]) -> list[Any]:
    """The ids of the rows the stale lists hang under (the top list left out: see
    :func:`first_stale_level`)."""
    return [entry_id for key, entry_id in stale.items() if key is not TOP]


def first_stale_level(stale: dict[Any, Any], hung_under: list[Any]) -> int | None:
    """The first level (``hung_under``: the id of the row each level's list hangs under, None for
    the top list) whose list is stale; None when none is."""
    for at, entry_id in enumerate(hung_under):
        key = TOP if entry_id is None else index_key(entry_id)
        if key in stale:
            return at
    return None
