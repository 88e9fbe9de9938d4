"""pi/getTree windows of a subtree (``rootId``) cut without the whole tree: the top found by its id
(the tree's own lookup, or the index's rows), the leaf's path and the path to ``aroundId`` from
``getBranch``, the tool calls kept with the session. Every answer must be, byte for byte, the one
the whole tree gives: the library's tree as a plain list (nodes found by walking it or an index of
every node, paths walked up entry by entry), as pi/getTree answered before.

Sessions: the conformance fixtures, random chats with branches, labels and duplicate call ids,
sessions with duplicate ids, orphans and several roots, each also reopened from its index (the
tree of its rows), and an in-memory session (entries without lines).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_protocol_tree_filters import EXAMPLE, random_session

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server import methods_read
from pi_session_server.server import params as P
from pi_session_server.server.errors import MAX_TREE_NODES, PiRpcError
from pi_session_server.server.library_tree import shown_tree
from pi_session_server.server.tree_flat_form import encode_flat_page, window_tree
from pi_session_server.server.tree_following import tree_shape
from pi_session_server.server.tree_tool_calls import CallReading
from pi_session_server.server.tree_view import encode_flat_tree_view, tree_view
from pi_session_server.server.tree_window import RootNotFoundError, TreeTooLargeError, walk_nodes
from pi_session_server.server.wire import encode_result
from pi_session_server.session import SessionManager, cache_dir, scan_index
from pi_session_server.session.tree import TreeRoots

pytestmark = pytest.mark.usefixtures("files_settle_at_once")

FIXTURES = sorted((Path(__file__).parents[1] / "conformance" / "vectors" / "fixtures").rglob("*.jsonl"))
SERVER = "pi_session_server.server"
HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
VIEWS = [
    {"filter": "none"},
    {"filter": "default", "activeBranchFirst": True},
    {"filter": "no-tools", "activeBranchFirst": True},
    {"filter": "user-only"},
    {"filter": "labeled-only", "activeBranchFirst": True},
    {"filter": "all"},
    {"filter": "default", "search": "cache read", "activeBranchFirst": True},
]


def _windows(ids: list[Any], leaf: Any, rng: random.Random) -> list[dict[str, Any]]:
    """Windows of a subtree a tree view asks for, and others, under a few of ``ids``."""
    chosen = ids if len(ids) <= 6 else [ids[0], ids[-1], *rng.sample(ids, 4)]
    windows: list[dict[str, Any]] = []
    for root in chosen:
        elsewhere = rng.choice(ids)
        windows += [
            {"rootId": root, "depth": 1, "limit": 5},
            {"rootId": root, "chain": True, "limit": 3, "offset": 1},
            {"rootId": root, "chain": True, "limit": 2, "aroundId": leaf},
            {"rootId": root, "depth": 2, "limit": 3, "aroundId": elsewhere},
            {"rootId": root, "depth": 3},
            {"rootId": root},
            {"rootId": root, "depth": 0, "form": "nested"},
            {"rootId": root, "form": "nested", "depth": 2},
        ]
    windows += [{"rootId": "no such entry", "depth": 1, "limit": 5}, {"rootId": 7, "depth": 1}]
    return windows + _chain_pages(chosen, leaf, rng)


def _chain_pages(chosen: list[Any], leaf: Any, rng: random.Random) -> list[dict[str, Any]]:
    """Pages of chains (the top one and those under ``chosen``) at many offsets and around
    entries, as a tree view pages through a long chain: each page counts the whole chain."""
    pages: list[dict[str, Any]] = []
    for top in [{}, *({"rootId": root} for root in chosen[:3])]:
        for offset in (0, 1, 2, 5, 9, 40):
            pages.append({**top, "chain": True, "offset": offset, "limit": rng.choice((1, 2, 4))})
        pages += [
            {**top, "chain": True, "limit": 3, "aroundId": rng.choice(chosen) if chosen else "none"},
            {**top, "chain": True, "limit": 1, "aroundId": leaf},
            {**top, "chain": True, "limit": 2, "depth": 1, "offset": 1},
            {**top, "chain": True, "limit": 4, "depth": 3, "aroundId": leaf},
        ]
    return pages


def _new(m: SessionManager, params: dict[str, Any]) -> Any:
    """What the sidecar answers."""
    try:
        return encode_result(methods_read._tree(m, P.parse(params, P.GetTreeParams)))
    except PiRpcError as error:  # the error is part of the answer
        return (type(error).__name__, str(error))


def _old(m: SessionManager, params: dict[str, Any]) -> Any:
    """The answer from the whole tree, as pi/getTree gave it before: a plain list of roots (no
    node found by id), no path from getBranch but the leaf's, calls read by walking the tree."""
    p = P.parse(params, P.GetTreeParams)
    window = methods_read._tree_window(p)
    roots = list(shown_tree(m))
    assert not isinstance(roots, TreeRoots)
    view: dict[str, Any] = {
        "mode": p.filter,
        "search": None if params.get("search") is None else " ".join(P.search_words(p.search)),
        "active_branch_first": p.active_branch_first,
        "previews": p.previews,
        "cache": methods_read.preview_cache(m),
    }
    try:
        if p.form == "flat" and window.paged:
            leaf_path = m.get_branch() if m.has_unique_ids() else None
            shape = tree_shape(
                roots,
                m.get_leaf_id(),
                m.by_id,
                calls=CallReading.NEAR_EACH_RESULT,
                leaf_path=leaf_path,
                **view,
            )
            return encode_flat_page(window_tree(shape, window), window, MAX_TREE_NODES)[0]
        options = {**view, "window": window, "max_nodes": MAX_TREE_NODES}
        if p.form == "nested":
            return encode_result(tree_view(roots, m.get_leaf_id(), m.by_id, form="nested", **options))
        return encode_flat_tree_view(roots, m.get_leaf_id(), m.by_id, **options)
    except TreeTooLargeError as error:
        return ("PiRpcError", str(error))
    except RootNotFoundError as error:
        return ("PiRpcError", str(error))


def _same_answers(new: SessionManager, old: SessionManager, seed: int) -> int:
    """Compare every window of every view on ``new`` with the whole tree's answer on ``old`` (the
    same file, or the same manager); the number of windows compared."""
    rng = random.Random(seed)
    ids = [e.id for e in old.get_entries() if e.id is not ABSENT]
    windows = _windows(ids, old.get_leaf_id(), rng)
    compared = 0
    for view in VIEWS:
        for window in windows:
            params = {"form": "flat", **view, **window}
            answer = _new(new, params)
            expected = _old(old, params)
            if isinstance(expected, tuple):  # an error: the same words
                assert isinstance(answer, tuple) and answer[1] == expected[1], params
            else:
                assert answer == expected, params
            compared += 1
    return compared


def _duplicate_ids(path: Path) -> Path:
    """Entries sharing ids (one node in two places), an orphan and a second root."""

    def message(entry_id: str, parent: Any, role: str, text: str, second: int) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "content": text, "timestamp": 1}
        if role == "assistant":
            body = {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"}
        return {"type": "message", "id": entry_id, "parentId": parent,
                "timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "message": body}  # fmt: skip

    lines = [
        HEADER,
        message("u0", None, "user", "hi", 1),
        message("a0", "u0", "assistant", "hello", 2),
        message("u1", "a0", "user", "cache please", 3),
        message("a1", "u1", "assistant", "read", 4),
        message("u1", "a0", "user", "again", 5),  # a second u1: the node now hangs twice
        message("a2", "u1", "assistant", "done", 6),
        message("o1", "gone", "user", "orphan", 7),
        message("r2", None, "user", "second root", 8),
        message("a3", "r2", "assistant", "cache", 9),
    ]
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    directory = tmp_path_factory.mktemp("subtrees")
    rng = random.Random(20261204)
    made = [EXAMPLE, _duplicate_ids(directory / "duplicate-ids.jsonl")]
    for i in range(6):
        path = directory / f"random-{i}.jsonl"
        random_session(rng, path)
        made.append(path)
    return [*FIXTURES, *made]


def test_every_window_of_a_subtree_is_the_whole_tree_s_answer(files: list[Path]) -> None:
    compared = 0
    for seed, path in enumerate(files):
        m = SessionManager.open(str(path), read_only=True, index=False)
        compared += _same_answers(m, m, seed)
        m.close()
    assert compared > 5000


def test_every_window_of_a_subtree_reopened_from_its_index_is_the_whole_tree_s_answer(
    files: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)
    reopened = 0
    for seed, path in enumerate(files):
        index = tmp_path / f"index-{seed}"
        SessionManager.open(str(path), read_only=True, index=str(index)).close()
        new = SessionManager.open(str(path), read_only=True, index=str(index))
        reopened += scan_index.last_outcome.read == "used" and new.row_tree() is not None
        old = SessionManager.open(str(path), read_only=True, index=False)
        _same_answers(new, old, seed)
        new.close()
        old.close()
    assert reopened >= 6  # the rows' tree answered for most sessions


def test_an_in_memory_session_s_subtrees_are_the_whole_tree_s_answer() -> None:
    rng = random.Random(7)
    m = SessionManager.in_memory()
    written: list[Any] = []
    for n in range(60):
        if written and rng.random() < 0.2:
            m.branch(rng.choice(written))  # the next entry starts a branch there
        message = {"role": "user", "content": f"cache m{n}", "timestamp": n}
        written.append(m.append_message(message))
    assert all(e.line < 0 for e in m.get_entries())
    assert _same_answers(m, m, 7) > 300


def test_a_subtree_window_finds_its_top_without_walking_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No node index, no walk of the whole tree: the top comes from the tree's lookup by id, the
    paths from getBranch (without previews: a tool result whose call is not above it reads every
    call of the session, from a walk of the whole tree, once)."""
    path = tmp_path / "chat.jsonl"
    random_session(random.Random(3), path)
    m = SessionManager.open(str(path), read_only=True, index=False)
    users = [e.id for e in m.get_entries() if e.type == "message" and e.role == "user"]
    root = users[len(users) // 2]  # (shown by every filter below)
    walked: list[int] = []
    walk = walk_nodes
    for walks in ("tree_shape", "tree_tool_calls"):  # (the modules that walk the whole tree)
        monkeypatch.setattr(f"{SERVER}.{walks}.walk_nodes", lambda roots: walked.append(1) or walk(roots))
    monkeypatch.setattr(f"{SERVER}.tree_shape.find_node", lambda *a: pytest.fail("the tree was searched"))
    monkeypatch.setattr(
        f"{SERVER}.tree_shape.active_path_ids", lambda *a: pytest.fail("a path was walked up entry by entry")
    )
    for window in ({"rootId": root, "depth": 1, "limit": 5}, {"rootId": root, "chain": True, "limit": 3}):
        for view in (
            {"filter": "default", "activeBranchFirst": True, "previews": False},
            {"previews": False},
        ):
            assert json.loads(_new(m, {"form": "flat", **view, **window}))["nodes"][0]["id"] == root
    around = {"rootId": root, "depth": 1, "aroundId": root, "limit": 2, "previews": False}
    assert json.loads(_new(m, around))["aroundIndex"] == 0
    assert walked == []


def test_the_entries_in_walk_order_are_those_a_walk_of_the_tree_meets(files: list[Path]) -> None:
    """TreeRoots.in_walk_order (the order the session's tool calls are read in) is the walk's."""
    told = 0
    for path in files:
        m = SessionManager.open(str(path), read_only=True, index=False)
        roots = m.get_tree()
        assert isinstance(roots, TreeRoots)
        if roots.in_walk_order is not None:
            walked = [node.entry for node in walk_nodes(roots)]
            assert [id(e) for e in roots.in_walk_order()] == [id(e) for e in walked], path
            told += 1
        m.close()
    assert told >= len(files) // 2
