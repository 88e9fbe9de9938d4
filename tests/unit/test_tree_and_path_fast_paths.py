"""The fast paths of getTree and of the walk to the root agree with the general algorithms.

``build_tree`` builds pi's usual files (unique ids, parents first) in one pass and falls back to the
reference's two passes for anything else; ``walk_to_root`` skips the visited set unless the walk
outlasts the number of entries. Random entry lists with duplicate ids, forward and missing parents,
self-parents and cycles must give the same result either way.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import builders as S
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.format.entry import Entry
from pi_session_server.session import SessionManager
from pi_session_server.session.context import _walk_to_root_remembering, walk_to_root
from pi_session_server.session.tree import _build_any_order, build_tree, preorder, shared_path_length

IDS = ["a", "b", "c", "d", "e", "f"]


@st.composite
def entry_lists(draw: Any) -> list[Entry]:
    count = draw(st.integers(0, 12))
    values = []
    for n in range(count):
        entry_id = draw(st.sampled_from(IDS + [f"u{n}"] * 4))  # mostly unique, some shared
        parent = draw(st.sampled_from([None, None, "a", "b", "c", "missing", *[f"u{k}" for k in range(n)]]))
        values.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2026-01-01T00:00:{n % 7:02d}.000Z",
            }
        )
    return [Entry.of(v) for v in values]


def shape(roots: list[Any]) -> list[tuple[int, int]]:
    return [(depth, id(node.entry)) for depth, node in preorder(roots)]


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(entry_lists())
def test_build_tree_matches_the_two_pass_algorithm(entries: list[Entry]):
    fast = build_tree(entries, {}, {})
    general, _nodes = _build_any_order(entries)
    assert shape(fast) == shape(general)


def test_a_linear_file_takes_the_one_pass_path_and_sorts_branch_points():
    values = [
        {"type": "message", "id": "r", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z"},
        {"type": "message", "id": "late", "parentId": "r", "timestamp": "2026-01-01T00:00:09.000Z"},
        {"type": "message", "id": "early", "parentId": "r", "timestamp": "2026-01-01T00:00:01.000Z"},
    ]
    roots = build_tree([Entry.of(v) for v in values], {"late": "L"}, {})
    assert [c.entry.id for c in roots[0].children] == ["early", "late"]
    assert roots[0].children[1].label == "L"


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(entry_lists(), st.data())
def test_walk_to_root_matches_the_remembering_walk(entries: list[Entry], data: Any):
    if not entries:
        return
    index = {e.id: e for e in entries}
    start = data.draw(st.sampled_from(entries))
    assert [id(e) for e in walk_to_root(start, index)] == [
        id(e) for e in _walk_to_root_remembering(start, index)
    ]


@settings(max_examples=400, deadline=None)
@given(entry_lists(), st.data())
def test_two_paths_share_by_halves_what_a_walk_down_them_shares(entries: list[Entry], data: Any):
    """A tree view's branch moves count the entries two leaves' paths share by halves: the same
    count as a walk down both paths, duplicate ids, forward parents and cycles included."""
    if not entries:
        return
    index = {e.id: e for e in entries}
    a, b = (walk_to_root(data.draw(st.sampled_from(entries)), index) for _ in range(2))
    walked = 0
    while walked < min(len(a), len(b)) and a[walked] is b[walked]:
        walked += 1
    assert shared_path_length(a, b) == walked
    assert shared_path_length(a, list(a)) == len(a)
    copies = [Entry.of({"type": e.type, "id": e.id, "parentId": e.parent_id}) for e in b]
    assert shared_path_length(a, copies) == 0  # the very entries, not equal ones


def forward_settings(path: list[Entry]) -> tuple[Any, Any]:
    """docs/API.md §7.4 as the reference writes it: every setting in path order, the last one wins."""
    thinking_level: Any = "off"
    model: Any = None
    for e in path:
        if e.type == "message" and e.model_ref is not None:
            model = {"provider": e.model_ref[0], "modelId": e.model_ref[1]}
        elif e.type == "thinking_level_change":
            thinking_level = e.value["thinkingLevel"]
        elif e.type == "model_change":
            model = {"provider": e.value["provider"], "modelId": e.value["modelId"]}
    return thinking_level, model


SETTING_VALUES = st.sampled_from(
    [
        {"type": "message", "message": {"role": "assistant", "provider": "p1", "model": "m1"}},
        {"type": "message", "message": {"role": "user", "content": "x"}},
        {"type": "message", "message": "not an object"},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        {"type": "thinking_level_change", "thinkingLevel": "low"},
        {"type": "model_change", "provider": "p2", "modelId": "m2"},
        {"type": "custom", "customType": "c"},
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(SETTING_VALUES, max_size=12))
def test_context_settings_read_backwards_equal_the_forward_rule(values: list[dict[str, Any]]):
    from pi_session_server.session.context import context_settings

    path = [Entry.of(dict(v, id=str(n))) for n, v in enumerate(values)]
    assert context_settings(path) == forward_settings(path)


def test_a_chain_node_s_children_list_holds_room_for_one_child_not_four(tmp_path: Path):
    """Most nodes of a session are links of a chain, each with one child: the builder's lists hold
    that child without the room an append makes for three more (a pointer's worth each, per entry
    of a session of hundreds of thousands); a chain that hangs under a link still joins it."""
    lines = [S.header(), S.user("u0", None, "start")]
    lines += [S.user(f"u{n}", f"u{n - 1}", f"turn {n}") for n in range(1, 6)]
    lines.append(S.user("side", "u2", "another way"))  # a chain of its own under a link
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    manager = SessionManager.open(str(path), read_only=True, index=False)
    roots = manager.get_tree()
    assert [(depth, node.entry.id) for depth, node in preorder(roots)] == [
        (0, "u0"), (1, "u1"), (2, "u2"), (3, "u3"), (4, "u4"), (5, "u5"), (3, "side"),
    ]  # fmt: skip
    one_child = sys.getsizeof(list((object(),)))
    links = [node for _depth, node in preorder(roots) if len(node.children) == 1]
    assert len(links) == 4 and all(sys.getsizeof(node.children) <= one_child for node in links)
    manager.close()
