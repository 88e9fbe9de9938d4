"""pi/getTree ``levels`` with ``since``: what changed in a tree view's levels since the revision it holds.

A tree view that follows a session pi is writing asks, after each turn pi appends, for the levels
of the layout down to the new leaf. Sent whole, a deep session's levels are megabytes, nearly all
of them as the view has them already. With ``since`` (the ``revision`` of the levels reply the view
holds) the reply leaves out the first levels that are what the view holds (``keptLevels``: the
same JSON as that reply's but the labels of relabelled rows, so the same rows, totals and path)
and names the older rows whose label
changed (``relabelled``: rows the view may hold outside the levels, in a list it scrolled or a
branch it opened).

That is exact for an append below an older entry: pi writing a turn, a label, a name below the
leaf, or below another entry after a branch there (pi's ``/tree``, ``pi/branchWithSummary``); and
for a move of the leaf alone (``pi/branch``, ``pi/resetLeaf``, pi's ``/tree`` before a turn: the
same entries, so the same rows but for their marks). No older row changes but those of the levels
sent (the old leaf's, the branch point that gained a child, the rows next to them), the relabelled
ones and what ``tree_held`` names: the rows that left the leaf's path or joined it
(``leftLeafPath``, ``joinedLeafPath``: after a branch the levels above the branch point are the
same, the older rows below it only change their marks) and the lists whose rows are others
(``staleLists``: a label that shows or hides a row in a filter that reads labels, a branch that
hides the old leaf or reorders the branches under a row that left the path). The levels from the
first whose list is stale are sent again. A level whose rows changed only in the label of
relabelled rows is kept too (the client relabels the rows it holds): a label set on an entry high
up the levels does not resend every level below it. Anything else (a rewrite, a repair, a reload,
an append while there is no leaf (a new root), a revision it does not know, a branch that moved
more rows than :data:`~.tree_held.MOST_MOVED_ROWS` or in a session whose ids repeat, a call
appended whose id an older tool result's preview named) is answered ``{"reload": true,
"revision"}``: the client loads the tree anew.

The replies are kept with the session, not with the walk they were cut from (a walk is let go
after a minute without requests, or for the walks of other views past a few): what a delta is cut
from is the session as it is now, whose walk is made anew if need be, and the reply's levels
compared; what tells whether an older row changed is the session's entries since that reply's state
and the calls the previews of the rows sent named (:class:`~.tree_tool_calls.NamedCalls`, kept with the
reply). A view whose walk was let go (idle while pi worked, or another view's requests in between)
still gets a delta. Per session at most :data:`KEPT_VIEWS` views' replies are kept (by the
request's options: filter, search, rows per level), the least recently asked let go, and
:data:`KEPT_REVISIONS` revisions of each, whose levels' JSON are the same objects where they are the
same (one copy of the levels per view, and the levels that changed since).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any

import msgspec
from msgspec import UNSET

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key
from pi_session_server.session.tree import label_target

from .params import id_key
from .tree_following import appended_path
from .tree_held import PathMove, first_stale_level, lists_around, path_move, stale_ids
from .tree_pages import appended_since, same_entries, session_state
from .tree_tool_calls import NamedCalls
from .wire import encode_rows

# the views of a session whose replies a delta can start from (two editors, each its own filter,
# and each a view of the whole tree besides)
KEPT_VIEWS = 4
# the revisions of a view a delta can start from (two clients of one view, each a turn behind)
KEPT_REVISIONS = 4
_LABEL_MEMBERS = frozenset({"label", "labelTimestamp"})


class _Sent(msgspec.Struct):
    """A levels reply as it was sent: the session's state then, each level's JSON (the shape's own
    objects: kept here, not copied) and the calls its shape's previews named from the session."""

    state: tuple[int, Any, Any]
    leaf: Any
    levels: list[bytes]
    named: NamedCalls


class _SentReplies:
    """The levels replies sent of each session (kept with it, weakly), by the request's options
    and revision, the least recently used views and revisions let go past the bounds."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakKeyDictionary[Any, dict[Any, dict[Any, _Sent]]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def remember(self, manager: Any, options: tuple[Any, ...], revision: str, sent: _Sent) -> None:
        with self._lock, contextlib.suppress(TypeError):  # (no weak reference: nothing kept)
            views = self._sessions.setdefault(manager, {})
            revisions = views.pop(options, {})
            views[options] = revisions
            revisions.pop(revision, None)
            if revisions:  # (a walk made anew encoded every level anew: one copy of each kept)
                sent.levels = _shared(sent.levels, revisions[next(reversed(revisions))].levels)
            revisions[revision] = sent
            _bound(revisions, KEPT_REVISIONS)
            _bound(views, KEPT_VIEWS)

    def sent_at(self, manager: Any, options: tuple[Any, ...], revision: Any) -> _Sent | None:
        with self._lock, contextlib.suppress(TypeError):
            views = self._sessions.get(manager)
            revisions = None if views is None else views.get(options)
            return None if revisions is None else revisions.get(revision)
        return None


def _shared(levels: list[bytes], before: list[bytes]) -> list[bytes]:
    """``levels`` with each level that is the same JSON as the one at its place in ``before`` that
    one (the very object)."""
    return [then if now == then else now for now, then in zip(levels, before, strict=False)] + levels[
        len(before) :
    ]


def _bound(kept: dict[Any, Any], most: int) -> None:
    """Let go of the first (least recently used) items of ``kept`` past ``most``."""
    while len(kept) > most:
        del kept[next(iter(kept))]


_sent = _SentReplies()


def remember(shape: Any, manager: Any, options: tuple[Any, ...], revision: str, levels: list[bytes]) -> None:
    """Keep the levels of a reply cut from ``shape`` (the walk of the session as it is now) at
    ``revision``, for a request's ``options``."""
    _sent.remember(
        manager,
        options,
        revision,
        _Sent(session_state(manager), shape.leaf_id, levels, shape.named_for_clients),
    )


def sent_at(manager: Any, options: tuple[Any, ...], revision: Any) -> _Sent | None:
    """The reply of the session at ``revision`` for ``options``, if kept."""
    return _sent.sent_at(manager, options, revision)


class Changes(msgspec.Struct):
    """What the levels of a session tell of the change since a reply (see :func:`changes_since`)."""

    sent: _Sent
    relabelled: list[dict[str, Any]]
    move: PathMove | None = None
    # the lists of rows the view holds that changed (see ``tree_held``)
    stale: dict[Any, Any] = msgspec.field(default_factory=dict)

    def kept_levels(self, levels: list[bytes], hung_under: list[Any]) -> int:
        """How many of ``levels`` (the levels now), from the first, are those of the reply sent,
        but for the labels of relabelled rows, and hang under no stale list (``hung_under``: the
        id of the row each level's list hangs under, None for the top list): the view drops the
        stale lists, which a level kept would be among."""
        relabelled = {encode_rows(row["id"]) for row in self.relabelled}
        first_stale = first_stale_level(self.stale, hung_under)
        most = len(levels) if first_stale is None else first_stale
        kept = 0
        for now, then in zip(levels[:most], self.sent.levels, strict=False):
            if (
                now is not then
                and now != then
                and not (relabelled and _same_but_labels(now, then, relabelled))
            ):
                break
            kept += 1
        return kept

    def members(self, kept_levels: int) -> bytes:
        """The reply's members of its own (after ``complete``)."""
        more = b',"keptLevels":' + str(kept_levels).encode()
        if self.relabelled:
            more += b',"relabelled":' + encode_rows(self.relabelled)
        if self.move is not None:
            more += b',"leftLeafPath":' + encode_rows(self.move.left)
            more += b',"joinedLeafPath":' + encode_rows(self.move.joined)
        stale = stale_ids(self.stale)
        if stale:
            more += b',"staleLists":' + encode_rows(stale)
        return more


def changes_since(sent: _Sent | None, manager: Any, shape: Any) -> Changes | None:
    """The change from the reply ``sent`` (None: no such reply kept) to the session as it is now,
    whose walk is ``shape`` (the one the reply was cut from, followed since, or one made anew),
    when a delta can tell it exactly (see the module's docstring); None: the client loads anew."""
    if sent is None:
        return None
    now = session_state(manager)
    changes = Changes(sent, [])
    if same_entries(sent.state, now):
        if now[2] != sent.state[2] and not _moved(changes, shape, manager, 0):
            return None  # (the leaf moved alone: pi/branch, pi/resetLeaf, pi's /tree before a turn)
    else:
        appended = appended_since(manager, sent.state, now)
        found = None if appended is None else appended_path(appended, manager.get_leaf_id())
        if appended is None or found is None or len(found[0]) != len(appended):
            return None  # (not a turn below an older entry: a rewrite, a repair, a reload)
        if shape.names_session_calls(appended, sent.named):
            return None
        # a branch to an older entry, then a turn there
        if id_key(found[1]) != sent.state[2] and not _moved(changes, shape, manager, len(appended)):
            return None
        changes.relabelled = _relabelled(shape, appended, changes.stale)
    # the client holds rows of the shape the reply was cut from (when this one was made anew) too
    shape.named_for_clients.update(sent.named)
    return changes


def _moved(changes: Changes, shape: Any, manager: Any, appended: int) -> bool:
    """Whether the move of the leaf's path since the reply (whose last ``appended`` entries are
    new) can be told exactly; then it is, in ``changes``."""
    if not manager.has_unique_ids():
        return False
    changes.move = path_move(shape, manager, changes.sent.leaf, appended)
    if changes.move is None:
        return False
    changes.stale.update(changes.move.stale)
    return True


def _relabelled(shape: Any, appended: list[Any], stale: dict[Any, Any]) -> list[dict[str, Any]]:
    """``{id, label?, labelTimestamp?}`` of each older entry a label of ``appended`` is about, as
    its row shows it now. When the view's filter reads labels the label may show or hide the row:
    the lists around it are added to ``stale``."""
    new_ids = {index_key(entry.id) for entry in appended}
    rows: dict[Any, dict[str, Any]] = {}
    for entry in appended:
        if type(entry) is not Entry or entry.type != "label":
            continue
        target = label_target(entry)
        if target is ABSENT:
            continue
        key = index_key(target)
        if key in new_ids or key in rows:
            continue  # (a new entry's row is in the levels)
        node = shape.find(target)
        if node is None:
            continue  # a label of no entry: no row shows it
        if shape.reads_labels:
            stale.update(lists_around(shape, node))
        found = shape.label_of(target)
        if found is None:
            continue
        label, stamp = found
        row: dict[str, Any] = {"id": target}
        if label is not UNSET:
            row["label"] = label
        if stamp is not UNSET:
            row["labelTimestamp"] = stamp
        rows[key] = row
    return list(rows.values())


def _same_but_labels(now: bytes, then: bytes, relabelled: set[bytes]) -> bool:
    """Whether two JSON texts of a level differ only in the label of rows whose id (as JSON) is
    one of ``relabelled``."""
    before = _without_labels(msgspec.json.decode(then), relabelled)
    return bool(_without_labels(msgspec.json.decode(now), relabelled) == before)


def _without_labels(level: Any, relabelled: set[bytes]) -> Any:
    nodes = level.get("nodes") if type(level) is dict else None
    if type(nodes) is list:
        level["nodes"] = [
            {k: v for k, v in node.items() if k not in _LABEL_MEMBERS}
            if type(node) is dict and encode_rows(node.get("id")) in relabelled
            else node
            for node in nodes
        ]
    return level
