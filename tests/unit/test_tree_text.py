"""tree_text_lines draws any tree as its layout says: the loop that follows chains of single children
gives the lines a plain recursive drawing gives."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.render.tree_text import tree_text_lines


@dataclass
class Node:
    name: str
    children: list[Node] = field(default_factory=list)


def _drawn(roots: list[Node], path: set[str], leaf: str | None) -> list[str]:
    """The layout, recursively: a lone root and an only child keep their parent's prefix; the
    children of a branch point hang from ├─ and └─."""
    lines: list[str] = []

    def draw(node: Node, prefix: str, child_prefix: str) -> None:
        line = prefix + ("* " if node.name in path else "  ") + f"text of {node.name}"
        if len(node.children) > 1:
            line += f"  ({len(node.children)} branches)"
        if node.name == leaf:
            line += "  ◀ leaf"
        lines.append(line)
        fan_out(node.children, child_prefix, lone=True)

    def fan_out(nodes: list[Node], prefix: str, *, lone: bool) -> None:
        if len(nodes) == 1 and lone:
            draw(nodes[0], prefix, prefix)
            return
        for i, node in enumerate(nodes):
            last = i == len(nodes) - 1
            draw(node, prefix + ("└─ " if last else "├─ "), prefix + ("   " if last else "│  "))

    fan_out(roots, "", lone=True)
    return lines


@st.composite
def forests(draw: Any) -> tuple[list[Node], list[Node]]:
    """Trees of up to 60 nodes, each node's parent one of the nodes before it (or none: a root)."""
    count = draw(st.integers(1, 60))
    nodes = [Node(f"n{i}") for i in range(count)]
    roots: list[Node] = []
    for i, node in enumerate(nodes):
        parent = draw(st.integers(-1, i - 1))
        if parent < 0:
            roots.append(node)
        else:
            nodes[parent].children.append(node)
    return roots, nodes


@settings(max_examples=200, deadline=None)
@given(forest=forests(), data=st.data())
def test_tree_text_lines_draw_the_layout(forest: tuple[list[Node], list[Node]], data: st.DataObject):
    roots, nodes = forest
    leaf = data.draw(st.sampled_from([n.name for n in nodes] + [None]))
    path = set(data.draw(st.lists(st.sampled_from([n.name for n in nodes]), max_size=10)))
    drawn = list(tree_text_lines(roots, lambda node: (node.name, f"text of {node.name}"), leaf, path))
    assert drawn == _drawn(roots, path, leaf)


def test_a_long_chain_below_branches_keeps_its_prefix():
    chain = [Node(f"c{i}") for i in range(5)]
    for parent, child in pairwise(chain):
        parent.children.append(child)
    side = Node("side")
    root = Node("root", [side, chain[0]])
    drawn = list(tree_text_lines([root], lambda node: (node.name, node.name), "c4", ["root", "c0", "c4"]))
    assert drawn == [
        "* root  (2 branches)",
        "├─   side",
        "└─ * c0",
        "     c1",
        "     c2",
        "     c3",
        "   * c4  ◀ leaf",
    ]


@settings(max_examples=200, deadline=None)
@given(forest=forests(), data=st.data())
def test_a_path_from_a_root_in_the_walk_s_order_marks_what_its_set_marks(
    forest: tuple[list[Node], list[Node]], data: st.DataObject
):
    """A path down from a root, given in the walk's order, is told row by row without a set: the
    rows marked are those a set of its ids marks."""
    roots, nodes = forest
    parent_of = {id(child): node for node in nodes for child in node.children}
    node = data.draw(st.sampled_from(nodes))
    path = [node.name]
    while id(node) in parent_of:
        node = parent_of[id(node)]
        path.insert(0, node.name)
    leaf = path[-1]
    row = lambda node: (node.name, f"text of {node.name}")  # noqa: E731
    drawn = list(tree_text_lines(roots, row, leaf, path, path_in_walk_order=True))
    assert drawn == _drawn(roots, set(path), leaf)


def test_rows_fit_a_width_their_text_given_the_room_the_rest_leaves() -> None:
    """With ``row_width``, each row's text is asked for within what its indentation, mark and
    branch count leave (the leaf's mark is the row's to leave room for: it tells the leaf by its
    id); a row whose indentation and marks alone pass the width is cut whole."""
    deep = Node("d3")
    for name in ("d2", "d1"):
        deep = Node(name, [Node(f"{name}-side"), deep])
    root = Node("root", [Node("side"), deep])
    rooms: dict[str, int] = {}

    def row(node: Node, room: int) -> tuple[str, str]:
        rooms[node.name] = room
        room -= len("  ◀ leaf") if node.name == "d3" else 0
        return node.name, node.name[: max(room, 0)]

    drawn = list(tree_text_lines([root], row, "d3", ["root", "d1", "d2", "d3"], row_width=14))
    assert drawn == [
        "*   (2 branch…",  # (its text given no room: the row cut whole)
        "├─   side",
        "└─ *   (2 bra…",
        "   ├─   d1-sid",  # (its text cut to its room by the row)
        "   └─ *   (2 …",
        "      ├─   d2-",
        "      └─ *   …",
    ]
    assert rooms == {"root": -2, "side": 9, "d1": -5, "d1-side": 6, "d2": -8, "d2-side": 3, "d3": 3}
    assert max(map(len, drawn)) == 14
