"""pi/getTree's windows (``rootId``, ``depth``, ``offset``/``limit``) and its size limit, on the pure
tree functions: pages concatenate to the whole result, subtrees are cut-outs of it, the flat form
encoded one node at a time is the JSON of the whole result, and results past the maximum are refused.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import builders as S
import pytest
from test_protocol_tree_filters import EXAMPLE, random_session

from pi_session_server.server.tree_view import encode_flat_tree_view, tree_view
from pi_session_server.server.tree_window import RootNotFoundError, TreeTooLargeError, TreeWindow
from pi_session_server.server.wire import encode_json
from pi_session_server.session import SessionManager
from pi_session_server.session.tree_modes import FILTERS

VIEWS = [
    {"mode": mode, "active_branch_first": first, "search": search}
    for mode in FILTERS
    for first in (False, True)
    for search in (None, "cache")
]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> list[SessionManager]:
    directory = tmp_path_factory.mktemp("trees")
    rng = random.Random(20261130)
    managers = [SessionManager.open(str(EXAMPLE), read_only=True)]
    for i in range(8):
        path = directory / f"random-{i}.jsonl"
        random_session(rng, path)
        managers.append(SessionManager.open(str(path)))
    return managers


def view(m: SessionManager, **options: Any) -> dict[str, Any]:
    return tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, previews=False, **options)


def pages(m: SessionManager, size: int, **options: Any) -> list[dict[str, Any]]:
    nodes, offset = [], 0
    while True:
        page = view(m, window=TreeWindow(offset=offset, limit=size, paged=True), **options)
        assert len(page["nodes"]) <= size
        nodes.extend(page["nodes"])
        if not page["hasMore"]:
            assert "nextOffset" not in page and page["total"] == len(nodes)
            return nodes
        offset = page["nextOffset"]


@pytest.mark.parametrize("options", VIEWS, ids=lambda o: "-".join(map(str, o.values())))
def test_pages_concatenate_to_the_whole_flat_result(sessions: list[SessionManager], options: dict) -> None:
    for m in sessions:
        whole = view(m, **options)["nodes"]
        for size in (1, 4, 1000):
            assert pages(m, size, **options) == whole


@pytest.mark.parametrize("options", VIEWS[::5], ids=lambda o: "-".join(map(str, o.values())))
def test_the_flat_form_encoded_node_by_node_is_the_json_of_the_whole_result(
    sessions: list[SessionManager], options: dict
) -> None:
    for m in sessions:
        for window in (TreeWindow(), TreeWindow(offset=3, limit=5, paged=True), TreeWindow(depth=2)):
            expected = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, window=window, **options)
            encoded = encode_flat_tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, window=window, **options)
            assert encoded == encode_json(expected)


def test_a_subtree_is_a_cut_out_of_the_whole_result(sessions: list[SessionManager]) -> None:
    for m in sessions:
        whole = view(m, mode="default")["nodes"]
        position = {n["id"]: i for i, n in enumerate(whole)}
        for top in whole[:: max(1, len(whole) // 5)]:
            sub = view(m, mode="default", window=TreeWindow(root_id=top["id"]))["nodes"]
            start = position[top["id"]]
            expected = whole[start : start + len(sub)]
            assert [n["id"] for n in sub] == [n["id"] for n in expected]
            assert [n["depth"] + top["depth"] for n in sub] == [n["depth"] for n in expected]
            assert sub[0]["visibleParentId"] is None
            assert [n["childIds"] for n in sub] == [n["childIds"] for n in expected]
            follows = whole[start + len(sub)] if start + len(sub) < len(whole) else None
            assert follows is None or follows["depth"] <= top["depth"]  # the whole subtree, no more


def test_depth_keeps_the_top_levels_only(sessions: list[SessionManager]) -> None:
    for m in sessions:
        whole = view(m)["nodes"]
        for depth in (0, 1, 3):
            flat = view(m, window=TreeWindow(depth=depth))["nodes"]
            assert flat == [n for n in whole if n["depth"] <= depth]
            nested = view(m, form="nested", window=TreeWindow(depth=depth))["nodes"]
            stack, count = list(nested), 0
            while stack:
                node = stack.pop()
                count += 1
                if node["depth"] == depth:
                    assert node["children"] == []
                    assert node.get("childrenOmitted", False) is bool(
                        next(n for n in whole if n["id"] == node["id"])["childIds"]
                    )
                stack.extend(node["children"])
            assert count == len(flat)


def test_results_past_the_maximum_are_refused_unless_paged(sessions: list[SessionManager]) -> None:
    m = sessions[0]
    total = len(view(m)["nodes"])
    assert len(view(m, max_nodes=total)["nodes"]) == total
    for form in ("flat", "nested"):
        with pytest.raises(TreeTooLargeError) as refused:
            view(m, form=form, max_nodes=total - 1)
        assert refused.value.total == total and refused.value.max_nodes == total - 1
    page = view(m, max_nodes=10, window=TreeWindow(limit=25, paged=True))
    assert len(page["nodes"]) == 10 and page["nextOffset"] == 10 and page["total"] == total
    assert len(view(m, max_nodes=10, window=TreeWindow(depth=0))["nodes"]) == 1


def test_an_unknown_root_is_refused(sessions: list[SessionManager]) -> None:
    with pytest.raises(RootNotFoundError, match="Entry nope not found"):
        view(sessions[0], window=TreeWindow(root_id="nope"))


def test_a_hidden_root_shows_its_shown_descendants_as_tops() -> None:
    m = SessionManager.open(str(EXAMPLE), read_only=True)
    whole = view(m)["nodes"]
    model_change = whole[0]["id"]  # hidden in the user-only mode
    tops = view(m, mode="user-only", window=TreeWindow(root_id=model_change))["nodes"]
    assert tops == view(m, mode="user-only")["nodes"]


@pytest.mark.parametrize("batch", [1, 2, 512])
def test_rows_msgspec_refuses_are_written_as_the_whole_result_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """A row with a lone surrogate (an id, a label: msgspec refuses them) or envelope members that
    are not strings goes through the exact encoder: the same bytes as the dict form, members in the
    same order, the missing ones left out; in a batch of rows of its own or with others, first or
    after others (``batch``: rows encoded at a time)."""
    monkeypatch.setattr("pi_session_server.server.tree_flat_form._ENCODED_TOGETHER", batch)
    lines = [
        S.header(),
        S.user("a\ud800", None, "first"),
        '{"type":"message","id":"b","parentId":"a\\ud800","timestamp":7,"message":{"role":3,"content":"x"}}',
        S.label("c", "b", "b", "mark \udc00"),
        '{"type":"custom","id":"d","parentId":"c"}',
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    m = SessionManager.open(str(path), read_only=True)
    for options in ({"mode": "none"}, {"mode": "all", "active_branch_first": True}):
        for window in (TreeWindow(), TreeWindow(offset=1, limit=2, paged=True)):
            expected = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, window=window, **options)
            encoded = encode_flat_tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, window=window, **options)
            assert encoded == encode_json(expected)
    nodes = json.loads(encode_flat_tree_view(m.get_tree(), m.get_leaf_id(), m.by_id))["nodes"]
    head = ["id", "parentId", "visibleParentId", "childIds", "type", "role"]
    tail = ["preview", "timestamp", "line", "depth", "isLeaf", "onLeafPath", "isBranchPoint"]
    assert [list(node) for node in nodes[:2]] == [[*head, *tail], [*head, "label", "labelTimestamp", *tail]]
    assert nodes[0]["id"] == "a\ud800" and nodes[1]["label"] == "mark \udc00"
    assert nodes[1]["role"] == 3 and nodes[1]["timestamp"] == 7
    assert "type" in nodes[3] and "role" not in nodes[3] and "label" not in nodes[3]


# --- a subtree reads the session's tool calls only for a tool result ---------------------------


def _duplicate_calls(path: Path) -> SessionManager:
    """Two assistant messages with the same call id, a tool result of it under the second: the call
    found above it is not the one the whole tree names (the first)."""
    header = {
        "type": "session",
        "version": 3,
        "id": "s",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/p",
    }

    def message(entry_id: str, parent: Any, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                "message": body}  # fmt: skip

    def call(path_read: str) -> dict[str, Any]:
        return {"role": "assistant", "content": [{"type": "toolCall", "id": "t1", "name": "read",
                                                  "arguments": {"path": path_read}}]}  # fmt: skip

    lines = [
        header,
        message("u0", None, {"role": "user", "content": "go", "timestamp": 1}),
        message("a1", "u0", call("first.py")),
        message("a2", "u0", call("second.py")),
        message("r1", "a2", {"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": "ok"}),
        message("u1", "r1", {"role": "user", "content": "again", "timestamp": 2}),
    ]
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return SessionManager.open(str(path))


def test_a_subtree_reads_the_calls_when_it_shows_a_tool_result_and_answers_as_before(
    sessions: list[SessionManager], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from pi_session_server.server import methods_read
    from pi_session_server.server import params as P
    from pi_session_server.server import tree_view as tv
    from pi_session_server.server.wire import encode_result
    from pi_session_server.session.entry_facts import collect_tool_calls

    eager_shape = tv.tree_shape
    collected: list[int] = []
    collect = collect_tool_calls
    for reads in ("tree_shape", "tree_tool_calls"):  # (the modules that read every call)
        monkeypatch.setattr(
            f"pi_session_server.server.{reads}.collect_tool_calls",
            lambda entries: collected.append(1) or collect(entries),
        )
    duplicate = _duplicate_calls(tmp_path / "duplicate.jsonl")
    for m in [duplicate, *sessions[:6]]:
        ids = [e.id for e in m.get_entries()]
        for root, form, depth, mode in zip(ids, ["flat", "nested"] * len(ids), [0, 1, None] * len(ids),
                                           FILTERS * len(ids), strict=False):  # fmt: skip
            window = {"form": form, "rootId": root, "filter": mode}
            params = P.parse(window if depth is None else {**window, "depth": depth}, P.GetTreeParams)
            collected.clear()
            lazy = encode_result(methods_read._tree(m, params))
            reads = len(collected)
            with monkeypatch.context() as eager:  # every call read up front, as before
                eager.setattr(tv, "tree_shape", lambda *a, calls=None, **k: eager_shape(*a, **k))
                assert encode_result(methods_read._tree(m, params)) == lazy
            shown, nodes = [], list(json.loads(lazy)["nodes"])
            while nodes:  # (nested: children inline)
                shown.append(nodes.pop())
                nodes.extend(shown[-1].get("children", []))
            if not any(n.get("role") == "toolResult" for n in shown):
                assert reads == 0, (root, form, depth)
    whole = json.loads(encode_result(methods_read._tree(duplicate, P.parse({}, P.GetTreeParams))))["nodes"]
    window = P.parse({"rootId": "r1", "depth": 0}, P.GetTreeParams)
    r1 = json.loads(encode_result(methods_read._tree(duplicate, window)))["nodes"][0]
    assert r1["preview"] == next(n["preview"] for n in whole if n["id"] == "r1") == "[read: first.py]"


def test_ids_python_takes_for_equal_are_not_one_leaf(tmp_path: Path) -> None:
    """Ids JS tells apart (``1`` and ``true``; ``1 == True`` in Python) mark one leaf, in every
    filter and on the entry's own line (pi/getEntryAtLine), and only the leaf is shown as such."""
    from pi_session_server.server.methods_read import _entry_at_line

    path = tmp_path / "ids.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp"},
        *(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2026-01-01T00:00:0{n}.000Z",
                "message": {
                    "role": role,
                    "content": [{"type": "text", "text": f"m{n}"}] if role == "assistant" else f"m{n}",
                    "timestamp": n,
                },
            }
            for n, (entry_id, parent, role) in enumerate(
                [(1, None, "user"), (True, 1, "user"), (1.0, True, "assistant"), ("x", 1.0, "assistant")], 1
            )
        ),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    m = SessionManager.open(str(path), read_only=True)
    assert m.get_leaf_id() == "x"
    for mode in FILTERS:
        page = json.loads(
            encode_flat_tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, previews=False, mode=mode)
        )
        shown = [n["id"] for n in page["nodes"]]
        assert [n["id"] for n in page["nodes"] if n["isLeaf"]] == (["x"] if "x" in shown else []), mode
    assert [bool(_entry_at_line(m, line)["isLeaf"]) for line in range(1, 5)] == [False, False, False, True]

    path.write_text("".join(json.dumps(line) + "\n" for line in lines[:3]))  # the leaf: true
    m = SessionManager.open(str(path), read_only=True)
    flat = json.loads(
        encode_flat_tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, previews=False, mode="none")
    )
    assert [n["id"] for n in flat["nodes"] if n["isLeaf"]] == [True]
    assert [bool(_entry_at_line(m, line)["isLeaf"]) for line in (1, 2)] == [False, True]
