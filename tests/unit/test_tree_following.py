"""A tree view that follows a session pi is writing answers as a fresh server would.

The server keeps the library's tree of a session and the shape of a tree view's windows (filter
answers, shown children, the leaf's path) per state of the session; when pi appends entries, the
kept ones are grown by the new entries instead of made anew where that gives the same tree
(``session.tree.grown_tree``, ``FollowingTreeShape.followed``), and made anew otherwise (a rewrite, a
truncation, a new root, duplicate ids...).

Every session here is written a turn (a chunk of lines) at a time to a file a manager follows
(``refresh_from_disk``, as the server's poller does), and after each step every answer of
pi/getTree (the tree view's windows and levels under each filter, search, ``rootId``,
``activeBranchFirst``, the pages of the whole tree, the nested form) is compared byte for byte
with the answers for a manager opened afresh on the same file.
"""

from __future__ import annotations

import glob
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import builders as S
import msgspec
import pytest
from test_protocol_tree_filters import random_session
from test_tree_view_keeping import _branchy_session

from pi_session_server.server import library_tree, methods_read
from pi_session_server.server import params as P
from pi_session_server.server.errors import PiRpcError
from pi_session_server.server.raw_parts import RawParts
from pi_session_server.session import SessionManager

VECTORS = Path(__file__).resolve().parents[1] / "conformance" / "vectors"
MAX_STEPS = 10
# (filter, activeBranchFirst, search): a followed manager each (one view's shape is kept at a time)
VIEWS = [
    *((mode, True, None) for mode in ("none", "default", "no-tools", "user-only", "labeled-only", "all")),
    ("default", False, None),
    ("no-tools", False, None),
    ("default", True, "e"),
]


def _answer(manager: SessionManager, params: dict[str, Any]) -> bytes:
    try:
        result = methods_read._tree(manager, msgspec.convert(params, P.GetTreeParams))
    except PiRpcError as error:
        return f"error {error.code} {error}".encode()
    if isinstance(result, (msgspec.Raw, RawParts)):  # (a levels reply: its parts)
        return bytes(result)
    return msgspec.json.encode(result)


def _window_answers(
    manager: SessionManager, view: tuple[str, bool, str | None], ids: list[Any]
) -> list[bytes]:
    """What a tree view asks (its windows share one kept shape): the top level, the levels down
    to the leaf and to other entries, a node's branches and chain, a page around an entry."""
    base = _flat(view)
    answers = [_answer(manager, {**base, "chain": True, "offset": 0, "limit": 200})]
    # pages further down the top chain: each says how long the chain grew
    answers += [_answer(manager, {**base, "chain": True, "offset": at, "limit": 2}) for at in (1, 4, 9)]
    leaf = manager.get_leaf_id()
    for around in [leaf, *ids]:
        if around is None:
            continue
        answers.append(_answer(manager, {**base, "levels": True, "aroundId": around, "limit": 4}))
        answers.append(_answer(manager, {**base, "chain": True, "aroundId": around, "offset": 0, "limit": 3}))
    for root in ids:
        answers.append(_answer(manager, {**base, "rootId": root, "depth": 1, "offset": 0, "limit": 50}))
        answers.append(_answer(manager, {**base, "rootId": root, "chain": True, "offset": 0, "limit": 50}))
        answers.append(_answer(manager, {**base, "rootId": root, "chain": True, "offset": 3, "limit": 2}))
    if leaf is not None:  # last, as a tree view opens on the leaf: what the next state starts from
        # again (the levels kept, as encoded), with other pages, and as before
        answers += [_answer(manager, _leaf_levels(base, leaf, limit)) for limit in (4, 4, 2, 4)]
    return answers


def _flat(view: tuple[str, bool, str | None]) -> dict[str, Any]:
    """The params of a tree view's windows of ``view``."""
    mode, first, search = view
    base: dict[str, Any] = {
        "uri": "file:///followed",
        "filter": mode,
        "form": "flat",
        "activeBranchFirst": first,
    }
    if search is not None:
        base["search"] = search
    return base


def _leaf_levels(base: dict[str, Any], leaf: Any, limit: int = 4) -> dict[str, Any]:
    return {**base, "levels": True, "aroundId": leaf, "limit": limit}


def _rows_made(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The entries whose tree-view rows are made from now on, in order (recorded, still made)."""
    from pi_session_server.server.tree_shape import TreeShape

    made: list[Any] = []
    node = TreeShape.node
    monkeypatch.setattr(TreeShape, "node", lambda self, n, *a: made.append(n) or node(self, n, *a))
    return made


def _asked_alone(path: Path, params: dict[str, Any]) -> bytes:
    """The answer of a server that was asked nothing else."""
    manager = SessionManager.open(str(path))
    try:
        return _answer(manager, params)
    finally:
        manager.close()


def _whole_answers(manager: SessionManager, view: tuple[str, bool, str | None]) -> list[bytes]:
    """The whole tree: pages of the flat form, the nested form, a nested subtree."""
    mode, first, search = view
    base: dict[str, Any] = {"uri": "file:///followed", "filter": mode, "activeBranchFirst": first}
    if search is not None:
        base["search"] = search
    return [
        _answer(manager, {**base, "form": "flat", "offset": 0, "limit": 7}),
        _answer(manager, {**base, "form": "flat"}),
        _answer(manager, {**base, "form": "nested"}),
    ]


def _ids_of(lines: list[str]) -> list[Any]:
    ids = []
    for line in lines:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):  # a damaged line, a deeply nested one
            continue
        if isinstance(value, dict) and value.get("type") != "session" and "id" in value:
            ids.append(value["id"])
    return ids


def _steps(lines: list[str], rng: random.Random) -> list[list[str]]:
    """The entry lines in turns (a chunk from each user message to the next), at most
    :data:`MAX_STEPS` of them (neighbours joined), the first two lines... at once."""
    chunks: list[list[str]] = []
    for line in lines:
        if not chunks or '"role":"user"' in line.replace(" ", ""):
            chunks.append([])
        chunks[-1].append(line)
    while len(chunks) > MAX_STEPS:
        at = rng.randrange(len(chunks) - 1)
        chunks[at : at + 2] = [chunks[at] + chunks[at + 1]]
    return chunks


def _follow_and_compare(tmp_path: Path, lines: list[str], seed: int = 0) -> int:
    """Write ``lines`` (a header, then entries) a turn at a time to a file the managers of every
    view follow; after each turn compare their answers with a fresh manager's. The number of
    states compared."""
    rng = random.Random(seed)
    path = tmp_path / "followed.jsonl"
    turns = 0
    for turn, managers, written in _followed_turns(path, lines, rng, 2 * len(VIEWS)):
        turns += 1
        windows, whole = managers[: len(VIEWS)], managers[len(VIEWS) :]
        ids = _ids_of(written)
        picked = rng.sample(ids, min(3, len(ids)))
        for view, followed, followed_whole in zip(VIEWS, windows, whole, strict=True):
            fresh = SessionManager.open(str(path))
            assert followed.get_leaf_id() == fresh.get_leaf_id()
            expected = _window_answers(fresh, view, picked)
            answers = _window_answers(followed, view, picked)
            assert answers == expected, (turn, view)
            if followed.get_leaf_id() is not None:  # (what a followed view asks after each append)
                alone = _asked_alone(path, _leaf_levels(_flat(view), followed.get_leaf_id()))
                assert answers[-1] == alone, (turn, view)
            expected_whole = _whole_answers(fresh, view)
            assert _whole_answers(followed_whole, view) == expected_whole, (turn, view)
    return turns


def _followed_turns(
    path: Path, lines: list[str], rng: random.Random, followers: int
) -> Iterator[tuple[int, list[SessionManager], list[str]]]:
    """Write ``lines`` (a header, then entries) to ``path`` a turn at a time (:func:`_steps`),
    followed by ``followers`` managers opened on the first turn: after each turn is written and
    the managers refreshed, its number, the managers and the lines written so far."""
    steps = _steps(lines[1:], rng)
    path.write_text(lines[0] + "\n" + "\n".join(steps[0]) + "\n", encoding="utf-8")
    managers = [SessionManager.open(str(path)) for _ in range(followers)]
    written = list(steps[0])
    for turn, step in enumerate(steps):
        if turn:
            with path.open("a", encoding="utf-8") as file:
                file.write("\n".join(step) + "\n")
            written += step
            for manager in managers:
                manager.refresh_from_disk()
        yield turn, managers, written


def _file_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def _vector_sessions() -> list[tuple[str, list[str]]]:
    """The session files of the conformance vectors (their first 300 lines) and of its scenarios,
    each with a header first."""
    found: list[tuple[str, list[str]]] = []
    for name in sorted(glob.glob(str(VECTORS / "**" / "*.jsonl"), recursive=True)):
        lines = _file_lines(Path(name).read_text(encoding="utf-8", errors="replace"))[:300]
        found.append((Path(name).name, lines))
    for name in sorted(glob.glob(str(VECTORS / "*.scenario.json"))):
        scenario = json.loads(Path(name).read_text(encoding="utf-8"))
        for file_name, content in (scenario.get("files") or {}).items():
            if isinstance(content, dict) and isinstance(content.get("lines"), list):
                found.append((f"{Path(name).name}:{file_name}", [str(line) for line in content["lines"]]))
        start = scenario.get("start") or {}
        args = start.get("args") or []
        if start.get("op") == "inMemory" and len(args) > 2 and isinstance(args[2], list):
            found.append((f"{Path(name).name}:inMemory", [json.dumps(value) for value in args[2]]))
    return [
        (name, lines)
        for name, lines in found
        if len(lines) > 2 and '"type":"session"' in lines[0].replace(" ", "")
    ]


VECTOR_SESSIONS = _vector_sessions()


def test_there_are_vector_sessions_to_follow() -> None:
    assert len(VECTOR_SESSIONS) >= 30


@pytest.mark.parametrize("name,lines", VECTOR_SESSIONS, ids=[name for name, _ in VECTOR_SESSIONS])
def test_a_followed_vector_session_answers_as_a_fresh_one(
    tmp_path: Path, name: str, lines: list[str]
) -> None:
    assert _follow_and_compare(tmp_path, lines) >= 1


@pytest.mark.parametrize("seed", range(12))
def test_a_followed_random_session_answers_as_a_fresh_one(tmp_path: Path, seed: int) -> None:
    source = tmp_path / "source.jsonl"
    random_session(random.Random(seed), source)
    (tmp_path / "followed").mkdir()
    _follow_and_compare(tmp_path / "followed", _file_lines(source.read_text(encoding="utf-8")), seed)


def test_a_followed_branchy_session_answers_as_a_fresh_one(tmp_path: Path) -> None:
    source = _branchy_session(tmp_path / "source.jsonl", turns=40)
    (tmp_path / "followed").mkdir()
    _follow_and_compare(tmp_path / "followed", _file_lines(source.read_text(encoding="utf-8")))


ODD_APPENDS = {
    # each: lines appended after a chat of three turns, one turn (a user message) at a time
    "a duplicate id": [S.user("t0u", "t2z", "again"), S.user("n1", "t0u", "after")],
    "an orphan": [S.user("n1", "missing", "orphan"), S.user("n2", "n1", "below it")],
    "a label on an old entry": [S.user("n1", "t2z", "next"), S.label("l1", "n1", "t0a", "old one")],
    "a label removed": [
        S.label("l1", "t2z", "t1u", "mark"),
        S.user("n1", "l1", "x"),
        S.label("l2", "n1", "t1u", None),
    ],
    "a branch summary": [S.branch_summary("b1", "t0z", "t2z"), S.user("n1", "b1", "on the branch")],
    "a compaction": [S.compaction("c1", "t2z", "t1u"), S.user("n1", "c1", "after it")],
    "a branch at an old entry": [S.user("n1", "t1a", "other way"), S.user("n2", "n1", "on")],
    # pi's /tree to an entry, then a turn: on the path, on another branch, back, at a root
    "branches back and forth": [
        S.user("n1", "t1a", "other way"),
        S.user("n2", "t2u", "from the first branch"),
        S.user("n3", "n2", "on it"),
        S.user("n4", "n1", "back on the second"),
        S.user("n5", "t2z", "below the first leaf"),
        S.user("n6", "t0u", "at the root"),
        S.assistant("n7", "n6", ""),
        S.user("n8", "t0a", "away from a silent leaf"),
    ],
    "a new root": [S.user("n1", None, "second root"), S.user("n2", "n1", "below")],
    "a silent turn then more": [
        S.user("n1", "t2z", "go"),
        S.assistant("n2", "n1", "", calls=(("c9", "read", {"path": "/q"}),)),
        S.user("n3", "n2", "and"),
    ],
    "a name": [S.session_info("s1", "t2z", "named"), S.user("n1", "s1", "after")],
    # a result whose call is in no message above it names the session's last call of its id
    "a call of an older result's id": [
        S.tool_result("n1", "t2z", "c77", "late"),
        S.user("n2", "n1", "a"),
        S.user("n3", "n2", "b"),
        S.user("n4", "n2", "c"),
        S.user("n5", "n4", "d"),
        S.assistant("n6", "n5", "", calls=(("c77", "read", {"path": "/late"}),)),
        S.user("n7", "n6", "e"),
    ],
    # the levels above the leaf's are kept: the label shows in one of them
    "a label on an entry above a branch": [
        S.user("n1", "t1z", "other way"),
        S.user("n2", "n1", "on it"),
        S.label("l1", "n2", "t0u", "early"),
        S.user("n3", "l1", "more"),
        S.label("l2", "n3", "t0u", None),
        S.label("l3", "l2", "t1u", "later"),
    ],
    "a silent turn heading a branch, then more": [
        S.assistant("n1", "t1z", ""),
        S.user("n2", "n1", "below it"),
        S.user("n3", "n2", "on"),
    ],
    "a setting as the leaf, then more": [
        S.model_change("n1", "t2z"),
        S.user("n2", "n1", "after"),
        S.model_change("n3", "n2"),
        S.model_change("n4", "n3"),
        S.user("n5", "n4", "on"),
    ],
    # the branch's head's only shown child, a silent turn, is hidden once it is not the leaf
    "a silent turn on a branch, then a setting below it": [
        S.user("n1", "t1z", "other way"),
        S.assistant("n2", "n1", ""),
        S.model_change("n3", "n2"),
        S.user("n4", "n3", "on"),
    ],
    "a cycle": [S.user("n1", "n2", "a"), S.user("n2", "n1", "b")],
}


@pytest.mark.parametrize("kind", sorted(ODD_APPENDS))
def test_a_followed_session_with_odd_appends_answers_as_a_fresh_one(tmp_path: Path, kind: str) -> None:
    chat = S.chat(3)
    # the chat whole in the first state, then each appended line a state of its own
    lines = [chat[0], "\n".join(chat[1:]), *ODD_APPENDS[kind]]
    path = tmp_path / "followed.jsonl"
    path.write_text(lines[0] + "\n" + lines[1] + "\n", encoding="utf-8")
    followed = [SessionManager.open(str(path)) for _ in VIEWS]
    for view, manager in zip(VIEWS, followed, strict=True):
        _window_answers(manager, view, ["t1u"])
    for line in lines[2:]:
        with path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
        for view, manager in zip(VIEWS, followed, strict=True):
            manager.refresh_from_disk()
            ids = ["t0u", "t1a", "t2z", *_ids_of([line])]
            assert _window_answers(manager, view, ids) == _window_answers(
                SessionManager.open(str(path)), view, ids
            )


def test_a_rewrite_or_a_truncation_between_two_states_is_not_followed(tmp_path: Path) -> None:
    chat = S.chat(4)
    path = tmp_path / "followed.jsonl"
    path.write_text("\n".join(chat[:9]) + "\n", encoding="utf-8")
    manager = SessionManager.open(str(path))
    view = ("default", True, None)
    _window_answers(manager, view, [])
    # rewritten: an answer's text changes, the file grows (a later turn)
    rewritten = [line.replace("answer 1", "ANSWER ONE") for line in chat[:13]]
    path.write_text("\n".join(rewritten) + "\n", encoding="utf-8")
    assert manager.refresh_from_disk().kind == "reloaded"
    answers = _window_answers(manager, view, ["t1z"])
    assert answers == _window_answers(SessionManager.open(str(path)), view, ["t1z"])
    assert b"ANSWER ONE" in b"".join(answers)
    # truncated to its first turn, then more written than before
    path.write_text("\n".join([*chat[:5], S.user("x1", "t0z", "elsewhere")]) + "\n", encoding="utf-8")
    manager.refresh_from_disk()
    answers = _window_answers(manager, view, ["t0z"])
    assert answers == _window_answers(SessionManager.open(str(path)), view, ["t0z"])
    assert b"elsewhere" in b"".join(answers)


def test_an_append_below_the_leaf_grows_the_kept_tree_and_shape(tmp_path: Path) -> None:
    """What makes following cheap: the nodes and the shape of the state before serve the next."""
    chat = S.chat(4)
    path = tmp_path / "followed.jsonl"
    path.write_text("\n".join(chat) + "\n", encoding="utf-8")
    manager = SessionManager.open(str(path))
    view = ("default", True, None)
    _window_answers(manager, view, [])
    tree = library_tree.library_tree(manager)
    shape = methods_read._tree_shapes.kept(manager)
    assert shape is not None
    with path.open("a", encoding="utf-8") as file:
        file.write(S.user("n1", "t3z", "more") + "\n" + S.user("n2", "n1", "and more") + "\n")
    manager.refresh_from_disk()
    _window_answers(manager, view, [])
    grown = library_tree.library_tree(manager)
    assert methods_read._tree_shapes.kept(manager) is shape
    assert grown is not tree and all(a is b for a, b in zip(grown, tree, strict=True))
    assert grown.node_of is not None and grown.node_of("n2").entry.id == "n2"
    assert shape.leaf_id == "n2" and [entry.id for entry in shape.leaf_path[-3:]] == ["t3z", "n1", "n2"]


def test_a_label_appended_below_the_leaf_is_followed(tmp_path: Path) -> None:
    """pi's /label: the kept tree and shape serve the next state, the label on the older node."""
    path = tmp_path / "followed.jsonl"
    path.write_text("\n".join(S.chat(4)) + "\n", encoding="utf-8")
    manager = SessionManager.open(str(path))
    view = ("labeled-only", True, None)
    _window_answers(manager, view, [])
    shape = methods_read._tree_shapes.kept(manager)
    with path.open("a", encoding="utf-8") as file:
        file.write(S.label("l1", "t3z", "t1u", "mark") + "\n")
    manager.refresh_from_disk()
    answers = _window_answers(manager, view, ["t1u"])
    assert methods_read._tree_shapes.kept(manager) is shape
    assert library_tree.library_tree(manager).node_of("t1u").label == "mark"
    assert answers == _window_answers(SessionManager.open(str(path)), view, ["t1u"])
    assert b'"label":"mark"' in b"".join(answers)


GROWTHS = {
    # appended lines: whether the kept tree grows by them (else it is left as it was)
    "a turn below the leaf": ([S.user("n1", "t1z", "a"), S.user("n2", "n1", "b")], True),
    "a branch at an old entry": ([S.user("n1", "t0a", "a")], True),
    "two children of a new entry": (
        [S.user("n1", "t1z", "a"), S.user("n2", "n1", "b"), S.user("n3", "n1", "c")],
        True,
    ),
    "a new root": ([S.user("n1", None, "a")], True),
    "its own parent": ([S.user("n1", "n1", "a")], False),
    "a cycle": ([S.user("n1", "n2", "a"), S.user("n2", "n1", "b")], False),
    "an orphan": ([S.user("n1", "t1z", "a"), S.user("n2", "gone", "b")], False),
    "a label": ([S.user("n1", "t1z", "a"), S.label("l1", "n1", "t0u")], True),
    "a label on an entry appended with it": ([S.user("n1", "t1z", "a"), S.label("l1", "n1", "n1")], True),
    "a label removed": (
        [S.label("l1", "t1z", "t0u"), S.user("n1", "l1", "a"), S.label("l2", "n1", "t0u", None)],
        True,
    ),
    "a label of no entry": ([S.label("l1", "t1z", "gone")], True),
    "a sibling without a time": ([S.user("n1", "t0a", "a", timestamp="not a time")], False),
}


@pytest.mark.parametrize("kind", sorted(GROWTHS))
def test_a_grown_tree_is_the_tree_built_anew_or_none_and_the_kept_tree_unchanged(
    tmp_path: Path, kind: str
) -> None:
    from pi_session_server.session.tree import grown_tree, tree_to_json

    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(S.chat(2)) + "\n", encoding="utf-8")
    manager = SessionManager.open(str(path))
    roots = manager.get_tree()
    before, count = msgspec.json.encode(tree_to_json(roots)), manager.entry_count()
    lines, grows = GROWTHS[kind]
    with path.open("a", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    manager.refresh_from_disk()
    appended = manager.entries_slice(count, manager.entry_count())
    grown = grown_tree(
        roots, appended, lambda key: (manager.get_label(key), manager.get_label_timestamp(key))
    )
    if grows:
        assert grown is not None
        assert msgspec.json.encode(tree_to_json(grown)) == msgspec.json.encode(
            tree_to_json(manager.get_tree())
        )
    else:
        assert grown is None
        assert msgspec.json.encode(tree_to_json(roots)) == before


def test_the_levels_above_the_leaf_s_are_not_encoded_again_after_an_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What makes a followed view's levels cheap: the rows of the levels kept are not made again."""

    path = _branchy_session(tmp_path / "followed.jsonl", turns=60)
    manager = SessionManager.open(str(path))
    base = _flat(("default", True, None))
    leaf = manager.get_leaf_id()
    first = _answer(manager, _leaf_levels(base, leaf, 3))
    made = _rows_made(monkeypatch)
    assert _answer(manager, _leaf_levels(base, leaf, 3)) == first and made == []
    levels = json.loads(first)["levels"]
    assert len(levels) >= 8
    with path.open("a", encoding="utf-8") as file:
        file.write(S.user("n1", leaf, "more") + "\n" + S.user("n2", "n1", "and more") + "\n")
    manager.refresh_from_disk()
    answer = _answer(manager, _leaf_levels(base, "n2", 3))
    # the last level's page again (it held the old leaf), and the new entries' rows
    assert 0 < len(made) <= len(levels[-1]["nodes"]) + 2
    assert answer == _asked_alone(path, _leaf_levels(base, "n2", 3))


def test_a_branch_elsewhere_keeps_the_shape_and_the_levels_above_the_fork(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi's /tree to an older entry, then a turn: the kept shape serves the new leaf's levels; the
    levels above the one that shows the entry branched at are not walked or encoded again."""

    path = _branchy_session(tmp_path / "followed.jsonl", turns=60)
    manager = SessionManager.open(str(path))
    base = _flat(("default", True, None))
    levels = json.loads(_answer(manager, _leaf_levels(base, manager.get_leaf_id(), 3)))["levels"]
    shape = methods_read._tree_shapes.kept(manager)
    fork = levels[-2]["nodes"][-1]["id"]  # a row of the level above the leaf's
    made = _rows_made(monkeypatch)
    with path.open("a", encoding="utf-8") as file:
        file.write(S.user("n1", fork, "another way") + "\n" + S.user("n2", "n1", "on it") + "\n")
    manager.refresh_from_disk()
    answer = _answer(manager, _leaf_levels(base, "n2", 3))
    assert methods_read._tree_shapes.kept(manager) is shape
    assert 0 < len(made) <= 3 * 4 + 2  # the last two levels' pages at most, and the new rows
    assert answer == _asked_alone(path, _leaf_levels(base, "n2", 3))


def test_a_move_of_the_leaf_alone_keeps_the_shape_and_the_levels_above_the_fork(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi/branch to an older entry, nothing appended (the editor's tree view, pi's /tree before a
    turn), and back: the kept shape serves the new leaf's levels; the levels above the one that
    shows the entry branched at are not walked or encoded again."""

    path = _branchy_session(tmp_path / "followed.jsonl", turns=60)
    manager = SessionManager.open(str(path))
    base = _flat(("default", True, None))
    leaf = manager.get_leaf_id()
    levels = json.loads(_answer(manager, _leaf_levels(base, leaf, 3)))["levels"]
    shape = methods_read._tree_shapes.kept(manager)
    fork = levels[-2]["nodes"][-1]["id"]  # a row of the level above the leaf's
    made = _rows_made(monkeypatch)
    for moved_to in (fork, leaf):
        made.clear()
        manager.branch(moved_to)
        answer = _answer(manager, _leaf_levels(base, moved_to, 3))
        assert methods_read._tree_shapes.kept(manager) is shape
        assert 0 < len(made) <= 3 * 4  # the last two levels' pages at most
        fresh = SessionManager.open(str(path))
        fresh.branch(moved_to)
        assert answer == _answer(fresh, _leaf_levels(base, moved_to, 3)), moved_to


def test_a_move_of_the_leaf_records_the_nodes_it_changed_only_for_levels_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi/branch far up the path and back, while the view holds no levels (its windows alone):
    the shape follows it without recording the nodes that left or joined the leaf's path (most
    of the path, on a big session most of what following it would hold); once levels are kept
    it records them (the levels above the fork are kept). The answers are a fresh server's."""
    from pi_session_server.server.tree_following import FollowingTreeShape

    path = _branchy_session(tmp_path / "followed.jsonl", turns=60)
    manager = SessionManager.open(str(path))
    base = _flat(("default", True, None))
    top = {**base, "chain": True, "offset": 0, "limit": 5}
    leaf = manager.get_leaf_id()
    far = manager.get_branch()[2].id
    recorded: list[int | None] = []
    keep = FollowingTreeShape._keep_levels_above
    monkeypatch.setattr(
        FollowingTreeShape,
        "_keep_levels_above",
        lambda self, kept, changed: (
            recorded.append(None if changed is None else len(changed)) or keep(self, kept, changed)
        ),
    )
    _answer(manager, top)
    shape = methods_read._tree_shapes.kept(manager)
    for moved_to in (far, leaf):
        manager.branch(moved_to)
        answer = _answer(manager, top)
        assert methods_read._tree_shapes.kept(manager) is shape
        fresh = SessionManager.open(str(path))
        fresh.branch(moved_to)
        assert answer == _answer(fresh, top), moved_to
    assert recorded == [None, None]
    _answer(manager, _leaf_levels(base, leaf, 3))
    manager.branch(far)
    fresh = SessionManager.open(str(path))
    fresh.branch(far)
    assert _answer(manager, _leaf_levels(base, far, 3)) == _answer(fresh, _leaf_levels(base, far, 3))
    assert methods_read._tree_shapes.kept(manager) is shape and (recorded[2] or 0) > 1


def test_a_move_of_more_rows_than_a_delta_names_is_walked_anew_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi/branch further up the path than :data:`~tree_held.MOST_MOVED_ROWS` rows (a 2 GB session's
    top level after Branch Here: hundreds of thousands of rows leave the path): the kept shape is
    not followed row by row (a view told the move by ``since`` reloads anyway), the top level is
    walked anew; a nearer move is followed. The answers are a fresh server's."""
    from pi_session_server.server import tree_following

    monkeypatch.setattr(tree_following, "MOST_MOVED_ROWS", 6)
    path = _branchy_session(tmp_path / "followed.jsonl", turns=60)
    manager = SessionManager.open(str(path))
    top = {**_flat(("default", True, None)), "chain": True, "offset": 0, "limit": 5}
    branch = manager.get_branch()
    _answer(manager, top)
    for moved_to, followed in ((branch[-3].id, True), (branch[2].id, False)):
        shape = methods_read._tree_shapes.kept(manager)
        manager.branch(moved_to)
        answer = _answer(manager, top)
        assert (methods_read._tree_shapes.kept(manager) is shape) is followed, moved_to
        fresh = SessionManager.open(str(path))
        fresh.branch(moved_to)
        assert answer == _answer(fresh, top), moved_to


@pytest.mark.parametrize("view", [("default", True, None), ("no-tools", False, None), ("default", True, "e")])
def test_a_move_of_the_leaf_to_no_leaf_and_back_keeps_the_shape(
    tmp_path: Path, view: tuple[str, bool, str | None]
) -> None:
    """pi/resetLeaf (no leaf: no path), the view's windows asked then, and pi/branch from there (to
    an older entry, to the leaf before), pi/branchWithSummary from no leaf: the kept shape follows
    each move, not walked anew, and answers as a fresh manager with the same leaf."""
    path = _branchy_session(tmp_path / "followed.jsonl", turns=60)
    manager = SessionManager.open(str(path))
    base = _flat(view)
    leaf = manager.get_leaf_id()
    older = manager.get_branch()[-7].id
    _answer(manager, _leaf_levels(base, leaf, 3))
    shape = methods_read._tree_shapes.kept(manager)
    assert shape is not None
    for moved_to in (None, older, None, leaf):
        fresh = SessionManager.open(str(path))
        for each in (manager, fresh):
            each.reset_leaf() if moved_to is None else each.branch(moved_to)
        ids = [older, leaf] if moved_to is None else []
        assert _window_answers(manager, view, ids) == _window_answers(fresh, view, ids), moved_to
        assert methods_read._tree_shapes.kept(manager) is shape, moved_to
    manager.reset_leaf()
    _window_answers(manager, view, [])
    with_summary = manager.branch_with_summary(older, "went back")
    fresh = SessionManager.open(str(path))
    assert fresh.get_leaf_id() == with_summary
    assert _window_answers(manager, view, [older]) == _window_answers(fresh, view, [older])
    assert methods_read._tree_shapes.kept(manager) is shape
    # a shape made while there is no leaf (no path known: the order of activeBranchFirst is learnt
    # once there is one)
    manager = SessionManager.open(str(path))
    manager.reset_leaf()
    _window_answers(manager, view, [older])
    shape = methods_read._tree_shapes.kept(manager)
    manager.branch(older)
    fresh = SessionManager.open(str(path))
    fresh.branch(older)
    assert _window_answers(manager, view, [leaf]) == _window_answers(fresh, view, [leaf])
    assert methods_read._tree_shapes.kept(manager) is shape


def test_a_move_through_no_leaf_keeps_the_levels_above_the_fork(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi/resetLeaf (the view's top list asked then, as an editor shows a session without a leaf),
    then pi/branch to an older entry or back to the leaf: the levels down to the leaf before the
    reset serve as for a move straight from it; those above the one that shows the entry branched
    at are not walked or encoded again. The answers are a fresh server's."""

    path = _branchy_session(tmp_path / "followed.jsonl", turns=60)
    manager = SessionManager.open(str(path))
    base = _flat(("default", True, None))
    top = {**base, "chain": True, "offset": 0, "limit": 5}
    leaf = manager.get_leaf_id()
    levels = json.loads(_answer(manager, _leaf_levels(base, leaf, 3)))["levels"]
    assert len(levels) >= 8
    fork = levels[-2]["nodes"][-1]["id"]  # a row of the level above the leaf's
    made = _rows_made(monkeypatch)
    for moved_to in (fork, leaf):
        manager.reset_leaf()
        fresh = SessionManager.open(str(path))
        fresh.reset_leaf()
        assert _answer(manager, top) == _answer(fresh, top)
        made.clear()
        manager.branch(moved_to)
        fresh.branch(moved_to)
        answer = _answer(manager, _leaf_levels(base, moved_to, 3))
        assert 0 < len(made) <= 3 * 4, moved_to  # the last two levels' pages at most
        assert answer == _answer(fresh, _leaf_levels(base, moved_to, 3)), moved_to


@pytest.mark.parametrize("view", VIEWS, ids=[str(view) for view in VIEWS])
def test_random_moves_through_no_leaf_answer_as_a_fresh_one(
    tmp_path: Path, view: tuple[str, bool, str | None]
) -> None:
    """pi/resetLeaf, the view's top list asked then, and pi/branch to any entry (up the path, on
    another branch, a silent turn, the leaf before): the levels down to the new leaf, kept from
    those down to the leaf before the reset, are a fresh manager's."""
    rng = random.Random(7)
    path = _branchy_session(tmp_path / "followed.jsonl", turns=40)
    manager = SessionManager.open(str(path))
    base = _flat(view)
    top = {**base, "chain": True, "offset": 0, "limit": 5}
    ids = [entry.id for entry in manager.get_entries()]
    _answer(manager, _leaf_levels(base, manager.get_leaf_id(), 3))
    for _ in range(8):
        before = manager.get_leaf_id()
        target = rng.choice(
            [before, *[entry.id for entry in manager.get_branch()][-12:], *rng.sample(ids, 3)]
        )
        manager.reset_leaf()
        _answer(manager, top)
        manager.branch(target)
        fresh = SessionManager.open(str(path))
        fresh.branch(target)
        for limit in (3, 3, 2):
            assert _answer(manager, _leaf_levels(base, target, limit)) == _answer(
                fresh, _leaf_levels(base, target, limit)
            ), (before, target)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_followed_session_whose_leaf_moves_answers_as_a_fresh_one(tmp_path: Path, seed: int) -> None:
    """Between the turns appended, the leaf moved alone (pi/branch to any older entry, up its path,
    pi/resetLeaf): every view's answers are a fresh manager's with the same leaf."""
    rng = random.Random(seed)
    source = tmp_path / "random.jsonl"
    random_session(rng, source)
    lines = _file_lines(source.read_text(encoding="utf-8"))
    path = tmp_path / "followed.jsonl"
    for turn, managers, written in _followed_turns(path, lines, rng, len(VIEWS)):
        ids = _ids_of(written)
        for move in range(3):
            path_ids = [entry.id for entry in managers[0].get_branch()]
            how = rng.random()
            target = (
                None if how < 0.1 else rng.choice(path_ids) if how < 0.4 and path_ids else rng.choice(ids)
            )
            picked = rng.sample(ids, min(2, len(ids)))
            for view, followed in zip(VIEWS, managers, strict=True):
                followed.reset_leaf() if target is None else followed.branch(target)
                fresh = SessionManager.open(str(path))
                fresh.reset_leaf() if target is None else fresh.branch(target)
                assert _window_answers(followed, view, picked) == _window_answers(fresh, view, picked), (
                    turn,
                    move,
                    view,
                )


def test_a_move_of_the_leaf_alone_to_a_silent_turn_shows_it(tmp_path: Path) -> None:
    """pi's filters show a turn without text while it is the leaf: a move of the leaf alone up its
    path to one (hidden until then, in the levels the view was shown) shows its row, as a fresh
    manager does."""
    path = _branchy_session(tmp_path / "followed.jsonl", turns=60)
    manager = SessionManager.open(str(path))
    base = _flat(("default", True, None))
    _answer(manager, _leaf_levels(base, manager.get_leaf_id(), 3))
    shape = methods_read._tree_shapes.kept(manager)
    silent = [
        entry.id
        for entry in manager.get_branch()[:-1]
        if entry.role == "assistant" and not shape.is_shown(shape.find(entry.id))
    ]
    assert silent
    manager.branch(silent[-1])
    answer = _answer(manager, _leaf_levels(base, silent[-1], 3))
    fresh = SessionManager.open(str(path))
    fresh.branch(silent[-1])
    assert answer == _answer(fresh, _leaf_levels(base, silent[-1], 3))
    rows = json.loads(answer)["levels"][-1]["nodes"]
    assert [row["id"] for row in rows if row["isLeaf"]] == [silent[-1]]
