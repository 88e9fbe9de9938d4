"""The flat form of a window of the tree: its pages (:class:`FlatPage`, cut from a kept walk,
:class:`FlatTree`, or from a chain walked only as far as its page), encoded a batch of nodes at a
time.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

from pi_session_server.format.jsvalue import ABSENT, index_key
from pi_session_server.server.wire import encode_rows, encode_rows_into

from .tree_rows import INDEXED_ROWS, FlatRow, Row, node_id, wire_id
from .tree_window import RootNotFoundError, TreeTooLargeError, TreeWindow, index_on_path, window_tops

if TYPE_CHECKING:
    from .tree_shape import TreeShape


class FlatPage:
    """The flat form of one window, made one node at a time; ``total`` is known once exhausted.

    ``rows`` is the window's walk: a generator (walked as far as needed, once) or the list a
    :class:`FlatTree` keeps (then a page is a slice of it). Nodes outside the page are walked (to
    count them and to know each node's ancestors) but never built. Without a limit the page ends
    one node past ``max_nodes``: that node shows the result is too large, and nothing beyond it is
    built.
    """

    def __init__(
        self,
        shape: TreeShape,
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
            rows = rows if isinstance(rows, INDEXED_ROWS) else list(rows)
            if around_index is None:
                around_index = index_on_path(shape, rows, window.around_id)
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
        if not isinstance(self.rows, INDEXED_ROWS):
            return []
        if self._shown is None:
            end = None if self.end is None else self.end - self.first
            self._shown = self.rows[self.start - self.first : end]
        return self._shown

    def nodes(self) -> Iterator[FlatRow]:
        rows, start, end = self.rows, self.start, self.end
        if isinstance(rows, INDEXED_ROWS):
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
            return self.shape.node(node, row.parent_id, row.depth, [node_id(children[0])], False)
        ids = [node_id(c) for c in children]
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


class FlatTree:
    """The rows of one window of the flat form, walked once and paged many times.

    A front end reads a big tree in pages (at most ``MAX_TREE_NODES`` per reply). Walking the whole tree
    for every page (to count it and to reach the page), with the filter, the leaf's path and the tool
    calls made anew each time, was most of a page's cost. The rows (``TreeShape.walk`` of the window's
    top nodes) depend on the session and on the filter, search, order, previews, ``rootId`` and
    ``depth``, not on ``offset`` or ``limit``.
    """

    __slots__ = ("leaf_id", "rows", "shape")

    def __init__(self, shape: TreeShape, leaf_id: Any, rows: list[Row]) -> None:
        self.shape = shape
        self.leaf_id = leaf_id
        self.rows = rows


def window_tree(shape: TreeShape, window: TreeWindow, children_now: bool = False) -> FlatTree:
    """:func:`flat_tree` of ``window`` over a kept :func:`tree_shape`. ``children_now``: the shown
    children of every row (which each row of a page lists) are found now: a tree whose nodes are
    made as a walk reaches them (``RowTree``) gives up here if at all, not while a page is sent."""
    rows = list(shape.rows(window_tops(shape.roots, shape, window), window))
    if children_now:
        for row in rows:
            shape.shown_children(row.node)
    return FlatTree(shape, shape.leaf_id, rows)


def encode_flat_page(tree: FlatTree, window: TreeWindow, max_nodes: int | None = None) -> tuple[bytes, bool]:
    """(the JSON ``encode_flat_tree_view`` gives for ``window``, whether pages follow this one)."""
    page = FlatPage(tree.shape, tree.rows, window, max_nodes)
    tree.shape.read_ahead(page.shown_rows())
    return encode_flat(tree.leaf_id, page)


def encode_chain_page(shape: TreeShape, window: TreeWindow, max_nodes: int) -> tuple[bytes, bool] | None:
    """:func:`encode_flat_page` of a paged window of a chain (``window.chain`` with a ``limit``) of
    one shown top, walked only as far as its page (and the row on the path to ``aroundId``), a row
    made for the page's nodes only, the chain counted once for the shape
    (:meth:`TreeShape.chain_length`): a tree view's windows of a chain of a million entries do
    not each make a row for every entry. None when the window's top is several rows (the tops
    alone: short), or its rows on the path to ``aroundId`` cannot be found this way (ids that
    repeat); the caller walks the whole window then."""
    assert window.chain and window.limit is not None
    tops = window_tops(shape.roots, shape, window)
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
    flat = FlatPage(shape, list(walked), window, max_nodes, around_index, total, first)
    shape.read_ahead(flat.shown_rows())
    return encode_flat(shape.leaf_id, flat)


_CHAIN_STRETCH = 4096  # rows of a chain walked together while its rows on a path are looked for
_ENCODED_TOGETHER = 512  # nodes encoded in one call (one each cost a call per node; all: their memory)


def encode_flat(leaf_id: Any, page: FlatPage) -> tuple[bytes, bool]:
    out = bytearray(b'{"leafId":' + encode_rows(wire_id(leaf_id)) + b",")
    more = encode_page_into(page, out)
    out += b"}"
    return bytes(out), more


def encode_page_into(page: FlatPage, out: bytearray) -> bool:
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
