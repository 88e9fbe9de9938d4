"""pi/getTree, pi/getBranch, pi/getChildren, pi/getEntry, pi/getEntries, pi/getLeaf, pi/getLabel,
pi/getSessionName, pi/getHeader, pi/getInfo, pi/getEntryCount, pi/getEntryAtLine, pi/getLineBreaks,
pi/buildContextEntries, pi/buildSessionContext, pi/buildSessionProjection."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from operator import methodcaller
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

import msgspec
from msgspec import UNSET

from pi_session_server.format.gcpause import gc_paused
from pi_session_server.format.jsvalue import ABSENT, strict_equal
from pi_session_server.session import cache_dir
from pi_session_server.session.context import build_context_entries
from pi_session_server.session.preview_cache import PreviewCache
from pi_session_server.session.row_tree import RowTree, RowTreeOutgrown
from pi_session_server.session.tool_call_text import home_directory
from pi_session_server.session.tree import tree_to_json

from . import params as P
from .errors import ENTRY_NOT_FOUND, MAX_TREE_NODES, TOO_LARGE, TREE_CHANGED, PiRpcError, invalid_params
from .library_tree import library_tree, session_tool_calls, shown_tree
from .path_view import get_path
from .raw_parts import RawParts
from .reply_bytes import entries_bytes, refuse_past_max, reply_bytes
from .tree_flat_form import FlatTree, encode_chain_page, encode_flat_page, window_tree
from .tree_following import tree_shape
from .tree_levels import encoded_tree_levels, levels_hung_under, levels_reply, tree_levels
from .tree_pages import FlatTreePages, Revisions
from .tree_since import KEPT_VIEWS, changes_since, remember, sent_at
from .tree_tool_calls import CallReading
from .tree_view import encode_flat_tree_view, tree_view
from .tree_window import RootNotFoundError, TreeTooLargeError, TreeWindow
from .wire import encode_result

if TYPE_CHECKING:
    from pi_session_server.analysis.lone_cr import SearchedFile

    from .app import PiSessionServer


# rows per level of a pi/getTree `levels` reply without `limit`
DEFAULT_LEVEL_ROWS = 50


def _or_null(value: Any) -> Any:
    return None if value is ABSENT else value


def _tree(manager: Any, p: P.GetTreeParams, revision: str | None = None) -> Any:
    """pi/getTree's result; ``revision``: the session's, for a levels reply (see :func:`_levels`)."""
    window = _tree_window(p)
    # the walk keeps every container it makes: collections during it would find nothing
    with gc_paused():
        if p.form == "reference":
            roots = library_tree(manager)
            _refuse_if_more_nodes(roots, MAX_TREE_NODES)
            refuse_past_max(
                entries_bytes(node.entry for node in _nodes(roots)),
                "ask for form flat (nodes without bodies) with `limit` and `offset`, then pi/getPath or "
                "pi/getEntry for the entries wanted",
            )
            return tree_to_json(roots)
        view: dict[str, Any] = {  # what to show: the same for every page of one tree
            "mode": p.filter,
            "search": None if p.search is UNSET else " ".join(P.search_words(p.search)),
            "active_branch_first": p.active_branch_first,
            "previews": p.previews,
            "context_edits": manager.profile.context_edits,  # (a release's filter: see tree_filter)
        }
        try:
            if p.levels:
                return _levels(manager, view, window, revision, P.opt(p.since))
            if p.form == "flat" and window.paged:
                return msgspec.Raw(_flat_page(manager, view, window))
            options = {**view, "cache": preview_cache(manager), "window": window, "max_nodes": MAX_TREE_NODES}
            return _unpaged(manager, p.form, window, options)
        except TreeTooLargeError as error:
            raise _too_large(str(error), error.total) from None
        except RootNotFoundError as error:
            raise PiRpcError(ENTRY_NOT_FOUND, str(error), {error.param: error.root_id}) from None


def _tree_reply(manager: Any, p: P.GetTreeParams) -> Any:
    """pi/getTree's reply: :func:`_tree`, and for a window of the flat form (a page, the levels)
    the session's revision it was cut from, after the one the request names is checked."""
    window = _tree_window(p)  # (params that cannot be given are refused before the revision is)
    if not (p.levels or (p.form == "flat" and window.paged)):
        return _tree(manager, p)
    revision = _revision(manager, p)
    return _with_revision(_tree(manager, p, revision), revision)


def _revision(manager: Any, p: P.GetTreeParams) -> str:
    """The session's revision, for a window of its tree; TreeChanged when the request was made for
    another one (the pages before it are of another tree)."""
    revision = _revisions.current(manager)
    if p.revision is not UNSET and p.revision != revision:
        raise PiRpcError(
            TREE_CHANGED,
            f"The session changed since revision {p.revision} of its tree (now {revision}): ask for the "
            "tree again from its first page",
            {"revision": revision},
        )
    return revision


def _with_revision(encoded: msgspec.Raw | RawParts, revision: str) -> RawParts:
    """A window's JSON object with its ``revision`` member last (the window's JSON not copied)."""
    parts = encoded if isinstance(encoded, RawParts) else RawParts([encoded])
    return parts.with_member_last(b',"revision":' + encode_result(revision))


def _unpaged(manager: Any, form: str, window: TreeWindow, options: dict[str, Any]) -> Any:
    """A window without pages: a subtree of a session reopened from its index is cut from the tree
    of the index's rows (see :func:`_window_tree`) unless it walks too far for it; else, and any
    other window, from the library's tree."""
    calls = functools.partial(session_tool_calls, manager)
    if window.root_id is not ABSENT:
        with contextlib.suppress(RowTreeOutgrown):
            rows = manager.row_tree()
            if rows is not None:
                known = {"leaf_path": rows.leaf_path, "branch_of": rows.path_to, "every_call": calls}
                return _unpaged_of(form, rows.roots, manager.get_leaf_id(), rows.by_id, {**options, **known})
    known = {"leaf_path": _leaf_path(manager), "branch_of": _branch_of(manager), "every_call": calls}
    return _unpaged_of(form, shown_tree(manager), manager.get_leaf_id(), manager.by_id, {**options, **known})


def _unpaged_of(form: str, roots: Any, leaf_id: Any, by_id: Any, options: dict[str, Any]) -> Any:
    if form == "nested":
        return tree_view(roots, leaf_id, by_id, form="nested", **options)
    return msgspec.Raw(encode_flat_tree_view(roots, leaf_id, by_id, **options))


def _kept_shape(manager: Any, view: dict[str, Any], on_demand: bool) -> Any:
    """The shape of the tree for ``view``, kept for the windows of one view of it."""

    def shape() -> Any:
        return _shape(manager, view, on_demand, shown_tree(manager), manager.by_id, _leaf_path(manager))

    return _tree_shapes.tree(manager, (*view.values(), on_demand), shape)


def _leaf_path(manager: Any) -> Any:
    """The leaf's path for a view of the tree, when it is ``getBranch()`` (every id unique)."""
    return manager.get_branch() if manager.has_unique_ids() else None


def _branch_of(manager: Any) -> Any:
    """The path to an entry for a view of the tree, when it is ``getBranch(id)`` (every id unique)."""
    return weakly(manager, _branch_to, None) if manager.has_unique_ids() else None


def _branch_to(manager: Any, entry_id: Any) -> Any:
    return manager.get_branch(entry_id)


def _shape(
    manager: Any,
    view: dict[str, Any],
    on_demand: bool,
    roots: Any,
    by_id: Any,
    leaf_path: Any,
    rows: RowTree | None = None,
) -> Any:
    """The shape of ``view`` over ``roots``: the library's tree, or the tree of the index's rows
    (``rows``, which finds the path to an entry in its rows). A tool result whose call is read
    from every assistant message names the one the session's kept calls name."""
    return tree_shape(
        roots,
        manager.get_leaf_id(),
        by_id,
        cache=preview_cache(manager),
        calls=CallReading.NEAR_EACH_RESULT if on_demand else CallReading.UP_FRONT,
        leaf_path=leaf_path,
        branch_of=_branch_of(manager) if rows is None else rows.path_to,
        every_call=weakly(manager, session_tool_calls, {}),
        **view,
    )


def _window_tree(manager: Any, view: dict[str, Any], window: TreeWindow, on_demand: bool) -> FlatTree:
    """The rows of a window, cut from the view's kept shape (:func:`_kept_shape`). The top chain of
    a session reopened from its index (a tree view's first window), or a subtree of it (a node a
    tree view opens), while no shape is kept, is cut from the tree of the index's rows
    (``manager.row_tree``) instead, whose nodes and entries are made as the window reaches them:
    not every entry and node of the session for the few hundred rows a view opens on. That shape
    is not kept (the view's next windows, the levels down to the leaf and the whole tree, walk most
    of the tree, which the tree built at once serves faster), and a window that goes on too far
    for it (a chain of a session without branches) is cut from the kept one."""
    top_chain = window.chain and window.root_id is ABSENT and window.around_id is ABSENT
    if (top_chain or window.root_id is not ABSENT) and _tree_shapes.kept_for(
        manager, (*view.values(), on_demand)
    ) is None:
        try:
            rows = manager.row_tree()
            if rows is not None:
                shape = _shape(manager, view, on_demand, rows.roots, rows.by_id, rows.leaf_path, rows)
                return window_tree(shape, window, children_now=True)
        except RowTreeOutgrown:
            pass
    return window_tree(_kept_shape(manager, view, on_demand), window)


def _levels(
    manager: Any, view: dict[str, Any], window: TreeWindow, revision: str | None, since: Any
) -> RawParts:
    """pi/getTree ``levels``: every level of the layout down to ``aroundId``, in one reply; with
    ``since`` (a revision a levels reply gave) only what changed since, or ``{"reload": true}``
    (see ``tree_since``). The reply is kept for the next ``since`` at ``revision``."""
    shape = _kept_shape(manager, view, True)
    limit = DEFAULT_LEVEL_ROWS if window.limit is None else window.limit
    options = (*view.values(), limit)
    changes = None
    if since is not ABSENT:
        changes = changes_since(sent_at(manager, options, since), manager, shape)
        if changes is None:
            return RawParts([b'{"reload":true}'])
    levels, complete = tree_levels(shape, window.around_id, MAX_TREE_NODES // 2)
    encoded = encoded_tree_levels(shape, levels, limit, MAX_TREE_NODES)
    if revision is not None:
        remember(shape, manager, options, revision, encoded)
    if changes is None:
        return levels_reply(shape.leaf_id, encoded, complete)
    kept = changes.kept_levels(encoded, levels_hung_under(levels))
    return levels_reply(shape.leaf_id, encoded[kept:], complete, changes.members(kept))


def _flat_page(manager: Any, view: dict[str, Any], window: TreeWindow) -> bytes:
    """A page of the flat form, cut from the walk kept for the pages of the same request; the walks
    of one view of the tree (a tree view opening level after level) share one kept shape."""
    key = (*view.values(), P.id_key(window.root_id), window.depth, window.chain)
    # a tree view's windows (a level, the page around an entry) read the calls their previews name;
    # pages of the whole tree keep the whole session's calls, as pi's tree selector does
    on_demand = window.chain or window.root_id is not ABSENT or window.around_id is not ABSENT

    if window.chain and window.limit is not None:
        chain_page = _chain_page(manager, view, window, key)
        if chain_page is not None:
            return chain_page

    def walk() -> FlatTree:
        return _window_tree(manager, view, window, on_demand)

    try:
        encoded, more = encode_flat_page(_tree_pages.tree(manager, key, walk), window, MAX_TREE_NODES)
    except TreeTooLargeError:  # `offset` without `limit` on a big tree: no page follows this refusal
        _tree_pages.forget(manager)
        raise
    if not more:
        _tree_pages.forget(manager)  # the last page: the client has the whole tree
    return encoded


def _chain_page(manager: Any, view: dict[str, Any], window: TreeWindow, key: tuple[Any, ...]) -> bytes | None:
    """A page of a chain (``chain`` with ``limit``) cut from the view's kept shape, walked as far as
    the page and counted once for the shape (:func:`encode_chain_page`): a tree view paging
    through a long chain. None when the page is cut from a walk of the whole window instead: a
    walk kept for it (the pages before it), the tree of the index's rows while no shape is kept
    (see :func:`_window_tree`), a window that is not one chain."""
    if _tree_pages.kept_for(manager, key) is not None:
        return None
    on_demand = True  # (as every window of a chain reads its calls: see _flat_page)
    shapes_key = (*view.values(), on_demand)
    from_rows = window.root_id is not ABSENT or window.around_id is ABSENT
    if from_rows and _tree_shapes.kept_for(manager, shapes_key) is None and manager.row_tree() is not None:
        return None
    encoded = encode_chain_page(_kept_shape(manager, view, on_demand), window, MAX_TREE_NODES)
    return None if encoded is None else encoded[0]


def _tree_window(p: P.GetTreeParams) -> TreeWindow:
    """The part of the tree the params ask for; -32602 for a form that cannot give it."""
    if p.levels and (
        p.form != "flat"
        or p.around_id is UNSET
        or p.root_id is not UNSET
        or p.depth is not UNSET
        or p.offset is not UNSET
        or p.chain
    ):
        raise invalid_params(
            "Invalid params: `levels` takes `aroundId` (and `limit`, rows per level), in the flat form, "
            "without `rootId`, `depth`, `offset` or `chain`"
        )
    if p.form == "reference" and (
        p.root_id is not UNSET
        or p.depth is not UNSET
        or p.paged
        or p.chain
        or p.filter != "none"
        or p.search is not UNSET
        or p.active_branch_first
    ):
        raise invalid_params(
            "Invalid params: `rootId`, `depth`, `offset`, `limit`, `chain`, `aroundId`, `filter`, "
            "`search` and `activeBranchFirst` need form flat or nested (the reference form is pi's "
            "getTree(), whole)"
        )
    if p.since is not UNSET and (not p.levels or p.revision is not UNSET):
        raise invalid_params(
            "Invalid params: `since` is of `levels` (the revision of a levels reply the client holds), "
            "without `revision`"
        )
    if p.revision is not UNSET and (p.form != "flat" or not (p.paged or p.levels)):
        raise invalid_params(
            "Invalid params: `revision` is of a window of the flat form (`offset`, `limit`, `aroundId` or "
            "`levels`): the revision a reply before it gave"
        )
    if p.form == "nested" and (p.paged or p.chain):
        raise invalid_params(
            "Invalid params: `offset`, `limit`, `chain` and `aroundId` are of the flat form; nested: use "
            "`rootId` and `depth`"
        )
    return TreeWindow(
        root_id=P.opt(p.root_id),
        depth=None if p.depth is UNSET else p.depth,
        offset=0 if p.offset is UNSET else p.offset,
        limit=None if p.limit is UNSET else p.limit,
        paged=p.paged,
        chain=p.chain,
        around_id=P.opt(p.around_id),
    )


def _too_large(message: str, total: int) -> PiRpcError:
    return PiRpcError(TOO_LARGE, message, {"total": total, "max": MAX_TREE_NODES})


def _nodes(roots: list[Any]) -> Iterator[Any]:
    """Every node of a tree (in no particular order)."""
    stack = list(roots)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _refuse_if_more_nodes(roots: list[Any], max_nodes: int) -> None:
    """The reference form has no pages: refuse it past ``max_nodes`` (counted without building any)."""
    total = sum(1 for _ in _nodes(roots))
    if total > max_nodes:
        raise _too_large(
            f"The tree has {total} nodes, more than the {max_nodes} one reply may hold: ask for form flat "
            "with `limit` and `offset`, or for a subtree with `rootId` and `depth`",
            total,
        )


T = TypeVar("T")
_preview_caches: weakref.WeakKeyDictionary[Any, PreviewCache] = weakref.WeakKeyDictionary()
_tree_pages: FlatTreePages[FlatTree] = FlatTreePages()
# a shape per view of a session (two editors' tree views, each its filter, keep theirs)
_tree_shapes: FlatTreePages[Any] = FlatTreePages(walks=KEPT_VIEWS)
_revisions = Revisions()
_preview_caches_lock = threading.Lock()


def weakly(manager: Any, function: Callable[..., T], gone: T) -> Callable[..., T]:
    """``function(manager, *args)`` while the session lives, ``gone`` once it is let go: what is
    kept beside a session (keyed weakly by it: a preview cache, a tree's shape) must not hold it,
    or the session is never let go, closed or not."""
    session = weakref.ref(manager)

    def call(*args: Any) -> T:
        alive = session()
        return gone if alive is None else function(alive, *args)

    return call


def preview_cache(manager: Any) -> PreviewCache | None:
    """The preview cache of a session (dropped with its manager); None if the manager cannot be keyed.

    Its previews are kept with the file's index after the reply (``PreviewKeeper.later``), not
    in the walk that made them; a walk that misses many loads those kept (the session's entries)."""
    with _preview_caches_lock:
        try:
            cache = _preview_caches.get(manager)
            if cache is None:
                cache = PreviewCache(
                    home_directory(manager.environment),
                    entries=weakly(manager, methodcaller("get_entries"), []),
                    entry_count=weakly(manager, methodcaller("entry_count"), 0),
                    keep_in_walk=False,
                    profile=manager.profile,
                )
                _preview_caches[manager] = cache
        except TypeError:  # not weakly referenceable
            return None
        return cache


def _refuse_since_with_offset(p: P.GetEntriesParams) -> None:
    if p.since is not UNSET and p.offset is not UNSET:
        raise invalid_params("Invalid params: `since` and `offset` both say where the page starts: give one")


def _entries_page(manager: Any, p: P.GetEntriesParams) -> dict[str, Any]:
    total = manager.entry_count()
    start = 0
    if p.offset is not UNSET:
        start = min(p.offset, total)
    elif p.since is not UNSET:
        position = manager.position_of(p.since)
        if position < 0:
            raise PiRpcError(ENTRY_NOT_FOUND, f"Entry {p.since} not found", {"since": p.since})
        start = position + 1
    end = total if p.limit is UNSET else min(total, start + p.limit)  # limit >= 1: pages always advance
    entries = manager.entries_slice(start, end)
    refuse_past_max(
        reply_bytes(manager, entries),
        "ask for pages: pi/getEntries with `limit` (a smaller one), then `offset` for the next pages",
    )
    return {"entries": entries, "total": total, "hasMore": end < total}


def _entry_at_line(manager: Any, line: int) -> dict[str, Any] | None:
    """The entry on a line of the file as a tree node shows it (no body: a line can be MBs)."""
    entry = manager.entry_at_line(line)
    if entry is None:
        return None
    leaf_id = manager.get_leaf_id()
    node = {
        "id": _or_null(entry.id),
        "parentId": entry.parent_id,
        "type": entry.type,
        "role": entry.role,
        "label": manager.get_label(entry.id),
        "labelTimestamp": manager.get_label_timestamp(entry.id),
        "timestamp": entry.timestamp,
        "line": entry.line,
        "isLeaf": leaf_id is not ABSENT and leaf_id is not None and strict_equal(entry.id, leaf_id),
    }
    return node  # members the entry does not have (ABSENT) are left out on the wire


# the last files' lone CRs (path -> what was found): a client asks before each conversion (the
# cursor moved), and a big file pi wrote is read through to find none; once pi appended to it, only
# the bytes appended are read
_line_breaks_kept: dict[str, _KeptLineBreaks] = {}
_line_breaks_lock = threading.Lock()  # (the sessions' queues run on several workers)
_LINE_BREAKS_KEPT: Final = 16


class _KeptLineBreaks(NamedTuple):
    searched: SearchedFile
    found: list[dict[str, int]]
    # the file had not changed lately when it was searched: a change since shows in its status. A
    # file that had (cache_dir.RACY_NS) may be rewritten within the same tick of the file system's
    # clock, keeping its size and times: the reply is not given again while the file looks the same
    settled: bool


def _line_breaks(manager: Any) -> dict[str, Any]:
    """Where an editor that ends a line at a lone CR numbers the file's lines otherwise than pi (the
    file as it is on disk: a session not written yet has none)."""
    file = manager.get_session_file() if manager.is_persisted() else None
    if not isinstance(file, str) or not file:
        return {"loneCarriageReturns": []}
    from pi_session_server.analysis import lone_cr  # here: see _context

    path = manager.environment.on_disk(file)
    identity = _file_identity(path)
    with _line_breaks_lock:
        kept = _line_breaks_kept.get(path)
    looks_the_same = identity is not None and kept is not None and kept.searched.identity == identity
    if looks_the_same and kept is not None and kept.settled:
        return {"loneCarriageReturns": kept.found}
    # (read from its start a file that looks the same but may not be; else only what was appended)
    started = time.time_ns()
    searched = lone_cr.search_file(path, None if kept is None or looks_the_same else kept.searched)
    if searched is None:
        return {"loneCarriageReturns": []}
    found = [{"line": n, "count": count} for n, count in searched.search.found().by_line()]
    if searched.stamp is not None:  # (not changed while it was read)
        settled = _settled_since(path, searched, started)
        with _line_breaks_lock:
            _line_breaks_kept.pop(path, None)
            while len(_line_breaks_kept) >= _LINE_BREAKS_KEPT:  # (the one asked about longest ago)
                del _line_breaks_kept[next(iter(_line_breaks_kept))]
            _line_breaks_kept[path] = _KeptLineBreaks(searched, found, settled)
    return {"loneCarriageReturns": found}


def _settled_since(path: str, searched: SearchedFile, started: int) -> bool:
    """Whether the file, as ``searched`` found it, had not changed lately when the search began at
    ``started`` (ns), and is still so."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return cache_dir.identity(st) == searched.identity and not cache_dir.changed_lately(st, started)


def _file_identity(path: str) -> cache_dir.Identity | None:
    try:
        return cache_dir.identity(os.stat(path))
    except (OSError, ValueError):
        return None


def _path(manager: Any, p: P.GetPathParams) -> Any:
    try:
        return get_path(manager, P.opt(p.entry_id), p.descend, p.offset, p.limit)
    except RootNotFoundError as error:
        raise PiRpcError(ENTRY_NOT_FOUND, str(error), {error.param: error.root_id}) from None


# what to ask for instead of a path, or of what is built from one, that is too large for one reply
_PATH_IN_PAGES = "ask for the path in pages: pi/getPath with `offset` and `limit` (and `entryId`)"


def _branch(manager: Any, p: P.GetBranchParams) -> Any:
    branch = manager.get_branch(P.opt(p.from_id))
    refuse_past_max(reply_bytes(manager, branch), _PATH_IN_PAGES)
    return branch


def _children(manager: Any, p: P.GetChildrenParams) -> Any:
    children = manager.get_children(P.opt(p.parent_id))
    refuse_past_max(
        reply_bytes(manager, children),
        "ask for the children as tree nodes (no bodies): pi/getTree with `rootId` and `depth`, then "
        "pi/getEntry for the entries wanted",
    )
    return children


def _context_entries(manager: Any, leaf_id: Any) -> Any:
    if leaf_id is UNSET:
        entries = manager.build_context_entries()
    else:
        entries = build_context_entries(manager.get_entries(), leaf_id, manager.by_id)
    refuse_past_max(reply_bytes(manager, entries), _PATH_IN_PAGES)
    return entries


def _context_within_bounds(manager: Any, leaf_id: Any, copies: int) -> Any:
    """The path to the leaf (``leaf_id``: that one) and its context entries, from which the context
    is built; TooLarge, before it is built, when its messages (``copies`` times over) would be more
    than a reply holds: the messages are those of the context entries, a part of each entry."""
    selection = manager.context_selection(P.opt(leaf_id))
    refuse_past_max(reply_bytes(manager, selection.entries, copies), _PATH_IN_PAGES)
    return selection


def _context(manager: Any, p: P.SessionContextParams) -> Any:
    context = manager.build_session_context_of(_context_within_bounds(manager, p.leaf_id, 1))
    if p.format == "json":
        return context
    # imported here (as the statistics are, _stats): the server's start imports only what an
    # editor's first requests use, which it waits for from the spawn
    from pi_session_server.render.context_markdown import context_markdown, context_title

    file = manager.get_session_file() if manager.is_persisted() else None
    title = context_title(os.path.basename(file) if isinstance(file, str) else None, P.opt(p.leaf_id))
    return {"markdown": context_markdown(context, title)}


def _stats(manager: Any) -> Any:
    from .session_stats import session_stats  # here: see _context

    return session_stats(manager)


def _projection(manager: Any, leaf_id: Any) -> Any:
    # each message twice (per entry, then all of them), and each entry as it is stored
    return manager.build_session_projection_of(_context_within_bounds(manager, leaf_id, 3))


def register(server: PiSessionServer) -> None:
    def tree_and_keep(manager: Any, p: P.GetTreeParams) -> Any:
        try:
            return _tree_reply(manager, p)
        finally:
            with _preview_caches_lock:
                cache = _preview_caches.get(manager)
            if cache is not None:
                server.preview_keeper.later(cache, manager.get_entries)

    def read(name: str, struct: type[Any], job: Any, refuse: Callable[[Any], object] | None = None) -> None:
        """``refuse``: raises for params that cannot go together, checked as the request arrives
        (a -32602 whatever session or file the request names, as the schema has it)."""

        def handler(params: Any) -> Any:
            p = P.parse(params, struct)
            if refuse is not None:
                refuse(p)
            return server.session_call(p, lambda m: job(m, p))

        handler.__name__ = name.replace("/", "_")
        server.connection.route(name)(handler)

    read("pi/getTree", P.GetTreeParams, tree_and_keep, _tree_window)
    read("pi/getBranch", P.GetBranchParams, _branch)
    read("pi/getPath", P.GetPathParams, _path)

    def stats_and_keep(manager: Any, _p: P.SessionParams) -> Any:
        with server.index_keeper.after_reply():  # the turns read are kept once the server is quiet
            return _stats(manager)

    read("pi/getStats", P.SessionParams, stats_and_keep)
    read("pi/getChildren", P.GetChildrenParams, _children)
    read("pi/getEntry", P.GetEntryParams, lambda m, p: _or_null(m.get_entry(P.opt(p.id))))
    read("pi/getEntries", P.GetEntriesParams, _entries_page, _refuse_since_with_offset)
    read("pi/getEntryAtLine", P.GetEntryAtLineParams, lambda m, p: _entry_at_line(m, p.line))
    read("pi/getLineBreaks", P.SessionParams, lambda m, _p: _line_breaks(m))
    read(
        "pi/getLeaf",
        P.SessionParams,
        lambda m, _p: {"leafId": m.get_leaf_id(), "entry": _or_null(m.get_leaf_entry())},
    )
    read("pi/getLabel", P.GetLabelParams, lambda m, p: _or_null(m.get_label(P.opt(p.id))))
    read("pi/getSessionName", P.SessionParams, lambda m, _p: _or_null(m.get_session_name()))
    read("pi/getHeader", P.SessionParams, lambda m, _p: m.get_header())
    read("pi/buildContextEntries", P.ContextParams, lambda m, p: _context_entries(m, p.leaf_id))
    read("pi/buildSessionContext", P.SessionContextParams, _context)
    read("pi/buildSessionProjection", P.ContextParams, lambda m, p: _projection(m, p.leaf_id))
    read("pi/getEntryCount", P.SessionParams, lambda m, _p: m.get_entry_count())

    @server.connection.route("pi/getInfo")
    def pi_get_info(params: Any) -> Any:
        p = P.parse(params, P.SessionParams)
        return server.session_call(p, lambda _m: None, convert=lambda _, slot: server.slot_info(slot))
