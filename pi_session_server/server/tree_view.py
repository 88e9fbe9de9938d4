"""The tree as front ends show it, made for one request: pi's ``/tree`` filter modes, a flat form
and a nested form (:func:`tree_view`, :func:`encode_flat_tree_view`, :func:`flat_tree`).

Everything here is a pure function of ``getTree()``'s nodes and the leaf id (no pygls), and
iterative: a 200,000-entry linear session is a 200,000-level tree. The filter modes, and how a
hidden entry's descendants attach, are the domain's (session/tree_filter.py, which ``pi-session
tree --filter`` draws with too). What every window of a view shares is its shape (tree_shape,
tree_following); a window's rows, pages and levels are tree_rows, tree_flat_form, tree_levels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session.preview_cache import PreviewCache
from pi_session_server.session.tool_call_text import ToolCalls

from .tree_flat_form import FlatPage, FlatTree, encode_flat, window_tree
from .tree_following import tree_shape
from .tree_rows import wire_id
from .tree_shape import TreeShape
from .tree_tool_calls import CallReading
from .tree_window import WHOLE_TREE, TreeTooLargeError, TreeWindow, window_tops


def _nested_nodes(
    shape: TreeShape, tops: list[Any], window: TreeWindow, max_nodes: int | None
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
    tops = window_tops(roots, shape, window)
    if form == "nested":
        return {"leafId": wire_id(leaf_id), "nodes": _nested_nodes(shape, tops, window, max_nodes)}
    page = FlatPage(shape, shape.rows(tops, window), window, max_nodes)
    nodes = [row.to_json() for row in page.nodes()]
    page.check_size(len(nodes))
    result: dict[str, Any] = {"leafId": wire_id(leaf_id), "nodes": nodes}
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
) -> TreeShape:
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
    tops = window_tops(roots, shape, window)
    return encode_flat(leaf_id, FlatPage(shape, shape.rows(tops, window), window, max_nodes))[0]


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
