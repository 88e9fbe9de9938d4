"""Which call a tool result's preview names in a tree view's windows (``CallReading.NEAR_EACH_RESULT``)
is a function of the session alone: the same request on the same file answers the same bytes
whatever the server was asked before.

A window names, for each tool result, the call of its id in the nearest assistant message above it
(within a few entries: parallel calls' results chain under their message), else the session's (the
last call of that id a walk of the whole tree meets, as pi's tree selector and the whole tree's
pages name it). The two differ only for a call id that several assistant messages hold: a window
would otherwise read every assistant message of the session for its first tool result.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import builders as S
import msgspec
import pytest

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import index_key
from pi_session_server.server import methods_read
from pi_session_server.server import params as P
from pi_session_server.server.errors import PiRpcError
from pi_session_server.server.raw_parts import RawParts
from pi_session_server.server.tree_flat_form import encode_flat_page, window_tree
from pi_session_server.server.tree_following import tree_shape
from pi_session_server.server.tree_tool_calls import CallReading
from pi_session_server.server.tree_window import TreeWindow
from pi_session_server.session import SessionManager
from pi_session_server.session.tree import build_tree


def _read(call_id: str, path: str) -> tuple[tuple[str, str, dict[str, Any]], ...]:
    return ((call_id, "read", {"path": path}),)


def _session(path: Path, second_call: str = "c1") -> Path:
    """Two branches under ``u0`` whose assistant messages call with the same id (``c1``: read
    /one/first.py on the first branch, /two/second.py on the second, unless ``second_call`` names
    the second another way); a result on the second branch names ``c9``, called on the first
    branch only; each branch a chain of a few turns."""
    lines = [
        S.header(),
        S.user("u0", None, "start"),
        S.assistant(
            "a0", "u0", "first way", calls=(*_read("c1", "/one/first.py"), *_read("c9", "/one/nine.py"))
        ),
        S.tool_result("r0", "a0", "c1", "one"),
        S.tool_result("r0b", "r0", "c9", "nine"),
        S.assistant("z0", "r0b", "done one"),
        S.user("u1", "u0", "other way"),
        S.assistant("a1", "u1", "second way", calls=_read(second_call, "/two/second.py")),
        S.tool_result("r1", "a1", second_call, "two"),
        S.assistant("z1", "r1", "done two"),
        S.user("u2", "z1", "more"),
        S.tool_result("r9", "u2", "c9", "nine again"),  # no call of c9 above it
        S.assistant("z2", "r9", "the end"),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _answer(manager: SessionManager, params: dict[str, Any]) -> bytes:
    try:
        result = methods_read._tree(manager, msgspec.convert({"uri": "file:///s", **params}, P.GetTreeParams))
    except PiRpcError as error:
        return f"error {error.code} {error}".encode()
    return bytes(result) if isinstance(result, (msgspec.Raw, RawParts)) else msgspec.json.encode(result)


VIEWS = [{"filter": "all", "activeBranchFirst": True}, {"filter": "none"}, {"filter": "default"}]
# what a tree view asks: subtrees that hold one branch's results, chains, the levels down to an entry
REQUESTS = [
    {"form": "flat", "rootId": "a0", "depth": 3, "offset": 0, "limit": 50},
    {"form": "flat", "rootId": "a1", "depth": 3, "offset": 0, "limit": 50},
    {"form": "flat", "rootId": "u1", "chain": True, "offset": 0, "limit": 50},
    {"form": "flat", "rootId": "u2", "chain": True, "offset": 0, "limit": 50},
    {"form": "flat", "levels": True, "aroundId": "r0", "limit": 10},
    {"form": "flat", "levels": True, "aroundId": "r9", "limit": 10},
    {"form": "flat", "chain": True, "aroundId": "r1", "offset": 0, "limit": 10},
]


def _answers_in_order(path: Path, view: dict[str, Any], order: tuple[int, ...]) -> dict[int, bytes]:
    manager = SessionManager.open(str(path), read_only=True, index=False)
    try:
        return {at: _answer(manager, {**view, **REQUESTS[at]}) for at in order}
    finally:
        manager.close()


@pytest.mark.parametrize("view", VIEWS, ids=[v["filter"] for v in VIEWS])
def test_a_window_s_previews_do_not_depend_on_the_requests_before_it(
    tmp_path: Path, view: dict[str, Any]
) -> None:
    path = _session(tmp_path / "s.jsonl")
    alone = {at: _answers_in_order(path, view, (at,))[at] for at in range(len(REQUESTS))}
    orders = [tuple(range(len(REQUESTS))), tuple(reversed(range(len(REQUESTS))))]
    orders += list(itertools.islice(itertools.permutations(range(4)), 1, 24, 5))
    for order in orders:
        answers = _answers_in_order(path, view, order)
        for at in order:
            assert answers[at] == alone[at], (order, REQUESTS[at])


def _previews(answer: bytes) -> dict[str, str]:
    value = json.loads(answer)
    nodes = [n for level in value["levels"] for n in level["nodes"]] if "levels" in value else value["nodes"]
    return {n["id"]: n.get("preview") for n in nodes}


def test_a_window_names_the_nearest_call_above_a_result_and_else_the_session_s(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    manager = SessionManager.open(str(path), read_only=True, index=False)
    view = {"filter": "all"}
    first = _previews(_answer(manager, {**view, **REQUESTS[0]}))
    second = _previews(_answer(manager, {**view, **REQUESTS[1]}))
    assert first["r0"] == "[read: /one/first.py]" and first["r0b"] == "[read: /one/nine.py]"
    assert second["r1"] == "[read: /two/second.py]"
    # not above it: the session's call of that id, as the whole tree names it
    assert _previews(_answer(manager, {**view, **REQUESTS[3]}))["r9"] == "[read: /one/nine.py]"
    whole = _previews(_answer(manager, {**view, "form": "flat"}))
    assert whole["r9"] == "[read: /one/nine.py]"
    # the whole tree (pi's tree selector) names the last call of an id a walk meets for every result
    assert whole["r0"] == whole["r1"] and whole["r0"] in (first["r0"], second["r1"])
    manager.close()


def test_where_every_call_id_is_once_in_the_session_a_window_names_what_the_whole_tree_does(
    tmp_path: Path,
) -> None:
    path = _session(tmp_path / "unique.jsonl", second_call="c2")
    manager = SessionManager.open(str(path), read_only=True, index=False)
    for view in VIEWS:
        whole = _previews(_answer(manager, {**view, "form": "flat"}))
        for request in REQUESTS:
            for entry_id, preview in _previews(_answer(manager, {**view, **request})).items():
                assert preview == whole[entry_id], (view, request, entry_id)
    manager.close()


def _window_previews(shape: Any, root_id: str) -> dict[str, str]:
    """The previews of the window of ``root_id`` cut from ``shape``."""
    window = TreeWindow(root_id=root_id, depth=3, offset=0, limit=50, paged=True)
    encoded, _more = encode_flat_page(window_tree(shape, window), window)
    return _previews(encoded)


def _window_shape(roots: Any, leaf_id: Any, by_id: Any) -> Any:
    """The shape of a tree view's windows (each result's call read above it)."""
    return tree_shape(roots, leaf_id, by_id, mode="all", calls=CallReading.NEAR_EACH_RESULT)


def test_a_window_keeps_the_call_above_each_result_by_the_entry_itself(tmp_path: Path) -> None:
    """What a tree view's windows keep of each tool result they show (the call above it, found once)
    is the call keyed by the entry: no tuple and no id object for each of the hundreds of thousands
    of results the windows down a big session show."""
    manager = SessionManager.open(str(_session(tmp_path / "s.jsonl")), read_only=True, index=False)
    shape = _window_shape(manager.get_tree(), manager.get_leaf_id(), manager.by_id)
    for _ in range(2):  # (the second time from what the first kept)
        previews = _window_previews(shape, "a0")
        assert previews["r0"] == "[read: /one/first.py]" and previews["r0b"] == "[read: /one/nine.py]"
    kept = shape._calls_above
    assert {entry.id for entry in kept} == {"r0", "r0b"}
    assert all(type(entry) is Entry for entry in kept)
    assert [kept[entry][0] for entry in kept] == ["read", "read"]  # each the call: (name, arguments)
    manager.close()


def test_a_window_of_entries_that_are_dicts_names_the_call_above_each_result(tmp_path: Path) -> None:
    """Entries that are JSON objects (unhashable: kept by their id) name the same calls."""
    lines = _session(tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    entries = [json.loads(line) for line in lines]
    by_id = {index_key(entry["id"]): entry for entry in entries}
    shape = _window_shape(build_tree(entries, {}, {}), "z2", by_id)
    for _ in range(2):  # (the second time from what the first kept)
        previews = _window_previews(shape, "a0")
        assert previews["r0"] == "[read: /one/first.py]" and previews["r0b"] == "[read: /one/nine.py]"
