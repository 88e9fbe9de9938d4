"""pi/getTree pages from one walk of the tree: the walk is kept while a front end pages through it.

Both editor clients read a tree in pages of 50,000 nodes, one request after another. Each page used to
make the library's tree, the filter, the leaf's path and the tool calls anew and walk the whole tree
again (to count it and to reach the page), so every page cost as much as the first
(``bench/bench_tree_pages.py``; figures in ``bench/RESULTS.md``). Now the first page walks once
(``tree_flat_form.FlatTree``) and the pages after it are slices of that walk.

What is kept is a walk per session and request options (one, or a few: ``walks``, the least
recently used let go past them), and only while it can be asked for again: it is dropped once the
last page was served, when the session has changed (an append, a reload, a branch: anything that
changes the entry list or the leaf; a label or a name is an appended entry too), after
:data:`IDLE_SECONDS` without a request for it, and with the session. With one walk per session
(the pages of a request), another window or filter asked for lets it go; with a few (a tree view's
shape: two views of a session with other filters, in two editors), each view keeps its own. A walk
holds the library's tree of the session (shared) plus a row per shown node (about what one request
of the whole tree peaked at before).

A walk that knows how to take in appended entries (the library's tree, a tree view's shape: see
:meth:`FlatTreePages.tree`) is followed instead of dropped when the session only had entries
appended since (pi writing it): a tree view that reloads after each turn pi writes does not
pay for the whole session each time.

A page also tells the client which state of the session it was cut from (:class:`Revisions`): a
client that pages on with that revision is refused once the session changed, instead of joining
pages of two trees. A tree view that holds the levels of a revision asks what changed since it
(``tree_since``), which a followed walk tells.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .params import id_key

IDLE_SECONDS = 60.0
Walk = TypeVar("Walk")


def session_state(manager: Any) -> tuple[int, Any, tuple[type, str]]:
    """What a walk of the tree depends on besides the request's options: the entry list (its
    length and its last entry: appends add, a failed write taken back removes, a reload or another
    session replaces every entry) and the leaf. The caller keeps the last entry alive, so a
    comparison by identity cannot meet a new object at a recycled address."""
    count = manager.entry_count()
    last = manager.entries_slice(count - 1, count) if count else []
    leaf = manager.get_leaf_id()
    return count, last[0] if last else None, id_key(leaf)


def entries_state(manager: Any) -> tuple[int, Any, tuple[type, str]]:
    """:func:`session_state` without the leaf: what a walk that does not depend on the leaf (the
    library's tree) depends on. A branch (pi's ``/tree``, "Branch Here") keeps such a walk."""
    count, last, _leaf = session_state(manager)
    return count, last, _NO_LEAF


_NO_LEAF = id_key(None)


def _weakly_referenced(manager: Any) -> bool:
    """Whether a walk can be kept for ``manager`` (kept by weak reference: it goes with it)."""
    try:
        weakref.ref(manager)
    except TypeError:
        return False
    return True


def same_state(a: tuple[int, Any, Any], b: tuple[int, Any, Any]) -> bool:
    return same_entries(a, b) and a[2] == b[2]


def same_entries(a: tuple[int, Any, Any], b: tuple[int, Any, Any]) -> bool:
    """Whether two states of a session (:func:`session_state`) have the same entries: at most the
    leaf moved (a branch, a reset of the leaf)."""
    return a[0] == b[0] and a[1] is b[1]


class Revisions:
    """A token per state of a session (:func:`session_state`): what a page of its tree was cut
    from. A client paging through the tree sends back the first page's token; a page asked with a
    token that is no longer the session's would be of another tree (pi appended meanwhile).

    Tokens are never given twice in a process: a session closed and opened again starts anew. A
    state the session comes back to (a failed write taken back) keeps its token if no request saw
    the state in between; else it gets a new one (the client loads its tree again, needlessly but
    never wrongly)."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._kept: weakref.WeakKeyDictionary[Any, tuple[tuple[int, Any, Any], str]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def current(self, manager: Any) -> str:
        """The token of the session as it is now."""
        state = session_state(manager)
        with self._lock:
            try:
                kept = self._kept.get(manager)
            except TypeError:  # a manager that cannot be weakly referenced: a token of its state's values
                return f"{state[0]}:{state[2][1]}"
            if kept is not None and same_state(kept[0], state):
                return kept[1]
            token = str(next(self._numbers))
            self._kept[manager] = (state, token)
            return token


@dataclass
class _Kept(Generic[Walk]):
    options: tuple[Any, ...]
    state: tuple[int, Any, Any]
    tree: Walk
    used: float

    def fits(self, options: tuple[Any, ...], state: tuple[int, Any, Any]) -> bool:
        """Whether this walk is the one for ``options`` of the session in ``state``."""
        return self.options == options and same_state(self.state, state)


def appended_since(manager: Any, before: tuple[int, Any, Any], now: tuple[int, Any, Any]) -> list[Any] | None:
    """The entries appended to the session between two of its states (:func:`session_state`), when
    the later state is the earlier one with entries appended (the entry that was last is still
    there, the very object, followed by more); None otherwise (a reload, a truncation: entries
    made anew; no entry added)."""
    count, last = before[0], before[1]
    if count == 0 or now[0] <= count:
        return None
    still = manager.entries_slice(count - 1, count)
    if not still or still[0] is not last:
        return None
    appended: list[Any] = manager.entries_slice(count, now[0])
    return appended


def _followed(
    manager: Any,
    kept: _Kept[Walk],
    state: tuple[int, Any, Any],
    follow: Callable[[Walk, list[Any]], Walk | None] | None,
) -> Walk | None:
    """The kept walk followed to the session's ``state`` (see :meth:`FlatTreePages.tree`), or None."""
    own = getattr(kept.tree, "followed", None)
    if follow is None and own is None:
        return None
    appended = appended_since(manager, kept.state, state)
    if appended is None and own is not None and follow is None and same_entries(kept.state, state):
        appended = []  # the leaf moved alone: the walk's own ``followed`` takes that in too
    if appended is None:
        return None
    if follow is not None:
        return follow(kept.tree, appended)
    assert own is not None
    followed: Walk | None = own(manager, appended)
    return followed


class FlatTreePages(Generic[Walk]):
    """The kept walks, up to ``walks`` per session (manager), one per request options, shared by the
    thread pool's requests.

    A walk is a :class:`~.tree_flat_form.FlatTree` for pi/getTree; the conversation view's pages
    (``path_view``) keep theirs in an instance of their own, so the two never evict each other."""

    def __init__(
        self,
        idle_seconds: float = IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        state: Callable[[Any], tuple[int, Any, Any]] = session_state,
        walks: int = 1,
    ) -> None:
        self.idle_seconds = idle_seconds
        self.walks = max(1, walks)
        self._clock = clock
        self._state = state  # what the walks depend on (:func:`session_state`, :func:`entries_state`)
        # each session's walks by options, the least recently used first
        self._kept: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], _Kept[Walk]]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._sweep_pending = False  # one timer lets go of every idle walk (see _sweep_later)

    def tree(
        self,
        manager: Any,
        options: tuple[Any, ...],
        build: Callable[[], Walk],
        follow: Callable[[Walk, list[Any]], Walk | None] | None = None,
    ) -> Walk:
        """The walk for ``options`` of the session as it is now: the kept one, or ``build()`` kept.

        A walk kept for the same options of an earlier state of the session that only had entries
        appended since (pi writing it) is followed instead when it can be: ``follow(walk,
        appended)``, or the walk's own ``followed(manager, appended)``, gives the walk of the new
        state made from the kept one (which it may change: it is not kept any more), or None (then
        ``build()``)."""
        if not _weakly_referenced(manager):  # nothing kept
            return build()
        found = self._kept_or_followed(manager, options, follow)
        if found is not None:
            return found
        with self._lock:  # not held past the bound while building (one walk: none)
            walks = self._kept.get(manager)
            while walks and len(walks) >= self.walks:
                del walks[next(iter(walks))]
        tree = build()
        self._keep(manager, options, self._state(manager), tree)
        return tree

    def kept_for(self, manager: Any, options: tuple[Any, ...]) -> Walk | None:
        """The walk :meth:`tree` would give for ``options`` without building one, if kept (or
        followed from the one kept)."""
        if not _weakly_referenced(manager):  # never kept
            return None
        return self._kept_or_followed(manager, options, None)

    def _kept_or_followed(
        self,
        manager: Any,
        options: tuple[Any, ...],
        follow: Callable[[Walk, list[Any]], Walk | None] | None,
    ) -> Walk | None:
        state = self._state(manager)
        with self._lock:
            walks = self._kept.get(manager)
            kept = None if walks is None else walks.pop(options, None)
            if walks is None or kept is None:
                return None
            if kept.fits(options, state):
                kept.used = self._clock()
                walks[options] = kept  # the most recently used now
                return kept.tree
            # another state's: not kept past this, followed or not
        tree = _followed(manager, kept, state, follow)
        if tree is not None:
            self._keep(manager, options, state, tree)
        return tree

    def _keep(
        self,
        manager: Any,
        options: tuple[Any, ...],
        state: tuple[int, Any, Any],
        tree: Walk,
    ) -> None:
        kept = _Kept(options, state, tree, self._clock())
        with self._lock:
            walks = self._kept.setdefault(manager, {})
            walks.pop(options, None)
            walks[options] = kept
            while len(walks) > self.walks:
                del walks[next(iter(walks))]
            self._sweep_later(self.idle_seconds)

    def forget(self, manager: Any) -> None:
        """Drop the session's walks (its last page was served)."""
        with self._lock, contextlib.suppress(TypeError):  # TypeError: never kept (no weak reference)
            self._kept.pop(manager, None)

    def kept(self, manager: Any) -> Walk | None:
        """The walk kept for the session that was used last, if any."""
        with self._lock, contextlib.suppress(TypeError):
            walks = self._kept.get(manager)
            return walks[next(reversed(walks))].tree if walks else None
        return None

    def _sweep_later(self, delay: float) -> None:
        """(Under the lock.) A sweep of the idle walks in ``delay`` seconds, unless one is pending:
        a walk is kept for as long after its last use as any kept before it, so the pending sweep
        comes first, and each sweep starts the next one for the walk due first. One timer thread
        at a time, however many walks a session pi writes to keeps in a minute."""
        if self._sweep_pending:
            return
        timer = threading.Timer(delay, self._sweep)
        timer.daemon = True
        timer.start()
        self._sweep_pending = True

    def _sweep(self) -> None:
        """Let go of the walks idle for :attr:`idle_seconds`; the next sweep when the first of
        the others is due."""
        with self._lock:
            self._sweep_pending = False
            now = self._clock()
            first_due: float | None = None
            for manager, walks in list(self._kept.items()):
                for options, kept in list(walks.items()):
                    left = self.idle_seconds - (now - kept.used)
                    if left <= 0:
                        del walks[options]
                    elif first_due is None or left < first_due:
                        first_due = left
                if not walks:
                    del self._kept[manager]
            if first_due is not None:
                self._sweep_later(first_due)
