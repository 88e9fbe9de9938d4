"""pi/getTree ``levels`` with ``since``: what changed in a tree view's levels since the revision it holds.

A tree view that follows a session pi is writing asks, after each turn pi appends, for the levels
of the layout down to the new leaf. Sent whole, a deep session's levels are megabytes, nearly all
of them as the view has them already. With ``since`` (the ``revision`` of the levels reply the view
holds) the reply leaves out the first levels that are what the view holds (``keptLevels``: the
same JSON as that reply's, so the same rows, totals and path) and names the older rows whose label
changed (``relabelled``: rows the view may hold outside the levels, in a list it scrolled or a
branch it opened).

That is exact only for an append below the leaf (pi writing a turn, a label, a name): no older row
changes but those of the levels sent (the old leaf's, the branch point that gained a child, the rows
next to them) and the relabelled ones. So a delta is answered only when the session had entries
appended, each on the new leaf's path below the leaf of that revision, and the server still keeps
the walk the levels were cut from (followed through the appends: see :meth:`FlatTreePages.tree`,
whose walk a request of another view or a minute without one lets go). Anything else (a rewrite, a
repair, a reload, a branch to an older entry, a revision it does not know, a label that shows or
hides a row in the view's filter, a call appended whose id an older tool result's preview named)
is answered ``{"reload": true, "revision"}``: the client loads the tree anew.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key
from pi_session_server.session.tree import label_target

from .params import id_key
from .tree_pages import appended_since, same_state, session_state
from .tree_view import appended_path
from .wire import encode_rows

# the revisions of a walk a delta can start from (two clients of one view, each a turn behind)
KEPT_REVISIONS = 4


class _Sent(msgspec.Struct):
    """A levels reply as it was sent: the session's state then and each level's JSON (the shape's own
    objects: kept here, not copied)."""

    state: tuple[int, Any, Any]
    levels: list[bytes]


def remember(shape: Any, manager: Any, options: tuple[Any, ...], revision: str, levels: list[bytes]) -> None:
    """Keep the levels of a reply cut from ``shape`` (the walk of the session as it is now, whose
    ``levels_sent`` holds them: they go with it) at ``revision``, for a request's ``options``."""
    sent: dict[Any, _Sent] = shape.levels_sent
    sent.pop((options, revision), None)
    sent[(options, revision)] = _Sent(session_state(manager), levels)
    while len(sent) > KEPT_REVISIONS:
        del sent[next(iter(sent))]


def sent_at(shape: Any, options: tuple[Any, ...], revision: Any) -> _Sent | None:
    """The reply cut from ``shape`` at ``revision`` for ``options``, if kept."""
    found: _Sent | None = shape.levels_sent.get((options, revision))
    return found


class Changes(msgspec.Struct):
    """What the levels of a session tell of the change since a reply (see :func:`changes_since`)."""

    sent: _Sent
    relabelled: list[dict[str, Any]]

    def kept_levels(self, levels: list[bytes]) -> int:
        """How many of ``levels`` (the levels now), from the first, are those of the reply sent."""
        before = self.sent.levels
        kept = 0
        for now, then in zip(levels, before, strict=False):
            if now is not then and now != then:
                break
            kept += 1
        return kept

    def members(self, kept_levels: int) -> bytes:
        """The reply's members of its own (after ``complete``)."""
        more = b',"keptLevels":' + str(kept_levels).encode()
        if self.relabelled:
            more += b',"relabelled":' + encode_rows(self.relabelled)
        return more


def changes_since(sent: _Sent | None, manager: Any, shape: Any) -> Changes | None:
    """The change from the reply ``sent`` (cut from ``shape``, or None: no such reply) to the session
    as it is now, whose walk is ``shape``, when a delta can tell it exactly (see the module's
    docstring); None: the client loads anew."""
    if sent is None:
        return None
    now = session_state(manager)
    if same_state(sent.state, now):
        return Changes(sent, [])
    appended = appended_since(manager, sent.state, now)
    if appended is None or not _below_leaf(appended, sent.state, manager.get_leaf_id()):
        return None
    if shape.names_session_calls(appended):
        return None
    relabelled = _relabelled(shape, appended)
    return None if relabelled is None else Changes(sent, relabelled)


def _below_leaf(appended: list[Any], before: tuple[int, Any, Any], leaf_id: Any) -> bool:
    """Whether every entry of ``appended`` is on the path of the leaf ``leaf_id`` below the leaf of
    the state ``before``: pi's turn, not a branch to an older entry and a turn there."""
    found = appended_path(appended, leaf_id)
    return found is not None and len(found[0]) == len(appended) and id_key(found[1]) == before[2]


def _relabelled(shape: Any, appended: list[Any]) -> list[dict[str, Any]] | None:
    """``{id, label?, labelTimestamp?}`` of each older entry a label of ``appended`` is about, as
    its row shows it now; None when a label may show or hide a row (the view's filter reads them)."""
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
        if shape.reads_labels:
            return None
        found = shape.label_of(target)
        if found is None:
            continue  # a label of no entry: no row shows it
        label, stamp = found
        row: dict[str, Any] = {"id": target}
        if label is not UNSET:
            row["label"] = label
        if stamp is not UNSET:
            row["labelTimestamp"] = stamp
        rows[key] = row
    return list(rows.values())
