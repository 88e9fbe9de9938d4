"""The shape of one view of the tree in one state of the session (:class:`TreeShape`): what every
node of a window needs (whether the filter shows it, its shown children in order, whether it is on
the leaf's path, its preview) and the walks of a window's rows, found once and kept while a tree
view opens window after window. Following the session's appends is tree_following's.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Final

from msgspec import UNSET

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key, strict_equal, truthy
from pi_session_server.server.params import id_key
from pi_session_server.session.describe import preview_of
from pi_session_server.session.entry_facts import collect_tool_calls, tool_calls_of
from pi_session_server.session.entry_verdicts import EntryVerdicts
from pi_session_server.session.fields import field, id_of, parent_of, role_of, type_of
from pi_session_server.session.preview_cache import PreviewCache
from pi_session_server.session.tool_call_text import ToolCalls
from pi_session_server.session.tree import TreeRoots
from pi_session_server.session.tree_filter import node_filter, shown_below

from .tree_leaf_path import (
    active_path_ids,
    entries_on,
    keys_on,
    order_active_first,
    order_along,
    whole_leaf_path,
)
from .tree_levels import EncodedLevel, TreeLevel, level_key
from .tree_rows import ChainRows, FlatRow, Row, envelope, node_id, rows_of_chain, wire_id, wire_value
from .tree_tool_calls import CallReading, NamedCalls, tree_tool_calls, walk_entries
from .tree_window import TreeWindow, find_node, nodes_along, walk_nodes

_CALL_SEARCH_STEPS = 64  # how far above a tool result its call is looked for (parallel calls' results chain)
_NOT_LOOKED_FOR: Final = object()  # (a call above a tool result not looked for yet: see _call_above)
# the filters that show most entries of a chat (the others a few: all previews made up front is waste)
_MOSTLY_SHOWN = frozenset({"none", "default", "no-tools", "all"})
# previews (and assistant messages' facts, calls above results) a tree view's windows hold before
# those of the replies before go: tens of windows' worth, not a session's
_PREVIEWS_HELD = 1 << 14


class TreeShape:
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
        path = leaf_path if leaf_path is not None and whole_leaf_path(leaf_path, leaf_id) else None
        # a known leaf path's entries by identity (every id unique): whether a node is on it, for
        # the order and each node's onLeafPath, without the key of every entry of a long path
        self._path_entries = None if path is None else entries_on(path)
        self.ordered: Callable[[list[Any]], list[Any]] | None = None
        if active_branch_first:
            on_path = self._path_entries
            self.ordered = order_active_first(roots, leaf_id) if on_path is None else order_along(on_path)
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
                self.tool_calls = collect_tool_calls(walk_entries(roots))
            else:
                shows_most = mode in _MOSTLY_SHOWN and not search
                self.tool_calls = cache.collect_tool_calls(walk_entries(roots), with_previews=shows_most)
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
        found = self._encoded_levels.get(level_key(level, size))
        return found if found is not None and found.rows is level.rows else None

    def keep_encoded_levels(self, encoded: list[tuple[TreeLevel, int, EncodedLevel]]) -> None:
        """Keep the levels of a levels reply as encoded (those of the reply before let go)."""
        self._encoded_levels = {level_key(level, size): known for level, size, known in encoded}

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
        return (
            UNSET if label is ABSENT else wire_value(label),
            UNSET if stamp is ABSENT else wire_value(stamp),
        )

    @property
    def on_path(self) -> set[Any]:
        """The keys (``index_key``) of the ids of the entries on the leaf's path."""
        if self._on_path is None:
            self._on_path = keys_on(self.leaf_path or ())
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
            for node in walk_nodes(self.roots):
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
                path = keys_on(self._branch_of(entry_id) or ())
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
                return entry in path_entries and self.is_on_leaf_path(entry, envelope(entry)[0])

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
                    ancestor_id, ancestor_depth = node_id(node), depth
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
        yield from rows_of_chain(self._chain_nodes(level[0], 0, max_depth), 0, None)

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
            entry_id, parent_id, etype, role, timestamp, line = envelope(entry)
        preview: Any = UNSET
        if self.tool_calls is not None:
            preview = self.preview(entry, self.tool_calls if self.calls_complete else self._calls_for(entry))
        label, label_timestamp = node.label, node.label_timestamp
        # made for every row of a whole tree: the strings most fields are pass without a call
        return FlatRow(
            entry_id if type(entry_id) is str else wire_id(entry_id),
            parent_id if type(parent_id) is str else _member(parent_id),
            visible_parent_id,
            children,
            etype if type(etype) is str else _member(etype),
            role if type(role) is str else _member(role),
            UNSET if label is ABSENT else wire_value(label),
            UNSET if label_timestamp is ABSENT else wire_value(label_timestamp),
            preview,
            timestamp if type(timestamp) is str else _member(timestamp),
            line if line >= 0 else UNSET,
            depth,
            self.has_leaf and strict_equal(entry_id, self.leaf_id),  # (1 == True in Python, not in JS)
            self.is_on_leaf_path(entry, entry_id),
            branch_point,
        )


def _member(value: Any) -> Any:
    """A member of the envelope on the wire: UNSET (left out) when the entry has none."""
    return UNSET if value is ABSENT else wire_value(value)


def _on_path(row: Row, path: Container[Any]) -> bool:
    """Whether ``row``'s entry is on ``path`` (the keys of the ids on it)."""
    entry = row.node.entry
    if type(entry) is Entry and type(entry.id) is str:  # most ids: their own key
        return entry.id != "" and entry.id in path
    entry_id = envelope(entry)[0]
    return truthy(entry_id) and index_key(entry_id) in path
