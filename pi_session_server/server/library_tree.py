"""The library's tree of a session (``manager.get_tree()``), made once per state of the session and
shared by the sidecar's views of it.

The tree view's kept shape, its pages and the conversation view's path each walk the whole tree of
a session; each used to make its own. On a big session that is one node and one children list per
entry, made again for every view (a branch switch in the conversation view built the whole tree
anew while the tree view held its own) and held once per view. The views only read the nodes, so
one tree serves them all while the session's entries stay as they were (:func:`.tree_pages.entries_state`:
an append, a reload or a label makes a new one; a branch moves the leaf alone, which the tree does not
show), and it is let go after the same idle time as the views' walks, or with the session.

A session pi is writing changes with every entry it appends: the tree of the state before is
then grown by the new entries' nodes (``session.tree.grown_tree``) instead of made anew, where
that gives the same tree.
"""

from __future__ import annotations

from typing import Any

from pi_session_server.session.tool_call_text import ToolCalls
from pi_session_server.session.tree import TreeRoots, expanded_once, grown_tree, shares_nodes

from .tree_pages import FlatTreePages, entries_state
from .tree_tool_calls import tree_tool_calls

# (none of them depends on the leaf: a branch keeps them)
_trees: FlatTreePages[list[Any]] = FlatTreePages(state=entries_state)
_shown_trees: FlatTreePages[list[Any]] = FlatTreePages(state=entries_state)
_tool_calls: FlatTreePages[ToolCalls] = FlatTreePages(state=entries_state)


def library_tree(manager: Any) -> list[Any]:
    """``manager.get_tree()`` as the session is now (pi's structure), shared: the caller must not
    change the nodes."""
    return _trees.tree(
        manager, (), manager.get_tree, lambda roots, appended: _grown(manager, roots, appended)
    )


def _grown(manager: Any, roots: list[Any], appended: list[Any]) -> list[Any] | None:
    """The tree of the session now, grown from the kept tree of a state it appended to (None: to
    be built anew)."""
    if not isinstance(roots, TreeRoots) or not manager.has_unique_ids():
        return None

    def label_of(entry_id: Any) -> tuple[Any, Any]:
        return manager.get_label(entry_id), manager.get_label_timestamp(entry_id)

    return grown_tree(roots, appended, label_of)


def shown_tree(manager: Any) -> list[Any]:
    """:func:`library_tree` with each node's subtree in one place (session.tree.expanded_once), for
    what walks the whole tree: the same nodes when none is shared (ids are unique), shared alike."""
    return _shown_trees.tree(manager, (), lambda: _once_each(manager))


def _once_each(manager: Any) -> list[Any]:
    roots = library_tree(manager)
    if manager.has_unique_ids():
        return roots  # no node hangs in two places (no walk to tell)
    return expanded_once(manager.get_tree()) if shares_nodes(roots) else roots


def session_tool_calls(manager: Any) -> ToolCalls:
    """Every tool call of the session as a walk of :func:`shown_tree` meets them (``tree_tool_calls``),
    kept like the tree: a tool result's preview in a window of a subtree names the call the whole
    tree does, and each window of it would otherwise read every assistant message again. The caller
    must not change it."""
    return _tool_calls.tree(manager, (), lambda: tree_tool_calls(shown_tree(manager)))
