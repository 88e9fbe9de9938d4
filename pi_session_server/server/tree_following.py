"""A tree view's shape that follows the session pi writes (:class:`FollowingTreeShape`): after an
append below the leaf, or a move of the leaf, the shape of the new state is this one with what the
change touched forgotten, and the levels down to the old leaf that stay the same kept for the new
one. Every shape is made as one (:func:`tree_shape`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key
from pi_session_server.server.params import id_key
from pi_session_server.server.tree_held import MOST_MOVED_ROWS
from pi_session_server.session.entry_facts import tool_calls_of
from pi_session_server.session.fields import role_of, type_of
from pi_session_server.session.preview_cache import PreviewCache
from pi_session_server.session.tool_call_text import ToolCalls
from pi_session_server.session.tree import TreeRoots, label_target, shared_path_length
from pi_session_server.session.tree_filter import node_filter

from .library_tree import shown_tree
from .tree_leaf_path import EntriesOnPath, entries_on, order_along
from .tree_levels import TreeLevel, first_level_holding
from .tree_rows import node_id
from .tree_shape import TreeShape
from .tree_tool_calls import CallReading, NamedCalls


def appended_path(appended: list[Any], new_leaf: Any) -> tuple[list[Any], Any] | None:
    """(the entries of ``appended`` on the new leaf's path, root first, the id of the older entry
    they hang under), or None when they are not the manager's own entries with string ids down
    from an older one."""
    by_id = {entry.id: entry for entry in appended if type(entry) is Entry and type(entry.id) is str}
    tail: list[Any] = []
    current = new_leaf
    while type(current) is str and current in by_id and len(tail) <= len(by_id):
        entry = by_id[current]
        tail.append(entry)
        current = entry.parent_id
    if not tail or type(current) is not str or current in by_id:
        return None
    tail.reverse()
    return tail, current


def _record(changed: set[int] | None, node: Any) -> None:
    """Add ``node`` (by ``id``) to the nodes that ``changed``, when they are recorded (None: a
    change after which no level is kept, see :meth:`FollowingTreeShape._take_in`)."""
    if changed is not None:
        changed.add(id(node))


class FollowingTreeShape(TreeShape):
    """A :class:`TreeShape` that takes in what pi appends below its leaf, and moves of the leaf
    (:meth:`followed`), keeping what the change does not touch."""

    def followed(self, manager: Any, appended: list[Any]) -> FollowingTreeShape | None:
        """This shape made the shape of the session after pi appended ``appended`` below its leaf
        (the new leaf among them, its path this one's and some of them), as a shape made anew
        would be, keeping what the new entries do not change: the filter's answers, the shown
        children, the leaf's path. This shape is that one afterwards (the kept walks of the state
        before are not asked any more). None (then the caller makes one anew) when it cannot:
        the library's tree was made anew (not grown), the new leaf is not below an older entry,
        ids repeat, the tool calls were all read up front (a new call may name an older result's).
        The new leaf may be below another entry than the old leaf (pi's ``/tree``, then a turn):
        the leaf's path is then that entry's and the appended ones; with nothing appended it is
        another older entry (``pi/branch``), whose path is the leaf's, or no entry
        (``pi/resetLeaf``): no path. There may have been no leaf before either (no path then)."""
        old_leaf = self.leaf_id
        path = self.leaf_path if self.has_leaf else []  # (no leaf: no path, whatever was given)
        node_of = self.roots.node_of if isinstance(self.roots, TreeRoots) else None
        if (
            type(path) is not list
            or (self.has_leaf and type(old_leaf) is not str)
            or node_of is None
            or not self._followable(manager)
        ):
            return None
        new_leaf = manager.get_leaf_id()
        found = appended_path(appended, new_leaf)
        if not appended and (type(new_leaf) is str or new_leaf is None):
            found = [], new_leaf  # the leaf moved alone (pi/branch, pi/resetLeaf): no new entry below it
        roots = shown_tree(manager)
        if found is None or not isinstance(roots, TreeRoots) or roots.node_of is None:
            return None
        # an entry this shape knows (the old leaf, else a root) has the same node in the tree now
        known = old_leaf if self.has_leaf else (node_id(self.roots[0]) if self.roots else None)
        if type(known) is not str or roots.node_of(known) is not node_of(known):
            return None  # made anew: the nodes this shape knows are not the tree's
        tail, fork = found
        above = path if fork == old_leaf else [] if fork is None else manager.get_branch(fork)
        if fork is not None and (not above or above[-1].id != fork):
            return None
        # how many entries the old leaf's path and the new one share: all of the old one below the
        # old leaf (pi's turn; a long path is not compared with itself)
        shared = len(path) if above is path else shared_path_length(path, above)
        if len(path) + len(above) - 2 * shared > MOST_MOVED_ROWS:
            return None  # (every row that left or joined the path would be looked at again: a walk
            # anew of what is asked costs less, and a view told the move by `since` reloads)
        self._take_in(roots, manager.by_id, above, tail, appended, shared)
        return self

    def _take_in(
        self,
        roots: TreeRoots[Any],
        entries_by_id: Mapping[Any, Any],
        above: list[Any],
        tail: list[Any],
        appended: list[Any],
        shared: int,
    ) -> None:
        """:meth:`followed` once it found that it can: ``tail`` the new leaf's path below the
        older entry the last of ``above`` (the path down to it: the old leaf's, or another), of
        which the first ``shared`` are on the old leaf's path too."""
        node_of = roots.node_of
        assert node_of is not None  # (checked by followed)
        path = self.leaf_path if self.has_leaf else []
        assert type(path) is list
        old_leaf = self.leaf_id
        left, joined = path[shared:], above[shared:]  # off the path now; older ones on it now
        # and where the two part, if they do: another of its children is on the path
        parted = [path[shared - 1]] if shared and (left or joined) else []
        self.roots, self.entries_by_id = roots, entries_by_id
        self.leaf_path = [*above, *tail]
        self.leaf_id = self.leaf_path[-1].id if self.leaf_path else None
        self.has_leaf = bool(self.leaf_path)
        if self.visible is not None:  # the leaf's own answer depends on the leaf
            self.visible = node_filter(
                self._mode, self.leaf_id, self._search, self.cache, self._context_edits
            )
        self._move_path(shared, left, [*joined, *tail], node_of)
        self._around = None
        self._chain_lengths.clear()  # an appended entry can make any chain longer (or show a second child)
        if self.tool_calls is not None:
            # every call of the session read anew when needed (a new call may name an older
            # result's id); a result's call above it stays (appends add no entry above it)
            self._keep_encoded_previews(appended)
            self.tool_calls, self.calls_complete, self._session_calls = {}, False, None
        new_ids = {entry.id for entry in appended}
        # what changed is recorded only for levels that may be kept: a branch far from the leaf
        # moves hundreds of thousands of nodes, whose ids would be most of what following it holds
        kept = self._levels_to_keep(old_leaf, tail, appended)
        # to no leaf: no levels down to it are asked; those down to the old leaf wait for the next
        last_leaf = (path, kept) if kept is not None and not self.has_leaf else None
        if last_leaf is not None:
            kept = None
        changed: set[int] | None = None if kept is None else set()
        self._forget_changed(path[-1] if path else None, appended, new_ids, node_of, changed)
        if not tail and self.has_leaf:  # the new leaf is an older entry: shown otherwise as the leaf
            self._forget_leaf_row(node_of(self.leaf_id), node_of, changed)
        self._forget_moved_path([*left, *joined, *parted], node_of, changed)
        relabelled = self._forget_relabelled(appended, new_ids, node_of, changed)
        # the rows that joined the path hang below the row where the two paths part (or its shown
        # ancestor), which is in ``changed``: no level above the one that holds it is another, and
        # on another branch than the old leaf's they are in no level kept. From no leaf no row
        # parts them: the root that joined is in the top level, walked again
        if changed is not None and path:
            changed -= {id(node_of(entry.id)) for entry in joined}
        self._keep_levels_above(kept, changed)
        if not path and not appended and self._levels_at_last_leaf is not None:
            self._keep_levels_from_last_leaf(node_of)
        self._levels_at_last_leaf = last_leaf
        if self._levels_before is None and last_leaf is None:
            self._encoded_levels = {}  # (their rows are walked again)
        elif relabelled:
            self._forget_encoded_levels(relabelled)
        if not self._encoded_levels:
            self._named_from_session = set()

    def _forget_leaf_row(
        self, node: Any, node_of: Callable[[Any], Any], changed: set[int] | None, leaf_then: Any = ABSENT
    ) -> None:
        """``node`` became the leaf or stopped being it: whether it is shown is found again (pi's
        filters show a silent turn while it is the leaf); when it was shown or is, its row is
        another (``isLeaf``): recorded in ``changed``. ``leaf_then``: see :meth:`_shown_again`."""
        was_shown, shown = self._shown_again(node, node_of, changed, leaf_then)
        if was_shown is not False or shown:
            _record(changed, node)

    def _keep_levels_from_last_leaf(self, node_of: Callable[[Any], Any]) -> None:
        """After a move from no leaf to an older entry (nothing appended): the levels down to the
        leaf before the move to no leaf are kept as a move from that leaf straight to this one
        keeps them (see :meth:`_keep_levels_above`), what that move changes recorded as
        :meth:`_take_in` records it; whether the two leaves' rows were shown then is what the
        filter answers while the old one is the leaf (the answers kept are of no leaf since)."""
        assert self._levels_at_last_leaf is not None and type(self.leaf_path) is list
        path, kept = self._levels_at_last_leaf
        above = self.leaf_path
        shared = shared_path_length(path, above)
        left, joined = path[shared:], above[shared:]
        parted = [path[shared - 1]] if shared and (left or joined) else []
        changed: set[int] = set()
        for entry in (path[-1], above[-1]):  # the old leaf and the new
            self._forget_leaf_row(node_of(entry.id), node_of, changed, path[-1].id)
        self._forget_moved_path([*left, *joined, *parted], node_of, changed)
        changed -= {id(node_of(entry.id)) for entry in joined}  # (see _take_in)
        self._keep_levels_above(kept, changed)

    def _forget_relabelled(
        self,
        appended: list[Any],
        new_ids: set[Any],
        node_of: Callable[[Any], Any],
        changed: set[int] | None,
    ) -> set[int]:
        """The ``id`` of the older nodes whose label an appended label entry set (their rows show
        the label); whether each is shown is found again (``labeled-only`` and a search read the
        label), and when that changed, as for :meth:`_forget_changed` (recorded in ``changed``).
        ``new_ids``: the ids of ``appended``."""
        relabelled: set[int] = set()
        for entry in appended:
            if entry.type != "label":
                continue
            node = node_of(index_key(label_target(entry)))
            if node is None or node.entry.id in new_ids:
                continue  # (a new node's row is new)
            relabelled.add(id(node))
            was_shown, shown = self._shown_again(node, node_of, changed)
            if self.visible is not None and was_shown is not shown and (was_shown is not False or shown):
                _record(changed, node)
        return relabelled

    def _shown_again(
        self, node: Any, node_of: Callable[[Any], Any], changed: set[int] | None, leaf_then: Any = ABSENT
    ) -> tuple[bool | None, bool]:
        """Whether ``node`` was shown (None: never asked; given ``leaf_then``, while that was the
        leaf: the answer kept is of a state since) and whether it is, asked again; when that
        changed, its parent shows other children: forgotten (see :meth:`_forget_shown_children`,
        which records in ``changed``)."""
        was_shown = self._shown.pop(node.entry) if type(node.entry) is Entry else None
        if leaf_then is not ABSENT:
            was_shown = self.shown_as_leaf(node, leaf_then)
        shown = self.is_shown(node)
        if self.visible is not None and was_shown is not shown:
            self._forget_shown_children(node.entry.parent_id, node_of, changed)
        return was_shown, shown

    def _move_path(
        self, shared: int, left: list[Any], joined: list[Any], node_of: Callable[[Any], Any]
    ) -> None:
        """What is known of the leaf's path, once it is :attr:`leaf_path`, whose first ``shared``
        entries were on it before: the entries ``left`` are off it and ``joined`` on it."""
        assert type(self.leaf_path) is list
        if isinstance(self._path_entries, EntriesOnPath):  # (ordered holds it: changed in place)
            self._path_entries.move(self.leaf_path, shared, left, joined)
        elif self._path_entries is None:  # made while there was no leaf: no path known then
            self._path_entries = entries_on(self.leaf_path)
            if self.ordered is not None:
                self.ordered = order_along(self._path_entries)
        if left:  # (made again when asked for)
            self._on_path = self._path_nodes = None
            return
        if self._on_path is not None:
            self._on_path.update(entry.id for entry in joined)
        if self._path_nodes is not None:
            self._path_nodes.update((entry.id, node_of(entry.id)) for entry in joined)

    def _forget_moved_path(
        self, moved: list[Any], node_of: Callable[[Any], Any], changed: set[int] | None
    ) -> None:
        """After a branch elsewhere: the older entries that left the leaf's path or joined it, and
        the one where the old and new paths part, show otherwise (``onLeafPath``, their
        children's order: the one on the path first); forget their shown children, the shown
        ones recorded in ``changed`` (by ``id``)."""
        for entry in moved:
            node = node_of(entry.id)
            if node is None:
                continue
            self._shown_children.pop(id(node), None)
            if self.is_shown(node):
                _record(changed, node)
            else:  # its children's order is its shown ancestor's shown children's
                self._forget_shown_children(entry.parent_id, node_of, changed)

    def _forget_encoded_levels(self, nodes: set[int]) -> None:
        """Let go of the encoded levels whose page shows one of ``nodes`` (by ``id``)."""
        self._encoded_levels = {
            key: known
            for key, known in self._encoded_levels.items()
            if not any(id(row.node) in nodes for row in known.rows[known.shown])
        }

    def _forget_changed(
        self,
        old_entry: Any | None,
        appended: list[Any],
        new_ids: set[Any],
        node_of: Callable[[Any], Any],
        changed: set[int] | None,
    ) -> None:
        """After ``appended`` (below the old leaf ``old_entry``, None: there was none, and
        elsewhere; ``new_ids`` their ids): forget what is kept of the older nodes that may show
        otherwise now; the ``id`` of the shown ones among them whose row may be another (see
        :meth:`_keep_levels_above`) recorded in ``changed``: the old leaf, and those whose shown
        children changed."""
        if old_entry is not None:
            self._forget_leaf_row(node_of(old_entry.id), node_of, changed)  # (no longer the leaf)
        for entry in appended:  # the older nodes that have new children
            if entry.parent_id is not None and entry.parent_id not in new_ids:
                self._forget_shown_children(entry.parent_id, node_of, changed)

    def _keep_encoded_previews(self, appended: list[Any]) -> None:
        """After an append: let go of every encoded level when a call appended may be the one a
        tool result's preview names now (one that named a call of the whole session, of the
        same id: the last one a walk meets)."""
        if self._encoded_levels and self._names_a_call_of(self._named_from_session, appended):
            self._encoded_levels = {}

    def names_session_calls(self, appended: list[Any], named: NamedCalls) -> bool:
        """Whether a call of ``appended`` may be the one the preview of an older tool result names
        now whose row a client holds, the calls those previews named from the whole session
        ``named`` (this shape's :attr:`named_for_clients`, or another's of the same view): the
        preview named the call of that id a walk meets last, and would name another."""
        return self._names_a_call_of(named.keys, appended)

    def _names_a_call_of(self, named: set[Any] | None, appended: list[Any]) -> bool:
        """Whether an assistant message of ``appended`` holds a call whose key is in ``named``
        (None: every key)."""
        if named == set():
            return False
        calls_of = tool_calls_of if self.cache is None else self.cache.tool_calls_of
        for entry in appended:
            if not (type_of(entry) == "message" and role_of(entry) == "assistant"):
                continue
            if named is None or any(key in named for key, _call in calls_of(entry)):
                return True
        return False

    def _keep_levels_above(
        self, kept: tuple[Any, list[TreeLevel], bool] | None, changed: set[int] | None
    ) -> None:
        """After an append of only the new leaf's path below an older entry (the old leaf, or
        another), ``kept`` the levels down to the old leaf it may keep (see
        :meth:`_levels_to_keep`): those before the first that shows one of the nodes that
        ``changed`` (by ``id``: the old leaf, those whose shown children changed, those that left
        the leaf's path or joined it) are the first levels down to the new leaf, their windows
        aimed at it, and that level's window is walked again (and the levels below it): whether a
        node is shown, which children it shows in which order, and which is on the path are what
        a level's rows follow from. None are kept when a node that changed is in no level (a
        hidden root, whose shown children the top level lists)."""
        self.kept_levels = self._levels_before = None
        if kept is None or changed is None:
            return
        first = first_level_holding(kept[1], changed)
        if first is None:
            return
        new_leaf = self.leaf_id
        aimed = [
            TreeLevel(level.kind, level.window.around(new_leaf), level.rows, level.around_index)
            for level in kept[1][: first + 1]
        ]
        self._levels_before = ((id_key(new_leaf), kept[0][1]), aimed[:-1], aimed[-1])

    def _levels_to_keep(
        self, old_leaf: Any, tail: list[Any], appended: list[Any]
    ) -> tuple[Any, list[TreeLevel], bool] | None:
        """The kept levels (complete, down to ``old_leaf``) whose first ones an append of only
        ``tail`` may keep (see :meth:`_keep_levels_above`), if any: what changed is recorded for
        them alone (see :meth:`_take_in`)."""
        kept = self.kept_levels
        if (
            kept is None
            or not kept[2]
            or kept[0][0] != id_key(old_leaf)
            or len(appended) != len(tail)
            or not kept[1]
        ):
            return None
        return kept

    def _followable(self, manager: Any) -> bool:
        """Whether what this shape kept can serve the session's next state (see :meth:`followed`)."""
        return (
            not (self.tool_calls is not None and self.calls is CallReading.UP_FRONT)
            and manager.has_unique_ids()
        )

    def _forget_shown_children(
        self, entry_id: Any, node_of: Callable[[Any], Any], forgotten: set[int] | None
    ) -> None:
        """Forget the kept shown children of the node of ``entry_id`` (its children changed, or
        whether one is shown), and of each ancestor that reaches them through hidden nodes; the
        ``id`` of the shown one they end at is recorded in ``forgotten`` (of a hidden root when
        there is none: the tops of the tree show other nodes)."""
        node = None
        while entry_id is not None:
            above = node_of(entry_id)
            if above is None:
                break
            node = above
            self._shown_children.pop(id(node), None)
            if self.is_shown(node):
                break  # its own shown children are what changed: its parent lists it alone
            entry_id = node.entry.parent_id
        if node is not None:
            _record(forgotten, node)


def tree_shape(
    roots: list[Any],
    leaf_id: Any,
    entries_by_id: Mapping[Any, Any],
    *,
    mode: str = "none",
    search: str | None = None,
    context_edits: bool = True,
    active_branch_first: bool = False,
    previews: bool = True,
    cache: PreviewCache | None = None,
    calls: CallReading = CallReading.UP_FRONT,
    leaf_path: Sequence[Any] | None = None,
    branch_of: Callable[[Any], Sequence[Any] | None] | None = None,
    every_call: Callable[[], ToolCalls] | None = None,
) -> FollowingTreeShape:
    """What every window of one view of the tree shares (the filter, the order, the leaf's path, the
    tool calls for previews): made once per session state and kept while a tree view opens level
    after level (each level is a window with its own ``rootId``).

    ``calls``: how the tool calls the previews of tool results name are read (see
    :class:`CallReading`).

    ``leaf_path``: the entries from the leaf's root down to the leaf (``getBranch()``), when every
    id is unique (these entries, the same objects as the tree's): the leaf's path and the order of
    ``active_branch_first`` then come from it without a walk of the whole tree.

    ``branch_of``: ``getBranch(id)`` (None or empty when no entry has the id), when every id is
    unique: the path to an ``aroundId`` then comes from it, not from a walk up entry by entry.

    ``every_call``: :func:`tree_tool_calls` of the whole tree, for a tool result whose call is
    read from every assistant message (see ``calls``): kept with the session (a window of a
    subtree then reads them once), and over the library's tree when ``roots`` are nodes made as a
    walk reaches them (the index's rows): a walk of those for them would make every node.

    A tree that knows its nodes by id (:class:`~pi_session_server.session.tree.TreeRoots`) gives
    a window's top without a walk: with ``leaf_path`` and ``branch_of``, a window of a subtree
    costs what it shows (and the tool calls, when a tool result's call is not found above it)."""
    return FollowingTreeShape(
        roots,
        leaf_id,
        entries_by_id,
        mode=mode,
        search=search,
        context_edits=context_edits,
        active_branch_first=active_branch_first,
        previews=previews,
        cache=cache,
        calls=calls,
        leaf_path=leaf_path,
        branch_of=branch_of,
        every_call=every_call,
    )
