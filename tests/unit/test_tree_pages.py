"""pi/getTree pages cut from a kept walk (server/tree_pages.py): every page is what a fresh walk of
the session as it is now gives, the walk is made once per paging run, and it is let go when it
cannot be asked for again (last page, other options, a changed session, idle, no weak reference).
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_protocol_tree_filters import EXAMPLE, calls_of, random_session

from pi_session_server.server import methods_read, tree_pages
from pi_session_server.server import params as P
from pi_session_server.server.tree_flat_form import window_tree
from pi_session_server.server.tree_view import encode_flat_tree_view, flat_tree
from pi_session_server.server.tree_window import TreeWindow
from pi_session_server.session import SessionManager, entry_facts, preview_cache


def request(m: SessionManager, **params: Any) -> dict[str, Any]:
    """One pi/getTree reply as the sidecar makes it (the handler's job, without the transport)."""
    p = P.parse({"session": "s", **params}, P.GetTreeParams)
    reply = methods_read._tree(m, p)
    return json.loads(bytes(reply))


def fresh(m: SessionManager, offset: int, limit: int, **options: Any) -> dict[str, Any]:
    """The same page from a walk of its own (the library's tree made anew, nothing kept)."""
    window = TreeWindow(offset=offset, limit=limit, paged=True)
    return json.loads(encode_flat_tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, window=window, **options))


@pytest.fixture
def session(tmp_path: Path) -> SessionManager:
    path = tmp_path / "random.jsonl"
    random_session(random.Random(7), path)
    m = SessionManager.open(str(path))
    assert m.entry_count() > 30
    return m


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every walk the handler makes."""
    made: list[Any] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        tree = window_tree(*args, **kwargs)
        made.append(tree)
        return tree

    monkeypatch.setattr(methods_read, "window_tree", counting)
    monkeypatch.setattr(methods_read, "_tree_pages", tree_pages.FlatTreePages())
    monkeypatch.setattr(methods_read, "_tree_shapes", tree_pages.FlatTreePages())
    return made


VIEWS = [
    {"filter": "none", "previews": False},
    {"filter": "default", "previews": True, "activeBranchFirst": True},
    {"filter": "no-tools", "previews": True, "search": "a"},
]


def _library_options(view: dict[str, Any]) -> dict[str, Any]:
    return {
        "mode": view["filter"],
        "previews": view["previews"],
        "active_branch_first": view.get("activeBranchFirst", False),
        "search": view.get("search"),
    }


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v["filter"])
def test_pages_of_one_run_come_from_one_walk_and_equal_fresh_pages(
    session: SessionManager, walks: list[Any], view: dict[str, Any]
) -> None:
    offset: int | None = 0
    count = 0
    while offset is not None:
        page = request(session, form="flat", offset=offset, limit=7, **view)
        assert page == fresh(session, offset, 7, **_library_options(view))
        offset = page.get("nextOffset")
        count += 1
    assert count > 2 and len(walks) == 1
    assert methods_read._tree_pages.kept(session) is None  # the last page let it go


def test_a_change_between_two_pages_gives_the_next_page_of_the_changed_session(
    session: SessionManager, walks: list[Any]
) -> None:
    first = request(session, form="flat", offset=0, limit=5)
    some_id = first["nodes"][2]["id"]
    changes = [
        lambda: session.append_message({"role": "user", "content": "one more", "timestamp": 1}),
        lambda: session.branch(some_id),
        lambda: session.append_label_change(some_id, "marked"),
        lambda: session.reset_leaf(),
    ]
    for number, change in enumerate(changes, start=1):
        change()
        page = request(session, form="flat", offset=5, limit=5)
        assert page == fresh(session, 5, 5)
        assert len(walks) == 1 + number  # the kept walk was of the session before the change
        assert request(session, form="flat", offset=10, limit=5) == fresh(session, 10, 5)
        assert len(walks) == 1 + number  # ...and the new one serves the pages after it
    labelled = [n for n in request(session, form="flat", offset=0, limit=10_000)["nodes"] if n.get("label")]
    assert [n["id"] for n in labelled] == [some_id]


def test_a_failed_write_taken_back_leaves_the_kept_walk_valid(
    session: SessionManager, walks: list[Any]
) -> None:
    request(session, form="flat", offset=0, limit=5)
    with contextlib.suppress(RuntimeError), session.transaction():
        session.append_message({"role": "user", "content": "written, then taken back", "timestamp": 1})
        raise RuntimeError("the request failed after the write")
    assert request(session, form="flat", offset=5, limit=5) == fresh(session, 5, 5)
    assert len(walks) == 1


def test_other_options_or_another_window_make_a_new_walk(session: SessionManager, walks: list[Any]) -> None:
    request(session, form="flat", offset=0, limit=5)
    request(session, form="flat", offset=0, limit=5, filter="user-only")
    request(session, form="flat", offset=0, limit=5, filter="user-only", search="a")
    request(session, form="flat", offset=0, limit=5, filter="user-only", search="a", depth=2)
    root = request(session, form="flat", offset=0, limit=1)["nodes"][0]["id"]
    assert len(walks) == 5
    page = request(session, form="flat", offset=1, limit=3, rootId=root)
    assert len(walks) == 6 and page["nodes"][0]["depth"] == 1
    assert request(session, form="flat", offset=4, limit=3, rootId=root)["nodes"][0]["depth"] >= 1
    assert len(walks) == 6


def test_walks_per_options_keep_the_most_recently_used(session: SessionManager) -> None:
    """A walk per request options, up to ``walks`` per session (two editors' views of one session,
    each its own filter); past them the least recently used is let go."""
    pages = tree_pages.FlatTreePages(walks=2)
    made: list[str] = []

    def walk(name: str) -> Any:
        made.append(name)
        return _walk(session)

    a = pages.tree(session, ("a",), lambda: walk("a"))
    b = pages.tree(session, ("b",), lambda: walk("b"))
    assert pages.tree(session, ("a",), lambda: walk("a")) is a  # (a: now the most recently used)
    assert pages.tree(session, ("b",), lambda: walk("b")) is b and made == ["a", "b"]
    pages.tree(session, ("c",), lambda: walk("c"))  # lets a go
    assert pages.kept_for(session, ("a",)) is None and pages.kept_for(session, ("b",)) is b
    assert pages.kept_for(session, ("c",)) is pages.kept(session) is not None
    pages.forget(session)
    assert pages.kept(session) is None and pages.kept_for(session, ("b",)) is None


def test_unpaged_requests_keep_nothing(session: SessionManager, walks: list[Any]) -> None:
    whole = request(session, form="flat")
    assert len(whole["nodes"]) == session.entry_count() and not walks
    assert methods_read._tree_pages.kept(session) is None


def test_an_idle_walk_is_let_go(session: SessionManager) -> None:
    # (the walks' own clock: a loaded machine's sleeps cannot make a walk idle before its time)
    now = [0.0]
    pages = tree_pages.FlatTreePages(idle_seconds=0.2, clock=lambda: now[0])
    walked = pages.tree(session, ("options",), lambda: _walk(session))
    now[0] = 0.1
    assert pages.tree(session, ("options",), lambda: _walk(session)) is walked  # used again: not idle
    now[0] = 0.25
    time.sleep(0.3)  # the sweep due 0.2 s after the walk was kept has come
    assert pages.kept(session) is walked  # 0.15 s since the last use
    now[0] = 0.31
    deadline = time.monotonic() + 5
    while pages.kept(session) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pages.kept(session) is None


def test_kept_walks_share_one_timer_thread() -> None:
    """A session pi writes to keeps a walk per state: thousands in a minute must not each hold a
    thread until they expire."""

    class Session:  # an empty session, weakly referenced as managers are
        def entry_count(self) -> int:
            return 0

        def get_leaf_id(self) -> None:
            return None

    # (idle long enough for the 2,000 walks to be made before the first goes, on a loaded machine)
    pages = tree_pages.FlatTreePages(idle_seconds=2)
    sessions = [Session() for _ in range(2_000)]
    for session in sessions:
        pages.tree(session, ("options",), lambda: ["walk"])
    # (its own timers: threads other tests of this process left may start or end meanwhile)
    timers = [
        t for t in threading.enumerate() if isinstance(t, threading.Timer) and t.function == pages._sweep
    ]
    assert len(timers) == 1
    assert all(pages.kept(session) is not None for session in sessions)
    deadline = time.monotonic() + 60
    while any(pages.kept(session) is not None for session in sessions) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(pages.kept(session) is None for session in sessions)  # each let go once idle


def test_a_walk_goes_with_its_session() -> None:
    pages = tree_pages.FlatTreePages()
    m = SessionManager.open(str(EXAMPLE), read_only=True)
    walked = _walk(m)
    pages.tree(m, ("options",), lambda: walked)
    assert len(pages._kept) == 1
    del m
    assert len(pages._kept) == 0


def test_a_manager_without_weak_references_is_walked_every_time() -> None:
    class Plain:
        __slots__ = ()

    pages = tree_pages.FlatTreePages()
    built: list[int] = []
    for _ in range(2):
        pages.tree(Plain(), ("options",), lambda: built.append(1) or None)  # type: ignore[arg-type,func-returns-value]
    assert len(built) == 2
    assert pages.kept(Plain()) is None


def _walk(m: SessionManager) -> Any:
    return flat_tree(m.get_tree(), m.get_leaf_id(), m.by_id, previews=False)


def test_a_file_rewritten_underneath_with_as_many_entries_and_the_same_leaf_is_walked_anew(
    tmp_path: Path, walks: list[Any]
) -> None:
    path = tmp_path / "rewritten.jsonl"
    header = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'

    def line(entry_id: str, parent: str | None, text: str) -> str:
        parent_json = "null" if parent is None else f'"{parent}"'
        return (
            f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
            f'"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}\n'
        )

    path.write_text(header + line("a", None, "x") + line("b", "a", "y") + line("c", "b", "z"))
    m = SessionManager.open(str(path))
    before = request(m, form="flat", offset=0, limit=2)
    assert [n["depth"] for n in before["nodes"]] == [0, 1]
    # another process rewrites it: the same ids and leaf, "b" now a second root
    path.write_text(header + line("a", None, "x") + line("b", None, "y") + line("c", "b", "z") + "\n")
    m.refresh_from_disk()
    assert m.entry_count() == 3 and m.get_leaf_id() == "c"
    after = request(m, form="flat", offset=0, limit=2)
    assert after == fresh(m, 0, 2) and [n["depth"] for n in after["nodes"]] == [0, 0]
    assert len(walks) == 2


def test_a_refused_page_keeps_nothing(
    session: SessionManager, walks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(methods_read, "MAX_TREE_NODES", 5)
    with pytest.raises(Exception, match="more than the 5 one reply may hold"):
        request(session, form="flat", offset=1)  # a page without `limit`, bigger than one reply
    assert len(walks) == 1 and methods_read._tree_pages.kept(session) is None


def test_a_page_asked_for_again_reuses_its_previews(
    session: SessionManager, walks: list[Any], monkeypatch: pytest.MonkeyPatch
):
    # an editor that draws a page again (a refresh, a scroll back) must not read its bodies again
    made = calls_of(monkeypatch, preview_cache, "preview_part")
    monkeypatch.setattr(entry_facts, "preview_part", preview_cache.preview_part)  # (counted there too)
    view = {"form": "flat", "filter": "all", "previews": True, "offset": 10, "limit": 10}
    first = request(session, **view)
    assert len(made) == 10
    again = request(session, **view)
    assert again == first and len(made) == 10 and len(walks) == 1
    assert first == fresh(session, 10, 10, mode="all", previews=True)
