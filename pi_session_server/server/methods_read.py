"""pi/getTree, pi/getBranch, pi/getChildren, pi/getEntry, pi/getEntries, pi/getLeaf, pi/getLabel,
pi/getSessionName, pi/getHeader, pi/getInfo, pi/buildContextEntries, pi/buildSessionContext."""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from pi_session_server.format.gcpause import gc_paused
from pi_session_server.format.jsvalue import ABSENT, index_key
from pi_session_server.session.context import build_context_entries
from pi_session_server.session.tree import tree_to_json

from . import params as P
from .errors import ENTRY_NOT_FOUND, PiRpcError
from .tree_view import PreviewCache, tree_view
from .wire import Clean

if TYPE_CHECKING:
    from .app import PiSessionServer


def _or_null(value: Any) -> Any:
    return None if value is ABSENT else value


def _tree(manager: Any, p: P.GetTreeParams) -> Any:
    # the walk keeps every container it makes: collections during it would find nothing
    with gc_paused():
        roots = manager.get_tree()
        if p.form == "reference":
            return tree_to_json(roots)
        return Clean(
            tree_view(
                roots,
                manager.get_leaf_id(),
                manager.by_id,
                mode=p.filter,
                form=p.form,
                search=None if p.search is UNSET else p.search,
                active_branch_first=p.active_branch_first,
                previews=p.previews,
                cache=preview_cache(manager) if p.previews else None,
            )
        )


_preview_caches: weakref.WeakKeyDictionary[Any, PreviewCache] = weakref.WeakKeyDictionary()
_preview_caches_lock = threading.Lock()


def preview_cache(manager: Any) -> PreviewCache | None:
    """The preview cache of a session (dropped with its manager); None if the manager cannot be keyed."""
    with _preview_caches_lock:
        try:
            cache = _preview_caches.get(manager)
            if cache is None:
                cache = _preview_caches[manager] = PreviewCache()
        except TypeError:  # not weakly referenceable
            return None
        return cache


def _entries_page(manager: Any, p: P.GetEntriesParams) -> dict[str, Any]:
    entries = manager.get_entries()
    start = 0
    if p.since is not UNSET:
        wanted = index_key(p.since)
        for position in range(len(entries) - 1, -1, -1):
            if index_key(entries[position].id) == wanted:
                start = position + 1
                break
        else:
            raise PiRpcError(ENTRY_NOT_FOUND, f"Entry {p.since} not found", {"since": p.since})
    end = len(entries) if p.limit is UNSET else min(len(entries), start + max(p.limit, 0))
    return {"entries": entries[start:end], "total": len(entries), "hasMore": end < len(entries)}


def _context_entries(manager: Any, leaf_id: Any) -> Any:
    if leaf_id is UNSET:
        return manager.build_context_entries()
    return build_context_entries(manager.get_entries(), leaf_id, manager.by_id)


def _context(manager: Any, leaf_id: Any) -> Any:
    if leaf_id is UNSET:
        return manager.build_session_context()
    return manager.build_session_context_at(leaf_id)


def register(server: PiSessionServer) -> None:
    def read(name: str, struct: type[Any], job: Any, *, heavy: bool = False) -> None:
        async def handler(params: Any) -> Any:
            p = P.parse(params, struct)
            return await server.session_call(p, lambda m: job(m, p), heavy=heavy)

        handler.__name__ = name.replace("/", "_")
        server.feature(name)(handler)

    read("pi/getTree", P.GetTreeParams, _tree, heavy=True)
    read("pi/getBranch", P.GetBranchParams, lambda m, p: m.get_branch(P.opt(p.from_id)), heavy=True)
    read("pi/getChildren", P.GetChildrenParams, lambda m, p: m.get_children(P.opt(p.parent_id)), heavy=True)
    read("pi/getEntry", P.GetEntryParams, lambda m, p: _or_null(m.get_entry(P.opt(p.id))))
    read("pi/getEntries", P.GetEntriesParams, _entries_page, heavy=True)
    read(
        "pi/getLeaf",
        P.SessionParams,
        lambda m, p: {"leafId": m.get_leaf_id(), "entry": _or_null(m.get_leaf_entry())},
    )
    read("pi/getLabel", P.GetLabelParams, lambda m, p: _or_null(m.get_label(P.opt(p.id))))
    read("pi/getSessionName", P.SessionParams, lambda m, p: _or_null(m.get_session_name()))
    read("pi/getHeader", P.SessionParams, lambda m, p: m.get_header())
    read("pi/buildContextEntries", P.ContextParams, lambda m, p: _context_entries(m, p.leaf_id), heavy=True)
    read("pi/buildSessionContext", P.ContextParams, lambda m, p: _context(m, p.leaf_id), heavy=True)

    @server.feature("pi/getInfo")
    async def pi_get_info(params: Any) -> Any:
        p = P.parse(params, P.SessionParams)
        slot = await server.resolve(p)
        return await server.session_call(p, lambda m: server.slot_info(slot))
