"""getTree with duplicate ids: the D2 walk that cuts cycles runs only when a cycle can be met.

Several entries with one id share one node, which then hangs under each of their parents and can
close a cycle; the walk that drops the edges closing one (D2) used to run over the whole tree
whenever any id was duplicated (seconds for a 2 GB session with a few). It now runs only when the
shared nodes lie on a cycle. The trees must be exactly those of always walking.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.session import tree as tree_module
from pi_session_server.session.tree import build_tree, expanded_once, preorder

IDS = ["a", "b", "c", "d", "e", "f", "g", "h"]
TIMES = ["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.000Z", "2026-01-01T00:00:03.000Z", "not a time"]

entry_values = st.fixed_dictionaries(
    {
        "type": st.just("custom"),
        "id": st.sampled_from(IDS),
        "parentId": st.one_of(st.none(), st.sampled_from([*IDS, "missing"])),
        "timestamp": st.sampled_from(TIMES),
    }
)


def shape(entries: list[dict[str, Any]], walk_always: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The tree as positions of entries: preorder with depths, and every node's children."""
    with monkeypatch.context() as patch:
        if walk_always:
            patch.setattr(tree_module, "_shared_nodes_in_a_cycle", lambda nodes, parents: True)
        roots = build_tree(entries, {}, {})
    position = {id(e): i for i, e in enumerate(entries)}
    order: list[tuple[int, int]] = []
    stack = [(root, 0) for root in reversed(roots)]
    while stack and len(order) < 10_000:  # a cycle left in the tree would never end
        node, depth = stack.pop()
        order.append((depth, position[id(node.entry)]))
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return [position[id(r.entry)] for r in roots], order


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.lists(entry_values, min_size=1, max_size=14))
def test_trees_with_duplicate_ids_equal_those_of_always_walking(entries: list[dict[str, Any]]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert shape(entries, False, monkeypatch) == shape(entries, True, monkeypatch)


def _entry(entry_id: str, parent_id: str | None) -> dict[str, Any]:
    return {"type": "custom", "id": entry_id, "parentId": parent_id, "timestamp": TIMES[0]}


def test_the_walk_is_skipped_without_a_cycle_and_made_with_one(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[int] = []
    real_walk = tree_module._remove_cycle_edges
    monkeypatch.setattr(tree_module, "_remove_cycle_edges", lambda roots: walks.append(1) or real_walk(roots))
    chain = [_entry("r", None), *(_entry(f"n{i}", "r" if i == 0 else f"n{i - 1}") for i in range(50))]
    roots = build_tree([*chain, _entry("n10", "n5")], {}, {})  # n10 twice, also under n5: no cycle
    assert walks == []
    assert [depth for depth, node in preorder(roots) if node.entry["id"] == "n10"] == [11, 7]
    roots = build_tree([*chain, _entry("n10", "n20")], {}, {})  # under n20, below itself: a cycle
    assert walks == [1]
    assert [depth for depth, node in preorder(roots) if node.entry["id"] == "n10"] == [11]


def _nested_twins(levels: int) -> list[dict[str, Any]]:
    """A root, then at each level two entries with one id whose parent is the level above's id (a
    block of lines copied twice): pi's tree hangs each level's node twice under the one above."""
    entries: list[dict[str, Any]] = [{"type": "custom", "id": "r", "parentId": None, "timestamp": TIMES[0]}]
    for level in range(levels):
        parent = f"d{level - 1}" if level else "r"
        entries += [{"type": "custom", "id": f"d{level}", "parentId": parent, "timestamp": TIMES[0]}] * 2
    return entries


@settings(max_examples=300, deadline=None)
@given(st.lists(entry_values, max_size=14))
def test_a_tree_expanded_once_holds_each_node_s_subtree_in_one_place(entries: list[dict[str, Any]]) -> None:
    """expanded_once: the same nodes, each in its places, but with its children (the same, in the
    same order) under one of them only: a walk visits each node's subtree once."""

    def children_by_entry(roots: list[Any]) -> dict[int, list[list[int]]]:
        places: dict[int, list[list[int]]] = {}
        for _depth, node in preorder(roots):
            places.setdefault(id(node.entry), []).append([id(c.entry) for c in node.children])
        return places

    pis = children_by_entry(build_tree(entries, {}, {}))
    expanded = expanded_once(build_tree(entries, {}, {}))
    ours = children_by_entry(expanded)
    assert ours.keys() == pis.keys()
    for entry, places in ours.items():
        full = [children for children in places if children]
        assert len(full) <= 1 and (full[0] if full else []) == pis[entry][0]
    nodes = [node for _depth, node in preorder(expanded)]
    assert len({id(n) for n in nodes}) == len(nodes)  # no node reached twice


def test_nested_twins_are_drawn_once_each_not_2_to_the_k_times() -> None:
    roots = expanded_once(build_tree(_nested_twins(30), {}, {}))
    assert len(preorder(roots)) == 1 + 2 * 30  # pi's tree: 2^31 - 1 places
